"""Timeline threads: thoughts, tangents and "you are here" positions."""

from contextflow.features import Feature

FEATURE = Feature(
    "timeline",
    group="timeline",
    table="contextflow.timeline.operations",
    views={"timeline": "contextflow.timeline.view:TimelineView"},
    fields="contextflow.timeline.fields",
    extractors="contextflow.timeline.extract",
    commands={"timeline": "threads, thoughts, tangents"},
)
