"""Claude Code transcripts (`~/.claude/projects/<cwd>/<session>.jsonl`) into turns.

Only main-thread `user`/`assistant` lines count (not sidechains, meta lines, compact summaries
or `<command-name>`-style wrappers); the big noise lines (api-request*, attachments) are
skipped by a prefix test before any JSON decoding. The transcript lags the Stop hook (its final
text line comes later): the caller passes the payload's `last_assistant_message`.
"""

from __future__ import annotations

import re
from typing import Any

from contextflow.capture.turns import Turn, decoded

_NOISE_PREFIXES = (b'{"type":"api-request', b'{"type":"queue-operation', b'{"type":"last-prompt', b'{"type":"atis')
_WRAPPERS = ("<command-name>", "<command-message>", "<local-command-", "<command-args>")
_EXIT = re.compile(r"Exit code (\d+)")
_WRITE_TOOLS = {"Write": "created", "Edit": "edited", "MultiEdit": "edited", "NotebookEdit": "edited", "Read": "read"}


def _is_noise(line: bytes) -> bool:
    return line.startswith(_NOISE_PREFIXES) or b'"attachment":{' in line[:300]


def _prompt(entry: dict[str, Any], content: Any) -> str | None:
    """The person's prompt of a user line, or None (tool results, meta lines, summaries, wrappers)."""
    if entry.get("isMeta") or entry.get("isCompactSummary") or entry.get("isVisibleInTranscriptOnly"):
        return None
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        content = "\n".join(t for t in texts if isinstance(t, str)) if texts else None
    if not isinstance(content, str) or content.lstrip().startswith(_WRAPPERS):
        return None
    return content


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def parse(lines: list[bytes], counts: dict[str, int]) -> list[Turn]:
    turns: list[Turn] = []
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    tasks: dict[str, list[str]] = {}  # task id -> [subject, status]

    def current() -> Turn:
        if not turns:
            turns.append(Turn(continued=True))
        return turns[-1]

    for entry in decoded(lines, counts, _is_noise):
        if not isinstance(entry, dict) or entry.get("type") not in ("user", "assistant") or entry.get("isSidechain"):
            continue
        message = entry.get("message")
        if not isinstance(message, dict):
            counts["bad"] = counts.get("bad", 0) + 1
            continue
        content = message.get("content")
        if entry["type"] == "user":
            prompt = _prompt(entry, content)
            if prompt is not None:
                turns.append(Turn(prompt))
                tasks.clear()
                continue
            if isinstance(content, list):
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        _result(current(), calls, tasks, block, entry.get("toolUseResult"))
            continue
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and isinstance(block.get("input"), dict):
                calls[str(block.get("id"))] = (str(block.get("name")), block["input"])
                current().tool_call(block.get("name"), block["input"])
            elif block.get("type") == "text" and _text([block]).strip():
                current().set_final(_text([block]))
    return turns


def _result(turn: Turn, calls: dict[str, Any], tasks: dict[str, list[str]], block: dict[str, Any], result: Any) -> None:
    name, args = calls.pop(str(block.get("tool_use_id")), ("", {}))
    failed = block.get("is_error") is True
    output = _text(block.get("content"))
    if name in _WRITE_TOOLS:
        kind = _WRITE_TOOLS[name]
        if name == "Write" and isinstance(result, dict) and result.get("type") == "update":
            kind = "edited"
        if not failed:
            turn.file(kind, args.get("file_path") or args.get("notebook_path"))
        else:
            turn.error(f"{name} {args.get('file_path', '')}: {output}")
    elif name == "Bash":
        code = _EXIT.search(output[:200]) if failed else None
        if code:  # "Exit code 3\n<the command's output>": the output is what tells what went wrong
            output = output[: code.start()] + output[code.end() :]
        turn.command(args.get("command"), int(code.group(1)) if code else (1 if failed else 0), output)
    elif name == "TodoWrite":
        todos = result.get("newTodos") if isinstance(result, dict) else None
        todos = todos if isinstance(todos, list) else args.get("todos")
        if isinstance(todos, list):
            turn.set_todos([(t.get("content"), t.get("status")) for t in todos if isinstance(t, dict)])
    elif name in ("TaskCreate", "TaskUpdate") and isinstance(result, dict):
        task = result.get("task")
        if isinstance(task, dict):
            tasks[str(task.get("id"))] = [str(task.get("subject") or args.get("subject") or ""), "pending"]
        change = result.get("statusChange")
        if name == "TaskUpdate" and isinstance(change, dict):
            tasks.setdefault(str(result.get("taskId")), [f"task #{result.get('taskId')}", ""])[1] = str(
                change.get("to")
            )
        turn.set_todos([(subject, status) for subject, status in tasks.values()])
    elif failed and name:
        turn.error(f"{name}: {output}")
