"""Which features the server exposes. `CONTEXTFLOW_TOOLS` picks tool groups: a comma list, or `all`."""

from __future__ import annotations

from collections.abc import Collection

from contextflow.core.errors import InputError
from contextflow.features import features
from contextflow.operations.spec import Table, table_of

DEFAULT_GROUPS = ("sessions", "context", "recall")


def groups(only: Collection[str] | None = None) -> dict[str, list[Table]]:
    """Each tool group's tables (search and conversations share `recall`); features with nothing for MCP
    clients (CLI-only commands) are not groups. `only`: just these groups, so a server that lists the
    default ones never imports the other features' tables."""
    found: dict[str, list[Table]] = {}
    for feature in features():
        if feature.group is None or (only is not None and feature.group not in only):
            continue
        table = table_of(feature)
        if table is not None and any(op.tool for op in table.operations):
            found.setdefault(feature.group, []).append(table)
    return found


def tables_for(setting: str) -> list[Table]:
    parts = [part.strip() for part in setting.split(",") if part.strip()] or ["default"]
    wanted = {name for part in parts for name in (DEFAULT_GROUPS if part == "default" else (part,))}
    known = groups(None if "all" in parts else wanted)
    names: dict[str, None] = {}  # in order, once each
    for part in parts:
        for name in DEFAULT_GROUPS if part == "default" else tuple(known) if part == "all" else (part,):
            if name not in known:
                every = ", ".join(groups())
                raise InputError(
                    f"CONTEXTFLOW_TOOLS names an unknown group {name!r}; groups are: {every}, default, all"
                )
            names[name] = None
    return [table for name in names for table in known[name]]
