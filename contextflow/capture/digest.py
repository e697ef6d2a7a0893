"""A session's running digest (machine-local), and the automatic handoff derived from it.

The digest folds each stored turn in: files touched, each command's last outcome, tests' last
outcome, the latest todo list, the last final messages, recent errors. `auto_handoff` turns it
into the fields of a normal `handoff` event marked `auto: true`.
"""

from __future__ import annotations

import copy
import re
from typing import Any

MAX_FILES = 40
MAX_COMMANDS = 15
MAX_FINALS = 2
MAX_ERRORS = 5
_NEXT = re.compile(r"\bnext steps?\s*[:\-]\s*(.+)", re.I)
_DONE = ("completed", "complete", "done", "cancelled", "canceled")


def _merge_unique(old: list[str], new: list[str], limit: int) -> list[str]:
    merged = [item for item in old if item not in new] + new
    return merged[-limit:]


def fold(digest: dict[str, Any], turn: dict[str, Any]) -> dict[str, Any]:
    """The digest with one more turn (a new dict; the old one is not changed)."""
    out: dict[str, Any] = copy.deepcopy(digest)
    files = out.setdefault("files", [])
    for kind in ("created", "edited"):
        out["files"] = files = _merge_unique(files, turn.get("files", {}).get(kind, []), MAX_FILES)
    out["read"] = _merge_unique(out.get("read", []), turn.get("files", {}).get("read", []), MAX_FILES)
    outcomes: dict[str, Any] = out.setdefault("commands", {})
    for command in turn.get("commands", []):
        outcomes.pop(command["command"], None)
        outcomes[command["command"]] = command["exit"]
    out["commands"] = dict(list(outcomes.items())[-MAX_COMMANDS:])
    if "todos" in turn:
        out["todos"] = turn["todos"]
    if turn.get("final"):
        out["finals"] = ([*out.get("finals", []), turn["final"]])[-MAX_FINALS:]
    if turn.get("request"):
        out["request"] = turn["request"]
    out["errors"] = (out.get("errors", []) + turn.get("errors", []))[-MAX_ERRORS:]
    out["turns"] = out.get("turns", 0) + 1
    return out


def _outcome(code: Any) -> str:
    return "exit ?" if code is None else ("ok" if code == 0 else f"exit {code}")


def has_work(digest: dict[str, Any]) -> bool:
    """Whether the session did anything to hand over: touched a file, ran a command or keeps a todo list.
    A session that only talked hands nothing over (it would push real work out of the latest handoff)."""
    return bool(digest.get("files") or digest.get("commands") or digest.get("todos"))


def auto_handoff(digest: dict[str, Any]) -> dict[str, Any]:
    """`summary`, `files`, `next_steps`, `open_questions`-free handoff fields from a digest."""
    finals = digest.get("finals") or []
    summary = finals[-1] if finals else f"Worked on: {digest.get('request') or 'an unnamed request'}"
    from contextflow.capture.turns import is_test_command

    commands = digest.get("commands", {})
    tests = [f"{cmd} -> {_outcome(code)}" for cmd, code in commands.items() if is_test_command(cmd)]
    others = [f"{cmd} -> {_outcome(code)}" for cmd, code in commands.items() if not is_test_command(cmd)]
    todos = [t["text"] for t in digest.get("todos") or [] if t.get("status", "").lower() not in _DONE]
    next_steps = []
    for final in reversed(finals):
        found = _NEXT.search(final)
        if found:
            next_steps.append(found.group(1).strip()[:300])
            break
    next_steps += [f"todo: {todo}" for todo in todos if all(todo not in step for step in next_steps)]
    fields: dict[str, Any] = {
        "summary": summary,
        "files": digest.get("files", []),
        "next_steps": next_steps[:20],
        "commands": others[-10:],
        "tests": tests[-5:],
        "open_todos": todos[:20],
        "errors": digest.get("errors", [])[-3:],
        "request": digest.get("request", ""),
        "turns": digest.get("turns", 0),
    }
    return {name: value for name, value in fields.items() if value not in ("", [], None)}
