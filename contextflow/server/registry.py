"""Which features the server exposes. `CONTEXTFLOW_TOOLS` picks tool groups: a comma list, or `all`."""

from __future__ import annotations

from contextflow.errors import InputError
from contextflow.operations import Feature, features

DEFAULT_GROUPS = ("sessions", "context", "recall")


def groups() -> dict[str, Feature]:
    """Each tool group's feature; features with nothing for MCP clients (CLI-only commands) are not groups."""
    return {f.group: f for f in features() if any(op.tool for op in f.operations) or not f.operations}


def features_for(setting: str) -> list[Feature]:
    known = groups()
    names: dict[str, None] = {}  # in order, once each
    for part in [part.strip() for part in setting.split(",") if part.strip()] or ["default"]:
        for name in DEFAULT_GROUPS if part == "default" else tuple(known) if part == "all" else (part,):
            if name not in known:
                raise InputError(
                    f"CONTEXTFLOW_TOOLS names an unknown group {name!r}; groups are: {', '.join(known)}, default, all"
                )
            names[name] = None
    return [known[name] for name in names]
