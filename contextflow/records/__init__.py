"""Keyed context records and orientation (whereami, wherewasi, remember)."""

from contextflow.features import Feature

FEATURE = Feature(
    "records",
    group="context",
    table="contextflow.records.operations",
    projections={"records-state": "contextflow.records.projection:PROJECTION"},
    fields="contextflow.records.fields",
    extractors="contextflow.records.extract",
    search_version=(1, "cc61f5ff523d2a62678f"),
    commands={"context": "keyed context records"},
)
