"""Keyed context records and orientation (whereami, wherewasi, remember)."""

from contextflow.features import Feature

FEATURE = Feature(
    "records",
    group="context",
    table="contextflow.records.operations",
    views={"records": "contextflow.records.view:RecordsView"},
    fields="contextflow.records.fields",
    extractors="contextflow.records.extract",
    search_version=(1, "040e60dd5f52e6e57d5b"),
    commands={"context": "keyed context records"},
)
