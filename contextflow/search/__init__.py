"""Ranked search over everything stored: tokenizer (tokens.py), incremental BM25 index (index.py),
what each event kind adds to it (extractors.py) and each event's index operations (view.py)."""

from contextflow.features import Feature

FEATURE = Feature(
    "search",
    group="recall",
    table="contextflow.search.operations",
    projections={"search-index": "contextflow.search.derived:PROJECTION"},
)
