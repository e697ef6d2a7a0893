"""Timeline threads: thoughts, tangents and "you are here" positions."""

from contextflow.features import Feature

FEATURE = Feature(
    "timeline",
    group="timeline",
    table="contextflow.timeline.operations",
    views={"timeline": "contextflow.timeline.view:TimelineView"},
    fields="contextflow.timeline.fields",
    extractors="contextflow.timeline.extract",
    search_version=(1, "8deb280e2063fb91798b"),
    commands={"timeline": "threads, thoughts, tangents"},
)
