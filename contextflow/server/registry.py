"""Which features the server exposes. `CONTEXTFLOW_TOOLS` picks tool groups: a comma list, or `all`."""

from __future__ import annotations

from contextflow.errors import InputError
from contextflow.server import conversation_tools, graph_tools, memory_tools, sessions_tools
from contextflow.server.tooling import Feature

GROUPS: dict[str, Feature] = {
    "sessions": sessions_tools.FEATURE,
    "context": memory_tools.CONTEXT_FEATURE,
    "timeline": memory_tools.TIMELINE_FEATURE,
    "recall": conversation_tools.FEATURE,
    "graph": graph_tools.FEATURE,
}
DEFAULT_GROUPS = ("sessions", "context", "recall")


def features_for(setting: str) -> list[Feature]:
    wanted = [part.strip() for part in setting.split(",") if part.strip()] or ["default"]
    names: list[str] = []
    for part in wanted:
        expanded = DEFAULT_GROUPS if part == "default" else tuple(GROUPS) if part == "all" else (part,)
        for name in expanded:
            if name not in GROUPS:
                raise InputError(
                    f"CONTEXTFLOW_TOOLS names an unknown group {name!r}; groups are: {', '.join(GROUPS)}, default, all"
                )
            if name not in names:
                names.append(name)
    return [GROUPS[name] for name in names]
