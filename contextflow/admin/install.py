"""`contextflow install CLIENT`: add contextflow to an MCP client's configuration (the config
writers; `clients.plan_install` chooses them per client and applies them).

Merges the `contextflow` MCP server entry into the client's config file (user scope, or
the project with `project=True`), keeping every other setting; adds the hooks where the
client has them (Claude Code, Codex, Gemini CLI) and, for Claude Code, the skill file.
The server entry and every hook command carry the same store settings (`store_settings`),
so the server and the hooks always use one store. Running it again changes nothing. Each
change is shown as a unified diff; `dry_run` only shows them.

    client       user scope (HOME)                        project scope (current folder)
    claude-code  .claude.json (server),                   .mcp.json,
                 .claude/settings.json (hooks),           .claude/settings.json,
                 .claude/skills/contextflow/SKILL.md      .claude/skills/contextflow/SKILL.md
    codex        .codex/config.toml (server),             .codex/config.toml,
                 .codex/hooks.json (hooks)                .codex/hooks.json
    gemini       .gemini/settings.json (server, hooks)    .gemini/settings.json
    cursor       .cursor/mcp.json                         .cursor/mcp.json
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
import shutil
import sys
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from contextflow.core import legacy
from contextflow.core.errors import InputError
from contextflow.core.locate import locate_store
from contextflow.core.settings import read

SERVER_NAME = "contextflow"
HOOKS = (
    ("SessionStart", "session-start"),
    ("UserPromptSubmit", "prompt-submit"),
    ("Stop", "stop"),
    ("SessionEnd", "session-end"),
    ("PreCompact", "pre-compact"),
)
GEMINI_HOOKS = (
    ("SessionStart", "session-start"),
    ("BeforeAgent", "prompt-submit"),
    ("AfterAgent", "stop"),
    ("SessionEnd", "session-end"),
)
HOOK_TIMEOUT = 30  # seconds (Claude Code, Codex)
GEMINI_HOOK_TIMEOUT = 30_000  # Gemini CLI counts milliseconds
STORE_VARIABLES = ("CONTEXTFLOW_STORE", "MCP_SHARED_CONTEXT_FILE", "MCP_SHARED_CONTEXT_FOLDER")
AFTER_INSTALL = {
    "codex": "Codex runs new hooks only after you review and trust them once: open `codex` and run /hooks.",
}
# what install owns in a server's env: set as in the shell at install time, dropped when unset
OWNED_VARIABLES = (*STORE_VARIABLES, "CONTEXTFLOW_STATE", "CONTEXTFLOW_WRITER")


@dataclass(frozen=True)
class Change:
    path: Path
    before: str | None  # None: the file does not exist yet
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        lines = difflib.unified_diff(
            (self.before or "").splitlines(keepends=True),
            self.after.splitlines(keepends=True),
            fromfile=str(self.path) if self.before is not None else "/dev/null",
            tofile=str(self.path),
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def server_command() -> list[str]:
    """How a client should start this contextflow: its script if on PATH, else this Python."""
    found = shutil.which("contextflow")
    return [found] if found else [sys.executable, "-m", "contextflow"]


def store_settings(env: Mapping[str, str] | None = None, entry_env: Any = None) -> dict[str, str]:
    """The environment every server entry and hook command gets: the store as resolved now
    (an absolute path), and `CONTEXTFLOW_STATE`/`CONTEXTFLOW_WRITER` when they are set.

    When `env` names no store (the default one would be chosen) and the client's existing
    server entry does (`entry_env`, as `claude mcp add -e` leaves it), that entry's settings
    are kept, with `CONTEXTFLOW_STATE`/`CONTEXTFLOW_WRITER` from `env` where set there: the
    user's explicit store is never silently replaced by the default one."""
    env = os.environ if env is None else env
    where = locate_store(env)
    named = _named_store(entry_env)
    if where.rule == "default" and named:
        return {**store_settings(named), **{k: v for k, v in store_settings(env).items() if k not in STORE_VARIABLES}}
    if where.rule in ("MCP_SHARED_CONTEXT_FILE", "client-config") and where.legacy_files:
        settings = {"MCP_SHARED_CONTEXT_FILE": str(where.legacy_files[0])}
    elif where.rule == "MCP_SHARED_CONTEXT_FOLDER":
        settings = {"MCP_SHARED_CONTEXT_FOLDER": str(where.legacy_files[0].parent)}
    else:
        settings = {"CONTEXTFLOW_STORE": str(where.folder)}
        if where.rule in ("legacy-file", "default") and legacy.files(where.legacy_files):
            settings["MCP_SHARED_CONTEXT_FILE"] = str(where.legacy_files[0])  # the ContextFlowMCP file found now
    chosen = read(env)
    if chosen.state:
        settings["CONTEXTFLOW_STATE"] = os.path.abspath(os.path.expanduser(chosen.state.strip()))
    if chosen.writer:
        settings["CONTEXTFLOW_WRITER"] = chosen.writer
    return settings


def _named_store(entry_env: Any) -> dict[str, str]:
    """The settings install owns in a server entry's env, when they name a store; else {}."""
    if not isinstance(entry_env, dict):
        return {}
    owned = {k: v for k, v in entry_env.items() if k in OWNED_VARIABLES and isinstance(v, str) and v.strip()}
    return owned if any(k in owned for k in STORE_VARIABLES) else {}


def load_config(path: Path) -> Any:
    """A client config's data: Codex TOML, else JSON (raises OSError or ValueError when unreadable)."""
    text = path.read_text(encoding="utf-8")
    return tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)


def existing_entry_env(path: Path) -> Any:
    """The `env` of the contextflow server entry in a client config, or None when there is none
    or the file cannot be read (planning reports a broken file)."""
    try:
        servers = load_config(path)["mcp_servers" if path.suffix == ".toml" else "mcpServers"]
        return servers[SERVER_NAME].get("env")
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
        return None


CLIENT_VARIABLE = "CONTEXTFLOW_CLIENT"  # in each hook command: who wrote what the Stop hook carries out
HOOK_CLIENTS = {"gemini": "gemini-cli"}  # the agent name a client's hooks write under, when not its install name


def hook_command(command: list[str], sub: str, settings: Mapping[str, str]) -> str:
    """`CONTEXTFLOW_STORE=/path contextflow hook stop`: the hook's store settings in its command."""
    assignments = [f"{key}={shlex.quote(value)}" for key, value in settings.items()]
    return " ".join([*assignments, shlex.join([*command, "hook", sub])])


def skill_text() -> str:
    return resources.files("contextflow").joinpath("skill/SKILL.md").read_text(encoding="utf-8")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}; nothing was changed") from None


# -- JSON configs ------------------------------------------------------------------------


Mutator = Callable[[dict[str, Any]], None]


def merge_json(path: Path, *mutators: Mutator) -> Change:
    """Apply `mutators` to the JSON object in `path`; the text stays as it was when nothing changes."""
    before = _read(path)
    try:
        data = json.loads(before) if before and before.strip() else {}
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "fix it and run install again. Nothing was changed"
        ) from None
    if not isinstance(data, dict):
        raise InputError(f"{path} does not hold a JSON object; nothing was changed")
    original = json.loads(json.dumps(data))
    for mutate in mutators:
        mutate(data)
    if data == original and before is not None:
        return Change(path, before, before)
    return Change(path, before, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _table(parent: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = parent.setdefault(key, {})
    if not isinstance(value, dict):
        raise InputError(f"{where}.{key} is not a JSON object; fix it and run install again. Nothing was changed")
    return value


def _merged_env(current: Any, settings: Mapping[str, str]) -> dict[str, Any]:
    """The user's env with our store settings; a setting install owns but did not set now is
    dropped, so the server and the hooks cannot disagree."""
    kept = {k: v for k, v in current.items() if k not in OWNED_VARIABLES} if isinstance(current, dict) else {}
    return {**kept, **settings}


def server_mutator(path: Path, command: list[str], extra: dict[str, Any], settings: Mapping[str, str]) -> Mutator:
    def mutate(data: dict[str, Any]) -> None:
        servers = _table(data, "mcpServers", str(path))
        entry = servers.get(SERVER_NAME)
        entry = dict(entry) if isinstance(entry, dict) else {}
        entry.update({**extra, "command": command[0], "args": [*command[1:], "serve"]})
        env = _merged_env(entry.get("env"), settings)
        if env:
            entry["env"] = env
        servers[SERVER_NAME] = entry

    return mutate


def _is_ours(command: Any, sub: str) -> bool:
    return isinstance(command, str) and "contextflow" in command and command.rstrip().endswith(f"hook {sub}")


def hooks_mutator(
    path: Path,
    command: list[str],
    settings: Mapping[str, str],
    *,
    events: tuple[tuple[str, str], ...] = HOOKS,
    timeout: int = HOOK_TIMEOUT,
    start_matcher: bool = True,
) -> Mutator:
    """Our hooks in a Claude Code-style `hooks` table (Claude Code, Codex hooks.json, Gemini CLI)."""

    def mutate(data: dict[str, Any]) -> None:
        hooks = _table(data, "hooks", str(path))
        for event, sub in events:
            wanted = hook_command(command, sub, settings)
            groups = hooks.setdefault(event, [])
            if not isinstance(groups, list):
                raise InputError(f"{path}: hooks.{event} is not a list; fix it and run install again")
            ours = [
                h
                for g in groups
                if isinstance(g, dict) and isinstance(g.get("hooks"), list)
                for h in g["hooks"]
                if isinstance(h, dict) and _is_ours(h.get("command"), sub)
            ]
            if ours:
                ours[0].update({"type": "command", "command": wanted})
                continue
            group: dict[str, Any] = {"hooks": [{"type": "command", "command": wanted, "timeout": timeout}]}
            if event == "SessionStart" and start_matcher:  # "" matches every start (Claude Code, Gemini)
                group = {"matcher": "", **group}
            groups.append(group)

    return mutate


# -- Codex TOML --------------------------------------------------------------------------


def _set(table: Any, wanted: Mapping[str, Any]) -> None:
    """Set each key whose value differs; an equal value keeps its text (and its comment)."""
    for key, value in wanted.items():
        if table.get(key) != value:
            table[key] = value


CODEX_STARTUP_TIMEOUT = 60  # seconds Codex waits for the server to start (its own default is 10)


def codex_entry(path: Path, command: list[str], settings: Mapping[str, str]) -> Change:
    """Set command, args and the store settings (`env`) of [mcp_servers.contextflow], keeping
    comments and layout (tomlkit). Codex starts MCP servers with only HOME and PATH, so the
    settings must be in the entry."""
    import tomlkit

    before = _read(path)
    try:
        document = tomlkit.parse(before or "")
    except tomlkit.exceptions.ParseError as exc:
        raise InputError(f"{path} is not valid TOML ({exc}); fix it and run install again. Nothing changed") from None
    if "mcp_servers" not in document:
        for _ in range(bool(document) + (not (before or "\n").endswith("\n"))):
            document.add(tomlkit.nl())  # end the last line, then one blank line
        document["mcp_servers"] = tomlkit.table(is_super_table=True)
    servers = document["mcp_servers"]
    entry = servers.setdefault(SERVER_NAME, tomlkit.table()) if isinstance(servers, dict) else None
    if not isinstance(entry, dict):
        raise InputError(f"{path}: mcp_servers.{SERVER_NAME} is not a table; fix it and run install again")
    # required: Codex waits for a required server before the first turn, so the model's first
    # tool_search finds contextflow's tools (without it 3 of 3 measured first searches found none)
    _set(entry, {"command": command[0], "args": [*command[1:], "serve"], "required": True})
    # Codex gives up on a server that has not answered in startup_timeout_sec (default 10 s): a first start on a
    # loaded machine (a cold import of the MCP SDK, a first read of the store) can take longer. A longer
    # timeout the user set is kept.
    timeout = entry.get("startup_timeout_sec")
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout < CODEX_STARTUP_TIMEOUT:
        entry["startup_timeout_sec"] = CODEX_STARTUP_TIMEOUT
    current = entry.get("env")
    env = _merged_env(current, settings)
    if isinstance(current, dict):
        for key in [key for key in current if key not in env]:
            del current[key]
        _set(current, env)
    elif env:
        table = tomlkit.table()
        table.update(env)
        entry["env"] = table.add(tomlkit.nl())  # a blank line before whatever table follows
    return Change(path, before, tomlkit.dumps(document))
