"""`contextflow install CLIENT`: add contextflow to an MCP client's configuration.

Merges the `contextflow` MCP server entry into the client's config file (user scope, or
the project with `project=True`), keeping every other setting; for Claude Code it also
adds the three hooks to settings.json and writes the skill file. Running it again changes
nothing. Each change is shown as a unified diff; `dry_run` only shows them.

    client       user scope (HOME)                        project scope (current folder)
    claude-code  .claude.json (server),                   .mcp.json,
                 .claude/settings.json (hooks),           .claude/settings.json,
                 .claude/skills/contextflow/SKILL.md      .claude/skills/contextflow/SKILL.md
    codex        .codex/config.toml                       .codex/config.toml
    gemini       .gemini/settings.json                    .gemini/settings.json
    cursor       .cursor/mcp.json                         .cursor/mcp.json
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
import shutil
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from contextflow.errors import InputError

CLIENTS = ("claude-code", "codex", "gemini", "cursor")
SERVER_NAME = "contextflow"
HOOKS = (("SessionStart", "session-start"), ("UserPromptSubmit", "prompt-submit"), ("Stop", "stop"))
HOOK_TIMEOUT = 30


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
            (self.before or "").splitlines(keepends=True), self.after.splitlines(keepends=True),
            fromfile=str(self.path) if self.before is not None else "/dev/null", tofile=str(self.path),
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def server_command() -> list[str]:
    """How a client should start this contextflow: its script if on PATH, else this Python."""
    found = shutil.which("contextflow")
    return [found] if found else [sys.executable, "-m", "contextflow"]


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


def merge_json(path: Path, mutate: Callable[[dict[str, Any]], None]) -> Change:
    """Apply `mutate` to the JSON object in `path`; the text stays as it was when nothing changes."""
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
    mutate(data)
    if data == original and before is not None:
        return Change(path, before, before)
    return Change(path, before, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _table(parent: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = parent.setdefault(key, {})
    if not isinstance(value, dict):
        raise InputError(f"{where}.{key} is not a JSON object; fix it and run install again. Nothing was changed")
    return value


def server_entry(path: Path, command: list[str], extra: dict[str, Any]) -> Change:
    def mutate(data: dict[str, Any]) -> None:
        servers = _table(data, "mcpServers", str(path))
        entry = servers.get(SERVER_NAME)
        entry = dict(entry) if isinstance(entry, dict) else {}
        entry.update({**extra, "command": command[0], "args": [*command[1:], "serve"]})
        servers[SERVER_NAME] = entry

    return merge_json(path, mutate)


def _is_ours(command: Any, sub: str) -> bool:
    return isinstance(command, str) and "contextflow" in command and command.rstrip().endswith(f"hook {sub}")


def claude_hooks(path: Path, command: list[str]) -> Change:
    def mutate(data: dict[str, Any]) -> None:
        hooks = _table(data, "hooks", str(path))
        for event, sub in HOOKS:
            wanted = shlex.join([*command, "hook", sub])
            groups = hooks.setdefault(event, [])
            if not isinstance(groups, list):
                raise InputError(f"{path}: hooks.{event} is not a list; fix it and run install again")
            ours = [h for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list)
                    for h in g["hooks"] if isinstance(h, dict) and _is_ours(h.get("command"), sub)]
            if ours:
                ours[0].update({"type": "command", "command": wanted})
                continue
            group: dict[str, Any] = {"hooks": [{"type": "command", "command": wanted, "timeout": HOOK_TIMEOUT}]}
            if event == "SessionStart":
                group = {"matcher": "", **group}
            groups.append(group)

    return merge_json(path, mutate)


# -- Codex TOML --------------------------------------------------------------------------

_HEADER = re.compile(r'^\s*\[\s*mcp_servers\s*\.\s*(?:contextflow|"contextflow")\s*\]\s*(?:#.*)?$')
_ANY_HEADER = re.compile(r"^\s*\[")


def _toml_value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def codex_entry(path: Path, command: list[str]) -> Change:
    """Set command and args in [mcp_servers.contextflow], editing the text so comments survive."""
    before = _read(path)
    text = before or ""
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path} is not valid TOML ({exc}); fix it and run install again. Nothing changed") from None
    wanted = {"command": _toml_value(command[0]), "args": _toml_value([*command[1:], "serve"])}
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if _HEADER.match(line)), None)
    if start is None:
        block = f"[mcp_servers.{SERVER_NAME}]\n" + "".join(f"{k} = {v}\n" for k, v in wanted.items())
        separator = "" if not text else ("\n" if text.endswith("\n") else "\n\n")
        after = text + separator + block
    else:
        end = next((i for i in range(start + 1, len(lines)) if _ANY_HEADER.match(lines[i])), len(lines))
        body = lines[start + 1 : end]
        for position, (key, value) in enumerate(wanted.items()):
            pattern = re.compile(rf"^\s*{key}\s*=")
            index = next((i for i, line in enumerate(body) if pattern.match(line)), None)
            new_line = f"{key} = {value}\n"
            if index is None:
                body.insert(position, new_line)
                continue
            current = _parsed_line(body[index])
            if current is None:
                raise InputError(f"{path}: {key} of [mcp_servers.{SERVER_NAME}] spans lines; edit it by hand")
            if current.get(key) != json.loads(value):
                body[index] = new_line
        after = "".join(lines[: start + 1] + body + lines[end:])
    tomllib.loads(after)
    return Change(path, before, after)


def _parsed_line(line: str) -> dict[str, Any] | None:
    try:
        return tomllib.loads(line)
    except tomllib.TOMLDecodeError:
        return None


# -- planning and applying ---------------------------------------------------------------


def plan(client: str, *, project: bool, home: Path | None = None, cwd: Path | None = None,
         command: list[str] | None = None) -> list[Change]:
    if client not in CLIENTS:
        raise InputError(f"unknown client {client!r}; install supports {', '.join(CLIENTS)}")
    home = home or Path(os.environ.get("HOME") or Path.home())
    root = (cwd or Path.cwd()) if project else home
    command = command or server_command()
    if client == "claude-code":
        config = root / ".mcp.json" if project else home / ".claude.json"
        skill = root / ".claude" / "skills" / SERVER_NAME / "SKILL.md"
        skill_now = _read(skill)
        return [
            server_entry(config, command, {"type": "stdio"}),
            claude_hooks(root / ".claude" / "settings.json", command),
            Change(skill, skill_now, skill_text()),
        ]
    if client == "codex":
        return [codex_entry(root / ".codex" / "config.toml", command)]
    if client == "gemini":
        return [server_entry(root / ".gemini" / "settings.json", command, {})]
    return [server_entry(root / ".cursor" / "mcp.json", command, {})]


def write(change: Change) -> None:
    """Write atomically, keeping an existing file's permissions."""
    path = change.path
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600 if path.name == ".claude.json" else 0o644
    temp = path.with_name(f".{path.name}.contextflow-{os.getpid()}.tmp")
    try:
        temp.write_text(change.after, encoding="utf-8")
        os.chmod(temp, mode)
        os.replace(temp, path)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None


def install(client: str, *, project: bool = False, dry_run: bool = False, home: Path | None = None,
            cwd: Path | None = None, command: list[str] | None = None) -> list[Change]:
    """Plan every change first (so a bad file stops all of them), then write unless dry_run."""
    changes = plan(client, project=project, home=home, cwd=cwd, command=command)
    if not dry_run:
        for change in changes:
            if change.changed:
                write(change)
    return changes
