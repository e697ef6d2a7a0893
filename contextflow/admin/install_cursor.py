"""`contextflow install cursor`: the MCP entry (`.cursor/mcp.json`) and Cursor's agent hooks
(`.cursor/hooks.json`, `"version": 1`): one `contextflow hook cursor` command under each event that
capture reads (`capture.cursor_events.EVENTS`), with the store settings in front of it."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contextflow.core.errors import InputError

HOOKS_VERSION = 1


def hook_command(command: list[str], settings: Mapping[str, str]) -> str:
    """`env CONTEXTFLOW_STORE=/path ... contextflow hook cursor` (with `env`, the settings hold
    whether Cursor runs the command through a shell or not)."""
    assignments = [f"{key}={shlex.quote(value)}" for key, value in settings.items()]
    return " ".join(["env", *assignments, shlex.join([*command, "hook", "cursor"])])


def _ours(entry: Any) -> bool:
    command = entry.get("command") if isinstance(entry, dict) else None
    return isinstance(command, str) and "contextflow" in command and command.rstrip().endswith("hook cursor")


def hooks_mutator(path: Path, command: list[str], settings: Mapping[str, str]) -> Any:
    from contextflow.capture.cursor_events import EVENTS

    def mutate(data: dict[str, Any]) -> None:
        data.setdefault("version", HOOKS_VERSION)
        hooks = data.setdefault("hooks", {})
        if not isinstance(hooks, dict):
            raise InputError(f"{path}: hooks is not a JSON object; fix it and run install again. Nothing was changed")
        wanted = hook_command(command, settings)
        for event in EVENTS:
            entries = hooks.setdefault(event, [])
            if not isinstance(entries, list):
                raise InputError(f"{path}: hooks.{event} is not a list; fix it and run install again")
            ours = [entry for entry in entries if _ours(entry)]
            if ours:
                ours[0]["command"] = wanted
            else:
                entries.append({"command": wanted})

    return mutate
