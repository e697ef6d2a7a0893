"""Structured conversation records, saved whole, with their transcripts kept apart as blobs."""

from contextflow.features import Feature

FEATURE = Feature(
    "conversations",
    group="recall",
    table="contextflow.conversations.operations",
    projections={"conversations-state": "contextflow.conversations.projection:PROJECTION"},
    fields="contextflow.conversations.fields",
    extractors="contextflow.conversations.extract",
    search_version=(1, "f1475b265ada296fb596"),
    commands={"conversations": "saved conversation records"},
)
