"""contextflow installed as a client's own package: the Claude Code plugin or the Gemini CLI extension.

A client can get contextflow two ways: `contextflow install CLIENT` (entries merged into its
settings files) or its plugin/extension (one unit the client manages). Both at once would run
every hook twice and start two servers, so:

- `contextflow install CLIENT` writes no server, hooks or skill where the plugin or extension is
  enabled, and takes back the ones it wrote before (`clients.plan_install`);
- a hook run by the plugin or extension (`CONTEXTFLOW_VIA` in its command) stands aside while
  hooks that `contextflow install` wrote are still in the client's settings (`defers`), so until
  the user runs install again one set of hooks runs;
- `doctor` says which way is active (`install_check`).

Read-only, light imports: `defers` runs in every plugin hook call.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from contextflow.core.settings import read

PLUGIN_NAME = "contextflow"  # the plugin's and the extension's name
MAX_SETTINGS_BYTES = 4 << 20


class Packaged(NamedTuple):
    """contextflow's plugin or extension in one client."""

    client: str  # the install name: claude-code, gemini
    kind: str  # "plugin" or "extension"
    name: str  # contextflow@<marketplace>, or the extension folder
    where: str  # the file that says it is installed and enabled


def _load(path: Path) -> Any:
    try:
        if not path.is_file() or path.stat().st_size > MAX_SETTINGS_BYTES:
            return None
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def _claude_settings(home: Path, cwd: Path | None) -> list[Path]:
    files = [home / ".claude" / "settings.json"]
    if cwd is not None:
        files += [cwd / ".claude" / "settings.json", cwd / ".claude" / "settings.local.json"]
    return files


def claude_plugin(home: Path, cwd: Path | None = None) -> Packaged | None:
    """The enabled `contextflow@<marketplace>` plugin; a later (more local) settings file wins."""
    found: Packaged | None = None
    for path in _claude_settings(home, cwd):
        enabled = _load(path)
        enabled = enabled.get("enabledPlugins") if isinstance(enabled, dict) else None
        for key, value in enabled.items() if isinstance(enabled, dict) else ():
            if isinstance(key, str) and key.split("@", 1)[0] == PLUGIN_NAME:
                found = Packaged("claude-code", "plugin", key, str(path)) if value is True else None
    return found


def claude_env(home: Path, cwd: Path | None = None) -> dict[str, str]:
    """Claude Code's `env` setting (user, then project files, the later winning): the environment
    its sessions, and so the plugin's server and hooks, get on top of the shell's."""
    merged: dict[str, str] = {}
    for path in _claude_settings(home, cwd):
        data = _load(path)
        env = data.get("env") if isinstance(data, dict) else None
        merged.update({k: v for k, v in env.items() if isinstance(v, str)} if isinstance(env, dict) else {})
    return merged


def gemini_extension(home: Path, cwd: Path | None = None) -> Packaged | None:
    """The `contextflow` extension in ~/.gemini/extensions, unless disabled for this folder."""
    folder = home / ".gemini" / "extensions" / PLUGIN_NAME
    if not (folder / "gemini-extension.json").is_file():
        return None
    rules = _load(home / ".gemini" / "extensions" / "extension-enablement.json")
    rules = rules.get(PLUGIN_NAME, {}).get("overrides") if isinstance(rules, dict) else None
    place = str(cwd or home)
    enabled = True
    for rule in rules if isinstance(rules, list) else ():
        if isinstance(rule, str) and _covers(rule.lstrip("!"), place):
            enabled = not rule.startswith("!")
    return Packaged("gemini", "extension", PLUGIN_NAME, str(folder)) if enabled else None


def _covers(pattern: str, place: str) -> bool:
    if pattern.endswith("/*"):
        base = pattern[:-2].rstrip("/")
        return place == base or place.startswith(base + "/")
    return place.rstrip("/") == pattern.rstrip("/")


def find(client: str, home: Path, cwd: Path | None = None) -> Packaged | None:
    if client == "claude-code":
        return claude_plugin(home, cwd)
    if client == "gemini":
        return gemini_extension(home, cwd)
    return None


def installed_hook_commands(client: str, home: Path, cwd: Path | None = None) -> Iterator[tuple[str, str, str]]:
    """(settings file, event, command) of each hook `contextflow install` wrote for the client
    (a contextflow hook command without `CONTEXTFLOW_VIA`)."""
    if client == "claude-code":
        files = _claude_settings(home, cwd)
    elif client == "gemini":
        files = [home / ".gemini" / "settings.json", *([cwd / ".gemini" / "settings.json"] if cwd else [])]
    else:
        return
    for path in dict.fromkeys(files):
        hooks = _load(path)
        hooks = hooks.get("hooks") if isinstance(hooks, dict) else None
        for event, groups in hooks.items() if isinstance(hooks, dict) else ():
            for group in groups if isinstance(groups, list) else ():
                for handler in group.get("hooks", []) if isinstance(group, dict) else ():
                    command = handler.get("command") if isinstance(handler, dict) else None
                    if _written_by_install(command):
                        yield str(path), event, str(command)


def _written_by_install(command: Any) -> bool:
    return (
        isinstance(command, str)
        and "contextflow" in command
        and " hook " in command
        and "CONTEXTFLOW_VIA=" not in command
    )


CLIENT_OF_HOOK = {"claude-code": "claude-code", "gemini-cli": "gemini"}  # CONTEXTFLOW_CLIENT -> install name


def defers(env: Mapping[str, str], cwd: str | None) -> str | None:
    """Why a plugin's or extension's hook does nothing this time (hooks `contextflow install`
    wrote run for the same client), or None when it runs."""
    settings = read(env)
    if not settings.via:
        return None
    client = CLIENT_OF_HOOK.get(settings.client or "")
    home = env.get("HOME") or os.path.expanduser("~")
    if client is None or not home:
        return None
    folder = Path(cwd) if cwd and os.path.isabs(cwd) else None
    for path, _, _ in installed_hook_commands(client, Path(home), folder):
        via = settings.via
        return f"the hooks `contextflow install {client}` wrote in {path} run instead (install again: the {via}'s run)"
    return None
