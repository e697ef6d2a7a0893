"""Which features the server exposes. `CONTEXTFLOW_TOOLS` picks tool groups: a comma list, or `all`."""

from __future__ import annotations

from contextflow.core.errors import InputError
from contextflow.features import features
from contextflow.operations.spec import Table

DEFAULT_GROUPS = ("sessions", "context", "recall")


def groups() -> dict[str, list[Table]]:
    """Each tool group's tables (search and conversations share `recall`); features with nothing for MCP
    clients (CLI-only commands) are not groups."""
    found: dict[str, list[Table]] = {}
    for feature in features():
        table = feature.table
        if feature.group is not None and table is not None and any(op.tool for op in table.operations):
            found.setdefault(feature.group, []).append(table)
    return found


def tables_for(setting: str) -> list[Table]:
    known = groups()
    names: dict[str, None] = {}  # in order, once each
    for part in [part.strip() for part in setting.split(",") if part.strip()] or ["default"]:
        for name in DEFAULT_GROUPS if part == "default" else tuple(known) if part == "all" else (part,):
            if name not in known:
                raise InputError(
                    f"CONTEXTFLOW_TOOLS names an unknown group {name!r}; groups are: {', '.join(known)}, default, all"
                )
            names[name] = None
    return [table for name in names for table in known[name]]
