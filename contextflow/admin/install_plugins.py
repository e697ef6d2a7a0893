"""What `contextflow install CLIENT` does where contextflow's plugin (Claude Code) or extension
(Gemini CLI) is enabled: it writes no server, hooks or skill of its own, and takes back the server
entry and hooks it wrote before, so the client runs one set of hooks on one store (the plugin's:
its server and hooks read the store settings of the environment the client runs in)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contextflow.admin.install import HOOKS, OWNED_VARIABLES, SERVER_NAME, Change, Mutator, merge_json
from contextflow.admin.packaged import Packaged

GEMINI_EVENTS = ("SessionStart", "BeforeAgent", "AfterAgent", "SessionEnd")


def _ours(handler: Any) -> bool:
    command = handler.get("command") if isinstance(handler, dict) else None
    return (
        isinstance(command, str)
        and "contextflow" in command
        and " hook " in command
        and "CONTEXTFLOW_VIA=" not in command
    )


def without_server(data: dict[str, Any]) -> None:
    servers = data.get("mcpServers")
    if isinstance(servers, dict):
        servers.pop(SERVER_NAME, None)


def without_hooks(events: tuple[str, ...]) -> Mutator:
    """Drop the hook handlers install wrote (and groups or events left empty by that)."""

    def mutate(data: dict[str, Any]) -> None:
        hooks = data.get("hooks")
        if not isinstance(hooks, dict):
            return
        for event in events:
            groups = hooks.get(event)
            if not isinstance(groups, list):
                continue
            kept = []
            for group in groups:
                handlers = group.get("hooks") if isinstance(group, dict) else None
                if isinstance(handlers, list) and any(_ours(h) for h in handlers):
                    group = {**group, "hooks": [h for h in handlers if not _ours(h)]}
                    if not group["hooks"]:
                        continue
                kept.append(group)
            if kept:
                hooks[event] = kept
            else:
                del hooks[event]
        if not hooks:
            del data["hooks"]

    return mutate


def with_store(settings: Mapping[str, str]) -> Mutator:
    """Claude Code's `env` setting (its sessions' environment, so the plugin's server and hooks
    too) with the store settings install would have written into its own entries."""

    def mutate(data: dict[str, Any]) -> None:
        env = data.get("env")
        kept = {k: v for k, v in env.items() if k not in OWNED_VARIABLES} if isinstance(env, dict) else {}
        if kept or settings:
            data["env"] = {**kept, **settings}

    return mutate


def plan_beside(found: Packaged, config: Path, root: Path, settings: Mapping[str, str]) -> list[Change]:
    """The changes that leave the client to its plugin or extension (for Claude Code, with the
    store settings in its `env` setting, so the store stays the one install chose)."""
    if found.client == "claude-code":
        hooks = root / ".claude" / "settings.json"
        events = tuple(event for event, _ in HOOKS)
        return [merge_json(config, without_server), merge_json(hooks, without_hooks(events), with_store(settings))]
    return [merge_json(config, without_server, without_hooks(GEMINI_EVENTS))]


def note(found: Packaged, removed: bool) -> str:
    """What install says about the plugin or extension it found."""
    client = {"claude-code": "Claude Code", "gemini": "Gemini CLI"}[found.client]
    parts = {
        "claude-code": "the MCP server, the hooks and the skill",
        "gemini": "the MCP server, the hooks and its context file",
    }
    off = {
        "claude-code": f"claude plugin disable {found.name}",
        "gemini": f"gemini extensions disable {found.name}",
    }[found.client]
    taken = " and took back the server entry and hooks it wrote before" if removed else ""
    store = {
        "claude-code": "Its server and hooks use the store settings install wrote into Claude Code's `env` "
        "setting (~/.claude/settings.json).",
        "gemini": "Its server and hooks use the store settings of the environment Gemini CLI runs in "
        "(CONTEXTFLOW_STORE, ...).",
    }[found.client]
    return (
        f"contextflow's {client} {found.kind} ({found.name}) is enabled ({found.where}): it gives {client} "
        f"{parts[found.client]}, so install wrote none of them{taken}. {store} To use `contextflow install "
        f"{found.client}` instead, run `{off}` and install again."
    )
