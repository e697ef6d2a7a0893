"""Codex rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) into turns.

The structured `event_msg`/`item_completed` items carry the turn: `UserMessage` starts one,
`FileChange` (add/update/delete), `CommandExecution` (with `exit_code` and `parsed_cmd` reads),
`AgentMessage`; `update_plan` / `create_goal` / `update_goal` calls give the plan;
`task_complete.last_agent_message` the final text.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from contextflow.capture.turns import Turn, decoded, each

_KEEP = (b'"item_completed"', b'"function_call"', b'"task_complete"')


def _command(item: dict[str, Any]) -> str:
    command = item.get("command")
    if isinstance(command, list) and command:
        parts = [str(part) for part in command]
        return parts[-1] if len(parts) >= 3 and parts[1] in ("-lc", "-c") else " ".join(parts)
    return command if isinstance(command, str) else ""


def parse(lines: list[bytes], counts: dict[str, int], pending: dict[str, Any] | None = None) -> list[Turn]:
    """`pending` is unused: a rollout writes each item once, complete."""
    turns: list[Turn] = []
    goals: dict[str, str] = {}

    def current() -> Turn:
        if not turns:
            turns.append(Turn(continued=True))
        return turns[-1]

    def take(entry: Any) -> None:
        payload = entry.get("payload") if isinstance(entry, dict) else None
        if not isinstance(payload, dict):
            counts["bad"] = counts.get("bad", 0) + 1
            return
        kind = payload.get("type")
        if kind == "item_completed" and isinstance(payload.get("item"), dict):
            item = payload["item"]
            if item.get("type") == "UserMessage":
                text = "\n".join(
                    str(c.get("text", "")) for c in item.get("content") or [] if isinstance(c, dict)
                ).strip()
                if text:
                    turns.append(Turn(text))
            else:
                _item(current(), item)
        elif kind == "function_call":
            _plan(current(), payload, goals)
        elif kind == "task_complete":
            current().set_final(payload.get("last_agent_message"))

    each(decoded(lines, counts, lambda line: not any(marker in line[:400] for marker in _KEEP)), counts, take)
    return turns


def _item(turn: Turn, item: dict[str, Any]) -> None:
    kind = item.get("type")
    if kind == "FileChange" and isinstance(item.get("changes"), dict):
        for path, change in item["changes"].items():
            change_type = change.get("type") if isinstance(change, dict) else ""
            turn.file("created" if change_type == "add" else "edited", path)
        if item.get("status") == "failed":
            turn.error(f"apply_patch failed: {item.get('stderr') or item.get('stdout') or ''}")
    elif kind == "CommandExecution":
        turn.command(_command(item), item.get("exit_code"), str(item.get("aggregated_output") or ""))
        for parsed in item.get("parsed_cmd") or []:
            if isinstance(parsed, dict) and parsed.get("type") == "read":
                turn.file("read", parsed.get("path"))
    elif kind == "AgentMessage":
        texts = [str(c.get("text", "")) for c in item.get("content") or [] if isinstance(c, dict)]
        turn.set_final("\n".join(texts))
        turn.say(item.get("id"), "\n".join(texts))


def _plan(turn: Turn, payload: dict[str, Any], goals: dict[str, str]) -> None:
    name = payload.get("name")
    if isinstance(name, str) and name.endswith("write_shared_handoff"):
        with contextlib.suppress(TypeError, ValueError):
            turn.tool_call(name, json.loads(payload.get("arguments") or "{}"))
        return
    if name not in ("update_plan", "create_goal", "update_goal"):
        return
    try:
        args = json.loads(payload.get("arguments") or "{}")
    except (TypeError, ValueError):
        return
    if not isinstance(args, dict):
        return
    if name == "update_plan" and isinstance(args.get("plan"), list):
        turn.set_todos([(s.get("step"), s.get("status")) for s in args["plan"] if isinstance(s, dict)])
    elif isinstance(args.get("objective"), str):
        goals[args["objective"]] = str(args.get("status") or "active")
        turn.set_todos(list(goals.items()))
