"""Extractors: what each kind of event adds to, changes in or removes from the search index.

An extractor is a pure function of one event returning index operations (`Put`, `Patch`,
`Delete`). Each feature that makes its kinds searchable names its extractors module in its
declaration (`Feature.extractors`); that module's `EXTRACTORS` maps an event kind to (search kind,
extractor), and `extractors()` here gathers them. The search kind is what `--kind`
and `kinds=[...]` filter on. Most kinds are built by `put`, `patch` and `delete` here from the event
fields they read.

Extractors read stored data written by any version on any machine, so they accept missing
or odd fields quietly (`text_of`, `texts_of`) instead of failing.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any

from contextflow.core.events import Event
from contextflow.core.project import project_of
from contextflow.search.docs import Delete, Op, Patch, Put

Extractor = Callable[[Event], list[Op]]
Extractors = dict[str, tuple[str, Extractor]]  # event kind -> (search kind, extractor)


def text_of(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def list_of(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def texts_of(value: Any) -> list[str]:
    items = [value] if isinstance(value, str) else list_of(value)
    return [item.strip() for item in items if isinstance(item, str) and item.strip()]


def lines(items: Iterable[str]) -> str:
    return "\n".join(items)


def nonempty(**named: str) -> dict[str, str]:
    return {name: text for name, text in named.items() if text}


def status_meta(data: dict[str, Any], *names: str) -> dict[str, Any]:
    return {name: data[name] for name in names if isinstance(data.get(name), str) and data[name]}


def put(
    texts: dict[str, str], lists: tuple[str, ...] = (), meta: tuple[str, ...] = ("agent",), status: tuple[str, ...] = ()
) -> Extractor:
    """The event's own document: index fields from event fields (`texts`: field -> key; `lists`: list
    fields of the same name, one item a line), `meta` fields as text (`project` defaults to `shared`)
    and `status` fields when set."""

    def extract(event: Event) -> list[Op]:
        data = event.data
        fields = {name: text_of(data.get(key)) for name, key in texts.items()}
        fields.update((name, lines(texts_of(data.get(name)))) for name in lists)
        found = {name: project_of(event) if name == "project" else text_of(data.get(name)) for name in meta}
        return [Put(event.id, nonempty(**fields), {**found, **status_meta(data, *status)})]

    return extract


def patch(ref: str, texts: dict[str, str], status: tuple[str, ...]) -> Extractor:
    """An update of the document the event field `ref` names: the fields the event carries, and `status`."""

    def extract(event: Event) -> list[Op]:
        data = event.data
        target = text_of(data.get(ref))
        fields = {name: text_of(data[key]) for name, key in texts.items() if key in data}
        return [Patch(target, fields, status_meta(data, *status))] if target else []

    return extract


def delete(ref: str) -> Extractor:
    def extract(event: Event) -> list[Op]:
        target = text_of(event.data.get(ref))
        return [Delete(target)] if target else []

    return extract


MAX_VALUE_LINES = 200


def flatten(value: Any, prefix: str = "", out: list[str] | None = None) -> list[str]:
    """`value` as `path.to.field: value` lines, at most MAX_VALUE_LINES."""
    out = [] if out is None else out
    if len(out) >= MAX_VALUE_LINES:
        return out
    if isinstance(value, dict):
        for name, item in value.items():
            flatten(item, f"{prefix}.{name}" if prefix else str(name), out)
    elif isinstance(value, list):
        for item in value:
            flatten(item, prefix, out)
    elif value is not None and not isinstance(value, bool):
        out.append(f"{prefix}: {value}" if prefix else str(value))
    return out


@cache
def extractors() -> Extractors:
    """What each event kind adds to the search index, from every feature's declaration."""
    from contextflow.features import features

    found: Extractors = {}
    for feature in features():
        if feature.extractors:
            found.update(importlib.import_module(feature.extractors).EXTRACTORS)
    return found


def search_kinds() -> tuple[str, ...]:
    """The kinds `get_context(kinds=...)` and `contextflow search --kind` accept."""
    return tuple(sorted({kind for kind, _ in extractors().values()}))
