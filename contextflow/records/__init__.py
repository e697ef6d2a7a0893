"""Keyed context records and orientation (whereami, wherewasi, remember)."""

from contextflow.features import Feature

FEATURE = Feature(
    "records",
    group="context",
    table="contextflow.records.operations",
    views={"records": "contextflow.records.view:RecordsView"},
    tables={"records-state": "contextflow.records.table:TABLES"},
    fields="contextflow.records.fields",
    extractors="contextflow.records.extract",
    search_version=(1, "3c1bd5903e198d847f31"),
    commands={"context": "keyed context records"},
)
