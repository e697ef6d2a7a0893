"""Ranked search over everything stored: tokenizer, incremental BM25 index, extractors, ranking."""

from contextflow.search.extractors import EXTRACTORS, search_kinds
from contextflow.search.index import Delete, Doc, Hit, Patch, Put, SearchIndex
from contextflow.search.rank import Query, rank, recency
from contextflow.search.view import VIEW_NAME, SearchView

__all__ = [
    "EXTRACTORS",
    "VIEW_NAME",
    "Delete",
    "Doc",
    "Hit",
    "Patch",
    "Put",
    "Query",
    "SearchIndex",
    "SearchView",
    "rank",
    "recency",
    "search_kinds",
]
