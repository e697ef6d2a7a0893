"""Settings read from the environment, with ContextFlowMCP's variable names where it had one.

`VARIABLES` names every variable contextflow reads (a test checks no other is read). `Settings` is
their typed value for one process, resolved once from the environment `App.open` is given: the store,
the search ranking and every adapter read it from there, never from `os.environ` behind its back.
Where a hook must stay cheaper than building it (a hook with nothing to do imports no dataclass), the
light readers below (`secrets_mode`, `fsync_setting`, ...) parse one variable of the same mapping.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from contextflow.core.errors import InputError
from contextflow.core.project import DEFAULT_PROJECT, RULE_DEFAULT, RULE_ENV, clean_name, project_for

# every variable contextflow reads, and what it sets (README's "Settings" documents them for users)
VARIABLES = {
    "CONTEXTFLOW_STORE": "the store folder (the CLI's --store overrides it)",
    "CTX_DB": "seed 003's (ctx's) name for the store, read when CONTEXTFLOW_STORE is not set",
    "CONTEXTFLOW_STORE_FROM_OPTION": "set by the CLI beside CONTEXTFLOW_STORE when --store chose it (for doctor)",
    "CONTEXTFLOW_STATE": "the machine-local state folder",
    "CONTEXTFLOW_WRITER": "this machine's writer id",
    "CONTEXTFLOW_FSYNC": "flush every append to disk (on/off)",
    "CONTEXTFLOW_SECRETS": "what a write holding a secret does: redact, refuse or off",
    "CONTEXTFLOW_RANKING": "search ranking levers turned off or on, and the weight scale",
    "CONTEXTFLOW_TOOLS": "the MCP tool groups offered",
    "CONTEXTFLOW_CAPTURE": "session capture on or off",
    "CONTEXTFLOW_CLIENT": "which client a hook runs for (install writes it)",
    "CONTEXTFLOW_HOOK_BUDGET": "tokens the session-start hook may inject",
    "CONTEXTFLOW_FORMAT": "the output format of hook-level commands (text or json)",
    "CONTEXTFLOW_HTTP_TOKEN": "the HTTP bridge's one token",
    "CONTEXTFLOW_HTTP_TOKENS": "the HTTP bridge's grants, as JSON",
    "CONTEXTFLOW_HTTP_TOKENS_FILE": "the HTTP bridge's grants, in a file",
    "MCP_SHARED_CONTEXT_FILE": "ContextFlowMCP's context file",
    "MCP_SHARED_CONTEXT_FOLDER": "ContextFlowMCP's context folder",
    "MCP_SHARED_CONTEXT_PROJECT": "the default project",
    "MCP_SHARED_CONTEXT_ACTIVE_SESSION": "the active session, fixed",
    "MCP_SHARED_CONTEXT_ACTIVE_SESSION_FILE": "where the active session is kept",
    "MCP_SHARED_CONTEXT_NEW_SESSION_PREFIX": "the prefix of new session ids",
    "MCP_SHARED_CONTEXT_MAX_NOTE_TEXT_CHARS": "the longest note",
    "MCP_SHARED_CONTEXT_MAX_HANDOFF_SUMMARY_CHARS": "the longest handoff summary",
    "MCP_SHARED_CONTEXT_MAX_ARRAY_ITEMS": "the most items of a list argument",
    "MCP_SHARED_CONTEXT_MAX_ARRAY_ITEM_CHARS": "the longest item of a list argument",
    "MCP_SHARED_CONTEXT_MAX_CONTEXT_FILE_BYTES": "the largest ContextFlowMCP file read",
    "MCP_SHARED_CONTEXT_MAX_INBOUND_LINE_BYTES": "the longest stdin line the server reads",
    "MCP_SHARED_CONTEXT_MAX_INPUT_BUFFER_BYTES": "the most stdin the server buffers",
}
SECRETS_VARIABLE = "CONTEXTFLOW_SECRETS"
SECRETS_MODES = ("redact", "refuse", "off")
RANKING_VARIABLE = "CONTEXTFLOW_RANKING"


def secrets_mode(env: Mapping[str, str]) -> str:
    """`CONTEXTFLOW_SECRETS`: redact (default), refuse or off."""
    value = env.get(SECRETS_VARIABLE, "").strip().lower() or "redact"
    if value in ("0", "no", "false", "none"):
        value = "off"
    if value not in SECRETS_MODES:
        raise InputError(f"{SECRETS_VARIABLE}={value!r} is not understood: use redact (default), refuse or off")
    return value


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InputError(f"{name}={raw!r} is not a whole number; set it to a positive integer") from None
    if value < 1:
        raise InputError(f"{name}={raw!r} must be a positive integer")
    return value


@dataclass(frozen=True)
class Settings:
    default_project: str = DEFAULT_PROJECT
    project_rule: str = RULE_DEFAULT  # which rule chose default_project (core.project's RULE_*)
    new_session_prefix: str = "session"
    active_session: str | None = None
    active_session_file: Path | None = None
    max_note_chars: int = 20_000
    max_summary_chars: int = 20_000
    max_array_items: int = 200
    max_array_item_chars: int = 1_000
    tool_groups: str = "default"
    secrets: str = "redact"  # CONTEXTFLOW_SECRETS
    ranking: str = ""  # CONTEXTFLOW_RANKING, as written (search.ranking parses it)
    fsync: bool = False  # CONTEXTFLOW_FSYNC

    @classmethod
    def from_env(
        cls,
        state_dir: Path,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        legacy_active_file: Path | None = None,
    ) -> Settings:
        """`cwd` is the working folder whose repository names the default project (the adapters
        pass it: the server's and the CLI's own folder, a hook's payload `cwd`); without it, and
        without MCP_SHARED_CONTEXT_PROJECT, the project is `shared`. `legacy_active_file`:
        ContextFlowMCP's active-session file when its context file is in use (it then holds the
        active session, as for ContextFlowMCP and its picker)."""
        env = os.environ if env is None else env
        project, rule = default_project(env, cwd)
        active_file = env.get("MCP_SHARED_CONTEXT_ACTIVE_SESSION_FILE", "").strip()
        fallback = legacy_active_file or state_dir / "active-session.txt"
        return cls(
            default_project=project,
            project_rule=rule,
            new_session_prefix=env.get("MCP_SHARED_CONTEXT_NEW_SESSION_PREFIX", "").strip() or "session",
            active_session=env.get("MCP_SHARED_CONTEXT_ACTIVE_SESSION", "").strip() or None,
            active_session_file=(Path(os.path.expanduser(active_file)).absolute() if active_file else fallback),
            max_note_chars=_int(env, "MCP_SHARED_CONTEXT_MAX_NOTE_TEXT_CHARS", 20_000),
            max_summary_chars=_int(env, "MCP_SHARED_CONTEXT_MAX_HANDOFF_SUMMARY_CHARS", 20_000),
            max_array_items=_int(env, "MCP_SHARED_CONTEXT_MAX_ARRAY_ITEMS", 200),
            max_array_item_chars=_int(env, "MCP_SHARED_CONTEXT_MAX_ARRAY_ITEM_CHARS", 1_000),
            tool_groups=env.get("CONTEXTFLOW_TOOLS", "").strip() or "default",
            secrets=secrets_mode(env),
            ranking=env.get(RANKING_VARIABLE, ""),
            fsync=fsync_setting(env),
        )


_resolved: list[Settings] = []


def adopt(settings: Settings) -> None:
    """The settings of this process from now on (`App.open` resolves them from the environment it is given)."""
    _resolved[:] = [settings]


def resolved() -> Settings | None:
    """The settings this process resolved, if it opened an App."""
    return _resolved[0] if _resolved else None


def default_project(env: Mapping[str, str], cwd: str | os.PathLike[str] | None) -> tuple[str, str]:
    """(project, rule): MCP_SHARED_CONTEXT_PROJECT, else the repository of `cwd`, else `shared`."""
    raw = env.get("MCP_SHARED_CONTEXT_PROJECT", "").strip()
    if raw:
        named = clean_name(raw)
        if named is None:
            raise InputError(
                f"MCP_SHARED_CONTEXT_PROJECT holds a control character or is over 200 characters: {raw[:60]!r}; "
                "set it to a plain name such as owner/repo"
            )
        return named, RULE_ENV
    if cwd is None:
        return DEFAULT_PROJECT, RULE_DEFAULT
    return project_for(cwd)


def fsync_setting(env: Mapping[str, str]) -> bool:
    """`CONTEXTFLOW_FSYNC`: whether every append is flushed to disk (default off)."""
    from contextflow.core.checks import flag

    value = env.get("CONTEXTFLOW_FSYNC", "off").strip().lower()
    if (chosen := flag(value)) is not None:
        return chosen
    raise InputError(f"CONTEXTFLOW_FSYNC={value!r} is not understood: use 'on' or 'off'")
