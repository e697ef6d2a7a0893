"""Structured conversation records, saved whole, with their transcripts kept apart as blobs."""

from contextflow.features import Feature

FEATURE = Feature(
    "conversations",
    group="recall",
    table="contextflow.conversations.operations",
    views={"conversations": "contextflow.conversations.view:ConversationsView"},
    fields="contextflow.conversations.fields",
    extractors="contextflow.conversations.extract",
    search_version=(1, "29be9f37a7926331e6c5"),
    commands={"conversations": "saved conversation records"},
)
