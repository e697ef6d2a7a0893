"""Keyed context records and orientation (whereami, wherewasi, remember)."""

from contextflow.features import Feature

FEATURE = Feature(
    "records",
    group="context",
    table="contextflow.records.operations",
    projections={"records-state": "contextflow.records.projection:PROJECTION"},
    fields="contextflow.records.fields",
    extractors="contextflow.records.extract",
    search_version=(1, "ab6d66c5b29b7920e9be"),
    commands={"context": "keyed context records"},
)
