"""The features contextflow is made of, each named once (`PACKAGES`), each declaring itself once.

A feature package's `__init__.py` holds its `FEATURE = Feature(...)`: plain names only (module
paths), so reading every declaration imports nothing heavy and a hook pays for none of it. Hanging
off it, imported when first asked for:
- `table`: its operations table module (`TABLE`: operations, prompts, resources), from which the
  adapters build the MCP server and the CLI (`operations/spec.py` assembles them: `table_of`, `operations`);
- `fields`: the module whose `FIELDS` gives the shape of every field of its event kinds;
- `extractors`: the module whose `EXTRACTORS` says what its kinds add to the search index
  (`search/extractors.py` gathers them), and
  `search_version`: what its kinds put in the index, (version, digest of that module's own code): raise
  the version when what goes in changes (the index is rebuilt); tests/test_formats.py checks the digest;
- `commands`: help for the CLI command words that group several of its commands;
- `projections`: its derived tables on disk, `name: "module:PROJECTION"` (core/tables.py `Projection`s, each
  with its own format version, and what compaction may drop: `Projection.unneeded`);
- `unneeded`: for derived state kept outside the projections (the search index), what compaction may drop,
  `name: "module:function"` (core/scan.py `Unneeded`).

`App.open` hands the store `all_fields()`, and compaction `all_unneeded()`; the core imports none of this.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contextflow.core.fields import Schema
    from contextflow.core.scan import Unneeded
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
        "projections",
        "search_version",
        "table_module",
        "unneeded",
    )

    def __init__(
        self,
        name: str,
        *,
        group: str | None = None,
        table: str | None = None,
        fields: str | None = None,
        extractors: str | None = None,
        search_version: tuple[int, str] = (0, ""),
        commands: Mapping[str, str] | None = None,
        projections: Mapping[str, str] | None = None,
        unneeded: Mapping[str, str] | None = None,
    ) -> None:
        self.name, self.group, self.table_module = name, group, table
        self.fields, self.extractors, self.search_version = fields, extractors, search_version
        self.commands = dict(commands or {})
        self.projections = dict(projections or {})
        self.unneeded = dict(unneeded or {})

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
def all_fields() -> Schema:
    from contextflow.core.fields import merged

    return merged(*(importlib.import_module(f.fields).FIELDS for f in features() if f.fields))


@cache
def all_projections() -> tuple[Projection, ...]:
    """Every derived projection (imported when a process first reads one)."""
    paths = [path for feature in features() for path in feature.projections.values()]
    return tuple(target(path) for path in paths)


def all_unneeded() -> dict[str, Unneeded | None]:
    """What each projection and each other derived state can do without, by name (None: it cannot tell,
    and compaction keeps everything): what `contextflow compact` asks."""
    found: dict[str, Unneeded | None] = {p.name: p.unneeded for p in all_projections()}
    for feature in features():
        found.update((name, target(path)) for name, path in feature.unneeded.items())
    return found
