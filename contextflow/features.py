"""The features contextflow is made of, each named once (`PACKAGES`), each declaring itself once.

A feature package's `__init__.py` holds its `FEATURE = Feature(...)`: plain names only (module
paths), so reading every declaration imports nothing heavy and a hook pays for none of it. Hanging
off it, imported when first asked for:
- `table`: its operations table module (`TABLE`: operations, prompts, resources), from which the
  adapters build the MCP server and the CLI (`operations/spec.py` assembles them: `table_of`, `operations`);
- `views`: its views, `name: "module:Class"` (the name is the class's `name`), folded by the store;
- `fields`: the module whose `FIELDS` gives the shape of every field of its event kinds;
- `extractors`: the module whose `EXTRACTORS` says what its kinds add to the search index
  (`search/extractors.py` gathers them), and
  `search_version`: what its kinds put in the index, (version, digest of that module's own code): raise
  the version when what goes in changes (the index is rebuilt); tests/test_formats.py checks the digest;
- `on_close`: close-time work, `view name: "module:function"`, called with the store when the
  process closes it, and only when that view was loaded (nothing is loaded just to close);
- `commands`: help for the CLI command words that group several of its commands;
- `projections`: its derived tables on disk, `name: "module:PROJECTION"` (core/tables.py `Projection`s, each
  with its own format version).

`App.open` hands the store `folded_views()` and `all_fields()`; the core imports none of this.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contextflow.core.fields import Schema
    from contextflow.core.fold import View
    from contextflow.core.store import Store
    from contextflow.core.tables import Projection

# every feature, in the order the CLI's help and the tool list show them
PACKAGES = (
    "sessions",
    "capture",
    "records",
    "timeline",
    "search",
    "conversations",
    "graph",
    "imports",
    "admin",
    "feed",
)


class Feature:
    """One feature's declaration (see the module docstring); `group` is the MCP tool group
    `CONTEXTFLOW_TOOLS` turns on (None: it offers no tools of its own)."""

    __slots__ = (
        "commands",
        "extractors",
        "fields",
        "group",
        "name",
        "on_close",
        "projections",
        "search_version",
        "table_module",
        "views",
    )

    def __init__(
        self,
        name: str,
        *,
        group: str | None = None,
        table: str | None = None,
        views: Mapping[str, str] | None = None,
        fields: str | None = None,
        extractors: str | None = None,
        search_version: tuple[int, str] = (0, ""),
        on_close: Mapping[str, str] | None = None,
        commands: Mapping[str, str] | None = None,
        projections: Mapping[str, str] | None = None,
    ) -> None:
        self.name, self.group, self.table_module = name, group, table
        self.views = dict(views or {})
        self.fields, self.extractors, self.search_version = fields, extractors, search_version
        self.on_close = dict(on_close or {})
        self.commands = dict(commands or {})
        self.projections = dict(projections or {})

    def __repr__(self) -> str:
        return f"Feature({self.name!r})"


def target(path: str) -> Any:
    """The function `"module:function"` names, its module imported now."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


@cache
def features() -> tuple[Feature, ...]:
    found = []
    for package in PACKAGES:
        feature = importlib.import_module(f"contextflow.{package}").FEATURE
        assert isinstance(feature, Feature) and feature.name == package, package
        found.append(feature)
    return tuple(found)


@cache
def view_paths() -> dict[str, str]:
    """Every view's `"module:Class"`, by view name."""
    return {name: path for feature in features() for name, path in feature.views.items()}


def all_views() -> list[View]:
    from contextflow.core.fold import LazyView

    return [LazyView(name, path) for name, path in view_paths().items()]


@cache
def all_fields() -> Schema:
    from contextflow.core.fields import merged

    return merged(*(importlib.import_module(f.fields).FIELDS for f in features() if f.fields))


def close(store: Store) -> None:
    """Each feature's close-time work whose view this process loaded (`Feature.on_close`)."""
    for feature in features():
        for view, path in feature.on_close.items():
            if store.view_loaded(view):
                run: Callable[[Store], None] = target(path)
                run(store)


def folded_views() -> list[View]:
    """The views a store folds in memory: every view but `search`, which the shared on-disk index
    (`contextflow.search.derived`) serves."""
    return [view for view in all_views() if view.name != "search"]


@cache
def all_projections() -> tuple[Projection, ...]:
    """Every derived projection (imported when a process first reads one)."""
    paths = [path for feature in features() for path in feature.projections.values()]
    return tuple(target(path) for path in paths)
