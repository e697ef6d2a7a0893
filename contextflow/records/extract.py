"""What a keyed context record adds to the search index (contextflow.search.extractors)."""

from __future__ import annotations

from contextflow.core.events import Event
from contextflow.core.timeutil import iso_ms
from contextflow.records.view import DELETE_KIND, SET_KIND
from contextflow.search.docs import Op, Put
from contextflow.search.extractors import Extractors, delete, flatten, lines, nonempty, text_of


def context_set_docs(event: Event) -> list[Op]:
    data = event.data
    key = text_of(data.get("key"))
    if not key:
        return []
    value = lines(flatten(data.get("value")))
    fields = nonempty(title=text_of(data.get("label")), key=key, value=value, tags=text_of(data.get("category")))
    return [Put(key, fields, {"agent": text_of(data.get("agent")), "expires_ms": iso_ms(data.get("expires_at"))})]


EXTRACTORS: Extractors = {SET_KIND: ("context", context_set_docs), DELETE_KIND: ("context", delete("key"))}
