"""Gemini CLI chat files (`~/.gemini/tmp/<slug>/chats/session-*.jsonl`) into turns.

Header lines and `$set` patches are skipped (a resume's `$set.messages` rewrites the whole
history); a record written twice under one `id` counts once, as last written. A user record
with text starts a turn (the session-start `<hook_context>` prefix is dropped); `gemini`
records' `toolCalls` carry files, shell commands (`Exit Code: N` in the output) and todos.
"""

from __future__ import annotations

from typing import Any

from contextflow.capture.turns import Turn, decoded, each
from contextflow.core import regexes

_EXIT = regexes.compile(r"Exit Code: (\d+)")
# what run_shell_command's result holds besides the command's output (`Output: (empty)` when it had none)
_NOT_OUTPUT = regexes.compile(
    r"\s*(</?untrusted_context>|\(empty\)|(Exit Code|Signal|Background PIDs|Process Group PGID):.*)\s*"
)
_FILES = {"write_file": "created", "replace": "edited", "edit": "edited", "read_file": "read"}


def parse(lines: list[bytes], counts: dict[str, int], pending: dict[str, Any] | None = None) -> list[Turn]:
    """`pending` is unused: a record written again under its id replaces the earlier one."""
    records: dict[str, dict[str, Any]] = {}
    for entry in decoded(lines, counts, lambda line: line.startswith(b'{"$set"')):
        if not isinstance(entry, dict):
            counts["bad"] = counts.get("bad", 0) + 1
            continue
        if isinstance(entry.get("id"), str) and entry.get("type") in ("user", "gemini"):
            records.pop(entry["id"], None)  # keep the last version, at its last position
            records[entry["id"]] = entry
    turns: list[Turn] = []

    def take(entry: dict[str, Any]) -> None:
        content = entry.get("content")
        if entry["type"] == "user":
            texts = [c.get("text") for c in content or [] if isinstance(c, dict) and isinstance(c.get("text"), str)]
            if isinstance(content, list) and texts:
                turns.append(Turn("\n".join(str(text) for text in texts)))
            return
        if not turns:
            turns.append(Turn(continued=True))
        for call in entry.get("toolCalls") or []:
            if isinstance(call, dict):
                _call(turns[-1], call)
        if isinstance(content, str) and content.strip():
            turns[-1].set_final(content)
            turns[-1].say(entry["id"], content)

    each(records.values(), counts, take)
    return turns


def _output(call: dict[str, Any]) -> str:
    for part in call.get("result") or []:
        response = part.get("functionResponse", {}).get("response") if isinstance(part, dict) else None
        if isinstance(response, dict):
            return str(response.get("output") or response.get("error") or "")
    return ""


def _call(turn: Turn, call: dict[str, Any]) -> None:
    name, args = call.get("name"), call.get("args")
    if not isinstance(args, dict):
        return
    failed = call.get("status") not in ("success", None)
    if not failed:
        turn.tool_call(name, args)
    output = _output(call)
    if name in _FILES:
        kind = _FILES[name]
        display = call.get("resultDisplay")
        if name == "write_file" and isinstance(display, dict) and display.get("isNewFile") is False:
            kind = "edited"
        if failed:
            turn.error(f"{name} {args.get('file_path', '')}: {output}")
        else:
            turn.file(kind, args.get("file_path"))
    elif name == "run_shell_command":
        code = _EXIT.search(output)
        lines = output.replace("Output:", "", 1).splitlines()
        body = "\n".join(line for line in lines if not _NOT_OUTPUT.fullmatch(line))
        digits = code.group(1) if code else ""
        exit_code = int(digits) if 0 < len(digits) <= 10 else None if digits or failed else 0
        turn.command(args.get("command"), exit_code, body, failed or bool(digits and digits.strip("0")))
    elif name == "write_todos" and isinstance(args.get("todos"), list):
        turn.set_todos([(t.get("description"), t.get("status")) for t in args["todos"] if isinstance(t, dict)])
    elif failed and isinstance(name, str):
        turn.error(f"{name}: {output}")
