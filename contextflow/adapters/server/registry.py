"""Which features the server exposes. `CONTEXTFLOW_TOOLS` picks tool groups: a comma list, or `all`."""

from __future__ import annotations

from contextflow.core.errors import InputError
from contextflow.features import features
from contextflow.operations import Feature

DEFAULT_GROUPS = ("sessions", "context", "recall")


def groups() -> dict[str, list[Feature]]:
    """Each tool group's features (search and conversations share `recall`); features with nothing for MCP
    clients (CLI-only commands) are not groups."""
    found: dict[str, list[Feature]] = {}
    for feature in features():
        if any(op.tool for op in feature.operations) or not feature.operations:
            found.setdefault(feature.group, []).append(feature)
    return found


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
    return [feature for name in names for feature in known[name]]
