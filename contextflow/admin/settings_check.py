"""`doctor`'s check of every setting it reads: a value the server, hooks or capture would refuse, ignore
or read differently in another folder is a problem named with the way to set it right.

Settings the store needs to open at all (`CONTEXTFLOW_FSYNC`, the size caps, ...) already stop
`doctor` with a one-line error; these are the ones that would otherwise pass here and break later.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from contextflow.core.checks import flag
from contextflow.core.errors import InputError
from contextflow.core.settings import Settings

PATH_SETTINGS = (
    "CONTEXTFLOW_STORE",
    "CTX_DB",
    "CONTEXTFLOW_STATE",
    "MCP_SHARED_CONTEXT_FILE",
    "MCP_SHARED_CONTEXT_FOLDER",
    "MCP_SHARED_CONTEXT_ACTIVE_SESSION_FILE",
)


def settings_findings(env: Mapping[str, str], settings: Settings | None = None) -> list[str]:
    """`env`: the environment the App was opened with; `settings`: its typed Settings (the tool
    groups are checked as they were resolved there)."""
    found: list[str] = []
    for name in PATH_SETTINGS:
        value = env.get(name, "").strip()
        if value and not value.startswith("~") and not os.path.isabs(value):
            found.append(
                f"{name}={value!r} is a relative path: every folder a client starts in would get its own; "
                f"set it to an absolute path, e.g. {os.path.abspath(value)}"
            )
    found += _tools(settings.tool_groups if settings is not None else env.get("CONTEXTFLOW_TOOLS", ""))
    found += _hook_budget(env.get("CONTEXTFLOW_HOOK_BUDGET", "").strip())
    capture = env.get("CONTEXTFLOW_CAPTURE", "").strip()
    if capture and flag(capture) is None:
        found.append(
            f"CONTEXTFLOW_CAPTURE={capture!r} is not understood (capture stays on): use off to turn capture "
            "off, on (or unset) to keep it"
        )
    return found


def _tools(value: str) -> list[str]:
    if not value.strip():
        return []
    from contextflow.adapters.server.registry import tables_for

    try:
        tables_for(value)
    except InputError as exc:
        return [f"{exc}: `contextflow serve` refuses to start with it (exit 2)"]
    return []


def _hook_budget(value: str) -> list[str]:
    if not value:
        return []
    from contextflow.adapters.hooks import DEFAULT_BUDGET, MAX_BUDGET, hook_budget

    if hook_budget({"CONTEXTFLOW_HOOK_BUDGET": value}) != DEFAULT_BUDGET or value == str(DEFAULT_BUDGET):
        return []
    return [
        f"CONTEXTFLOW_HOOK_BUDGET={value!r} is not a whole number of tokens from 200 to {MAX_BUDGET}, so the "
        f"session-start hook ignores it and uses {DEFAULT_BUDGET}; set it to e.g. 2250"
    ]
