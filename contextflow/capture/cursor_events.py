"""Cursor's agent hooks into turns: Cursor sends no transcript, so its events are the record.

Cursor (1.7 and later; `~/.cursor/hooks.json` or `<project>/.cursor/hooks.json`, `"version": 1`)
runs a command per event with JSON on stdin: every payload has `hook_event_name`,
`conversation_id`, `generation_id` and `workspace_roots`; `beforeSubmitPrompt` adds `prompt`,
`afterFileEdit` `file_path` and `edits`, `afterShellExecution` `command`, `output` and `duration`
(no exit status), `afterAgentResponse` `text`, `stop` `status` and `loop_count`.

`contextflow hook cursor` appends each event but `stop` to a journal of its own, one bounded,
redacted JSON line per event (`<state>/capture/cursor/<hash of conversation>.jsonl`, in the
machine-local state folder); `stop` then captures the journal's new lines like any transcript.
Only the fields read here are kept; `<private>` text is dropped before anything is written.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from contextflow.capture.turns import MAX_COMMAND, MAX_FINAL, MAX_PROMPT, Turn, clip, decoded, each
from contextflow.core import hashing

EVENTS = ("beforeSubmitPrompt", "afterFileEdit", "afterShellExecution", "afterAgentResponse", "stop")
KEPT = {
    "beforeSubmitPrompt": {"prompt": MAX_PROMPT * 5},
    "afterFileEdit": {"file_path": 1_000},
    "afterShellExecution": {"command": MAX_COMMAND, "output": 400},
    "afterAgentResponse": {"text": MAX_FINAL * 4},
}
MAX_JOURNAL = 16 << 20  # a journal past this is not written to (capture still reads what it holds)


def is_cursor(payload: dict[str, Any]) -> bool:
    return payload.get("hook_event_name") in EVENTS and isinstance(payload.get("conversation_id"), str)


def workspace(payload: dict[str, Any]) -> str | None:
    """The session's folder: the first of `workspace_roots`."""
    roots = payload.get("workspace_roots")
    first = roots[0] if isinstance(roots, list) and roots else None
    return first if isinstance(first, str) and os.path.isabs(first) and "\0" not in first else None


def journal_path(state_dir: Path, conversation_id: str) -> Path:
    folder = state_dir / "capture" / "cursor"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder / (hashing.sha256(conversation_id.encode()).hexdigest()[:24] + ".jsonl")


def record(payload: dict[str, Any]) -> dict[str, Any] | None:
    """The journal line of one event: its name and the fields read later, bounded, `<private>` dropped
    (secrets are redacted by the caller before it is written)."""
    event = payload.get("hook_event_name")
    fields = KEPT.get(str(event))
    if fields is None:
        return None
    line: dict[str, Any] = {"event": event}
    for name, limit in fields.items():
        value = payload.get(name)
        if isinstance(value, str):
            line[name] = clip(value, limit)
    return line if len(line) > 1 else None


def append(path: Path, line: dict[str, Any]) -> bool:
    """Append one line unless the journal is full or not a regular file; True when written."""
    try:
        if path.exists() and (not path.is_file() or path.stat().st_size > MAX_JOURNAL):
            return False
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        descriptor = os.open(path, flags, 0o600)
    except OSError:
        return False
    with os.fdopen(descriptor, "ab") as handle:
        handle.write(json.dumps(line, separators=(",", ":")).encode() + b"\n")
    return True


def parse(lines: list[bytes], counts: dict[str, int], pending: dict[str, Any] | None = None) -> list[Turn]:
    """Turns from journal lines: a prompt starts a turn; edits, commands and the agent's response
    fill it (a command's exit status is not in Cursor's payload: it is stored as unknown)."""
    turns: list[Turn] = []

    def take(entry: Any) -> None:
        event = entry["event"]
        if event == "beforeSubmitPrompt":
            turns.append(Turn(str(entry.get("prompt") or "")))
            return
        if event not in KEPT:
            raise ValueError(f"not a journal event: {event!r}")
        if not turns:
            turns.append(Turn(continued=True))
        turn = turns[-1]
        if event == "afterFileEdit":
            turn.file("edited", entry.get("file_path"))
        elif event == "afterShellExecution":
            turn.command(entry.get("command"), None)
        elif event == "afterAgentResponse" and isinstance(entry.get("text"), str):
            turn.set_final(entry["text"])
            turn.say(f"cursor:{len(turn.messages)}", entry["text"])

    each(decoded(lines, counts, lambda line: False), counts, take)
    return turns
