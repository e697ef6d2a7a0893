"""Ranked search over everything stored: tokenizer (tokens.py), incremental BM25 index (index.py),
what each event kind adds to it (extractors.py) and the view that folds events into it (view.py)."""

from contextflow.features import Feature

FEATURE = Feature(
    "search",
    group="recall",
    table="contextflow.search.operations",
    views={"search": "contextflow.search.view:SearchView"},
)
