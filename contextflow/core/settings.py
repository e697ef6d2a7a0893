"""Settings read from the environment, with ContextFlowMCP's variable names where it had one."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from contextflow.core.errors import InputError
from contextflow.core.project import DEFAULT_PROJECT, RULE_DEFAULT, RULE_ENV, clean_name, project_for


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
        )


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
