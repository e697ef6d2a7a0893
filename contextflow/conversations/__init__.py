"""Structured conversation records, saved whole, with their transcripts kept apart as blobs."""

from contextflow.features import Feature

FEATURE = Feature(
    "conversations",
    group="recall",
    table="contextflow.conversations.operations",
    projections={"conversations-state": "contextflow.conversations.projection:PROJECTION"},
    fields="contextflow.conversations.fields",
    extractors="contextflow.conversations.extract",
    search_version=(1, "c9e4376d3f7a57715e20"),
    commands={"conversations": "saved conversation records"},
)
