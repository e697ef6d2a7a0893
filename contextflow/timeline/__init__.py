"""Timeline threads: thoughts, tangents and "you are here" positions."""

from contextflow.features import Feature

FEATURE = Feature(
    "timeline",
    group="timeline",
    table="contextflow.timeline.operations",
    fields="contextflow.timeline.fields",
    extractors="contextflow.timeline.extract",
    search_version=(1, "121ece9b5fb8ed17b51a"),
    commands={"timeline": "threads, thoughts, tangents"},
    projections={"timeline": "contextflow.timeline.projection:PROJECTION"},
)
