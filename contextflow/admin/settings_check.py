"""`doctor`'s check of every setting it reads: a value the server, hooks or capture would refuse, ignore
or read differently in another folder is a problem named with the way to set it right.

Settings the store needs to open at all (`CONTEXTFLOW_FSYNC`, the size caps, ...) already stop
`doctor` with a one-line error; these are the ones that would otherwise pass here and break later.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from contextflow.core.errors import InputError
from contextflow.core.settings import LENIENT, Settings, read


def settings_findings(env: Mapping[str, str], settings: Settings | None = None) -> list[str]:
    """`env`: the environment the App was opened with; `settings`: its typed Settings (else those of `env`)."""
    chosen = settings or read(env)
    written = {
        "CONTEXTFLOW_STORE": chosen.store,
        "CTX_DB": chosen.ctx_db,
        "CONTEXTFLOW_STATE": chosen.state,
        "MCP_SHARED_CONTEXT_FILE": chosen.legacy_file,
        "MCP_SHARED_CONTEXT_FOLDER": chosen.legacy_folder,
        "MCP_SHARED_CONTEXT_ACTIVE_SESSION_FILE": chosen.active_session_path,
    }
    found: list[str] = []
    for name, raw in written.items():
        value = (raw or "").strip()
        if value and not value.startswith("~") and not os.path.isabs(value):
            found.append(
                f"{name}={value!r} is a relative path: every folder a client starts in would get its own; "
                f"set it to an absolute path, e.g. {os.path.abspath(value)}"
            )
    found += _tools(chosen.tool_groups)
    found += [message for name, message in chosen.problems if name in LENIENT]  # what hooks and capture ignore
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
