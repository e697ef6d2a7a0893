"""Claude Code transcripts (`~/.claude/projects/<cwd>/<session>.jsonl`) into turns.

Only main-thread `user`/`assistant` lines count (not sidechains, meta lines, compact summaries
or `<command-name>`-style wrappers); the big noise lines (api-request*, attachments) are
skipped by a prefix test before any JSON decoding. The transcript lags the Stop hook (its final
text line, and often the last tool result, come later): the caller passes the payload's
`last_assistant_message`, and a tool call whose result is not written yet stays in `pending`
(the capture state) until a later read brings its result.
"""

from __future__ import annotations

from typing import Any

from contextflow.capture.turns import Turn, clip, decoded, each, without_private
from contextflow.core import regexes

_NOISE_PREFIXES = (b'{"type":"api-request', b'{"type":"queue-operation', b'{"type":"last-prompt', b'{"type":"atis')
_WRAPPERS = ("<command-name>", "<command-message>", "<local-command-", "<command-args>")
_EXIT = regexes.compile(r"Exit code (\d+)")
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


_KEPT_ARGS = ("file_path", "notebook_path", "command", "subject")  # what a pending call needs of its input
MAX_PENDING = 50


def parse(lines: list[bytes], counts: dict[str, int], pending: dict[str, Any] | None = None) -> list[Turn]:
    turns: list[Turn] = []
    pending = {} if pending is None else pending
    calls = pending["calls"] if isinstance(pending.get("calls"), dict) else {}  # tool_use id -> [name, input]
    tasks = {  # task id -> [subject, status]
        str(key)[:200]: value
        for key, value in (pending["tasks"] if isinstance(pending.get("tasks"), dict) else {}).items()
        if isinstance(value, list) and len(value) == 2 and all(isinstance(part, str) for part in value)
    }

    def current() -> Turn:
        if not turns:
            turns.append(Turn(continued=True))
        return turns[-1]

    def take(entry: Any) -> None:
        if not isinstance(entry, dict) or entry.get("type") not in ("user", "assistant") or entry.get("isSidechain"):
            return
        message = entry.get("message")
        if not isinstance(message, dict):
            counts["bad"] = counts.get("bad", 0) + 1
            return
        content = message.get("content")
        if entry["type"] == "user":
            prompt = _prompt(entry, content)
            if prompt is not None:
                turns.append(Turn(prompt))
                tasks.clear()
            elif isinstance(content, list):
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        _result(current(), calls, tasks, block, entry.get("toolUseResult"))
            return
        if not isinstance(content, list):
            return
        texts = []
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and isinstance(block.get("input"), dict):
                calls[str(block.get("id"))] = [str(block.get("name")), block["input"]]
                current().tool_call(block.get("name"), block["input"])
            elif block.get("type") == "text" and _text([block]).strip():
                texts.append(_text([block]))
                current().set_final(texts[-1])
        if texts:
            current().say(entry.get("uuid"), "\n".join(texts))

    each(decoded(lines, counts, _is_noise), counts, take)
    pending["calls"] = _kept(calls)
    pending["tasks"] = dict(list(tasks.items())[-MAX_PENDING:])
    return turns


def stopped(turns: list[Turn], pending: dict[str, Any]) -> None:
    """Claude Code stopped writing this transcript (killed, or closed) while commands waited for their
    result: each is recorded once, in the last turn, as run without a result (exit unknown), so the next
    session sees the command the session ended in. The call stays pending: a result written later (a
    resumed session) is recorded too, and the last outcome wins."""
    calls: dict[str, Any] = pending["calls"] if isinstance(pending.get("calls"), dict) else {}
    listed = pending.get("told")
    told = {key for key in listed if isinstance(key, str)} if isinstance(listed, list) else set()
    for key, call in calls.items():
        if key in told or not isinstance(call, list) or len(call) != 2 or call[0] != "Bash":
            continue
        command = call[1].get("command") if isinstance(call[1], dict) else None
        if isinstance(command, str) and command.strip():
            if not turns:
                turns.append(Turn(continued=True))
            turns[-1].command(command, None)
            turns[-1].error(f"`{clip(command, 80)}` has no result: the session stopped while it ran")
            told.add(key)
    pending["told"] = [key for key in calls if key in told]


def _kept(calls: dict[str, Any]) -> dict[str, Any]:
    """The calls still waiting for their result, with only what their result will need (bounded,
    `<private>` text left out)."""
    kept = {}
    for key, call in list(calls.items())[-MAX_PENDING:]:
        if isinstance(call, list) and len(call) == 2 and isinstance(call[1], dict):
            given = call[1]
            names = [name for name in _KEPT_ARGS if isinstance(given.get(name), str)]
            args = {name: without_private(given[name][:4_096]) for name in names}
            kept[key[:200]] = [str(call[0])[:100], args]
    return kept


def _result(turn: Turn, calls: dict[str, Any], tasks: dict[str, list[str]], block: dict[str, Any], result: Any) -> None:
    call = calls.pop(str(block.get("tool_use_id")), None)
    name, args = (call[0], call[1]) if isinstance(call, list) and len(call) == 2 else ("", {})
    name, args = (name, args) if isinstance(name, str) and isinstance(args, dict) else ("", {})
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
        at = output.find("Exit code ", 0, 200) if failed else -1
        code = _EXIT.match(output, at) if at >= 0 else None
        if code:  # "Exit code 3\n<the command's output>": the output is what tells what went wrong
            output = output[: code.start()] + output[code.end() :]
        digits = code.group(1) if code else ""
        exit_code = int(digits) if 0 < len(digits) <= 10 else None if digits or failed else 0
        turn.command(args.get("command"), exit_code, output, failed)
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
