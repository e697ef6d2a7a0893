"""Timeline threads: thoughts, tangents and "you are here" positions."""

from contextflow.features import Feature

FEATURE = Feature(
    "timeline",
    group="timeline",
    table="contextflow.timeline.operations",
    views={"timeline": "contextflow.timeline.view:TimelineView"},
    fields="contextflow.timeline.fields",
    extractors="contextflow.timeline.extract",
    search_version=(1, "f5c9af7d796a466eaad6"),
    commands={"timeline": "threads, thoughts, tangents"},
    tables={"timeline": "contextflow.timeline.table:TABLES"},
)
