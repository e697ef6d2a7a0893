"""Ranked search over everything stored: tokenizer, incremental BM25 index, extractors."""

from contextflow.search.extractors import EXTRACTORS, search_kinds
from contextflow.search.index import Delete, Doc, Hit, Patch, Put, SearchIndex
from contextflow.search.view import VIEW_NAME, SearchView

__all__ = [
    "EXTRACTORS",
    "VIEW_NAME",
    "Delete",
    "Doc",
    "Hit",
    "Patch",
    "Put",
    "SearchIndex",
    "SearchView",
    "search_kinds",
]
