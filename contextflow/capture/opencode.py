"""OpenCode's sessions into turns: read from its own session database, new messages only.

OpenCode (1.18) keeps every session in one SQLite file (`<data>/opencode/opencode.db`, or
`$OPENCODE_DB`): a `message` row per user or assistant message (`data`: JSON with `role`, `time`)
and a `part` row per text, tool call or step (`data`: JSON with `type`; a tool part's `state`
holds `input`, `output`, `status` and, for `bash`, `metadata.exit`). contextflow's OpenCode plugin
(`opencode-plugin/contextflow.js`) runs `contextflow hook stop` when a session goes idle; this
module reads that session's messages created after the read position, read-only, and turns them into
`Turn`s. The plugin events carry no transcript, and OpenCode's `run` exits as soon as the session
is idle, so the database (written before the event) is the reliable record.

The read position is `{"after": [time_created, message id]}`: the last complete message read. An
assistant message not completed yet stops the read (the next call starts there). A message or
part over MAX_ROW bytes is skipped and counted; a row that is not JSON (not UTF-8, nested deeper
than the decoder goes) is counted as bad: each row is read on its own, so no row stops the read.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from contextflow.capture.read_position import Chunk
from contextflow.capture.turns import Turn, decoded, each
from contextflow.core import regexes

if TYPE_CHECKING:  # imported where a database is opened: a sweep finding none pays nothing for it
    import sqlite3

MAX_MESSAGES = 2_000  # per read; the rest on the next call
MAX_ROW = 2 << 20
NO_OUTPUT = "(no output)"
_PATCH_FILE = regexes.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$", re.M)
_FILES = {"write": "created", "edit": "edited", "multiedit": "edited", "read": "read"}


def database(env: Mapping[str, str]) -> str:
    """Where OpenCode keeps its sessions: `$OPENCODE_DB` (absolute, or a name in its data folder),
    else `<XDG_DATA_HOME or ~/.local/share>/opencode/opencode.db`."""
    data = env.get("XDG_DATA_HOME", "").strip()
    if not os.path.isabs(data):
        data = os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local", "share")
    named = env.get("OPENCODE_DB", "").strip()
    if named and named != ":memory:":
        return named if os.path.isabs(named) else os.path.join(data, "opencode", named)
    return os.path.join(data, "opencode", "opencode.db")


def transcript(env: Mapping[str, str], session_id: str) -> str:
    """The name capture keeps a session's read position under: the database and the session."""
    return f"{database(env)}#{session_id}"


def _split(name: str) -> tuple[str, str]:
    path, _, session = name.rpartition("#")
    return path, session


def _connect(path: str) -> sqlite3.Connection:
    """A read-only connection; a missing or non-regular file (a FIFO, a device) is not opened."""
    if not os.path.isfile(path):
        raise FileNotFoundError(path)
    import sqlite3

    return sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True, timeout=2.0)


def read_new(name: str, position: dict[str, Any] | None) -> Chunk:
    """The session's complete messages after the read position, each as one JSON line
    `{"id", "info", "parts"}`, and the read position after them."""
    path, session_id = _split(name)
    after = (position or {}).get("after")
    start = after if isinstance(after, list) and len(after) == 2 else [0, ""]
    connection = _connect(path)
    lines: list[bytes] = []
    skipped = 0
    try:
        rows = connection.execute(  # data as bytes: text that is not UTF-8 fails its row, not the query
            "SELECT id, time_created, CASE WHEN length(data) <= ? THEN CAST(data AS BLOB) END FROM message "
            "WHERE session_id = ? AND (time_created > ? OR (time_created = ? AND id > ?)) "
            "ORDER BY time_created, id LIMIT ?",
            (MAX_ROW, session_id, start[0], start[0], start[1], MAX_MESSAGES),
        ).fetchall()
        for key, created, data in rows:
            if data is None:
                skipped += 1
                start = [created, key]
                continue
            info = _json(data)
            if isinstance(info, dict) and info.get("role") == "assistant" and not _completed(info):
                break  # still being written: read again from here next time
            parts = connection.execute(
                "SELECT CASE WHEN length(data) <= ? THEN CAST(data AS BLOB) END FROM part WHERE message_id = ? "
                "ORDER BY id",
                (MAX_ROW, key),
            ).fetchall()
            skipped += sum(1 for (part,) in parts if part is None)
            body = [_json(part) for (part,) in parts if part is not None]
            try:
                lines.append(json.dumps({"id": key, "info": info, "parts": body}).encode())
            except (RecursionError, ValueError):  # decoded, yet too deep to write again: skipped
                skipped += 1
            start = [created, key]
    finally:
        connection.close()
    return Chunk(lines, {"after": start}, skipped, False, 0 if start == [0, ""] or after is None else 1)


RECENT = 200  # messages looked at for a database without a `session` table
MAX_RECENT_ROW = 64 << 10


def sessions_in(path: str, folders: list[str], count: int) -> list[str]:
    """The `count` sessions last active in these folders, newest first: from OpenCode's `session` table
    (its `directory`), else from where the newest messages say they ran (`path.cwd`, `path.root`)."""
    connection = _connect(path)
    try:
        marks = ",".join("?" * len(folders))
        try:
            rows = connection.execute(
                f"SELECT id FROM session WHERE directory IN ({marks}) ORDER BY time_updated DESC LIMIT ?",
                (*folders, count),
            ).fetchall()
            return [key for (key,) in rows if isinstance(key, str)]
        except connection.OperationalError:  # no such table or column: an older or newer layout
            pass
        rows = connection.execute(
            "SELECT session_id, CASE WHEN length(data) <= ? THEN CAST(data AS BLOB) END FROM message "
            "ORDER BY time_created DESC LIMIT ?",
            (MAX_RECENT_ROW, RECENT),
        ).fetchall()
    finally:
        connection.close()
    found: list[str] = []
    for key, data in rows:
        info = _json(data) if data is not None else None
        where = info.get("path") if isinstance(info, dict) else None
        ran = [where.get("cwd"), where.get("root")] if isinstance(where, dict) else []
        if isinstance(key, str) and key not in found and any(folder in folders for folder in ran):
            found.append(key)
    return found[:count]


def _json(data: Any) -> Any:
    """The row's JSON, or None: not JSON, not UTF-8, or nested deeper than the decoder goes (the
    stdlib's decoder recurses: a row nested 300,000 deep raises RecursionError, caught here)."""
    try:
        return json.loads(data)
    except (TypeError, ValueError, RecursionError):
        return None


def _completed(info: dict[str, Any]) -> bool:
    time = info.get("time")
    return isinstance(time, dict) and time.get("completed") is not None


def _text(part: Any) -> str:
    """A part's own text: a text part not added by OpenCode or a plugin (`synthetic`)."""
    if isinstance(part, dict) and part.get("type") == "text" and not part.get("synthetic"):
        text = part.get("text")
        return text if isinstance(text, str) else ""
    return ""


def parse(lines: list[bytes], counts: dict[str, int], pending: dict[str, Any] | None = None) -> list[Turn]:
    """Turns from `read_new`'s lines: a user message with text of its own starts a turn; assistant
    messages add their tool calls and their texts (the last one is the final reply). `pending` is
    unused: a message is read only once it is complete."""
    turns: list[Turn] = []

    def take(entry: Any) -> None:
        info, parts = entry["info"], entry["parts"]
        if not isinstance(info, dict) or not isinstance(parts, list):
            raise ValueError("not a message")
        unread = sum(1 for part in parts if not isinstance(part, dict))  # a part that was not JSON: counted
        if unread:
            counts["bad"] = counts.get("bad", 0) + unread
        if info.get("role") == "user":
            prompt = "\n".join(text for text in map(_text, parts) if text)
            if prompt.strip():
                turns.append(Turn(prompt))
            return
        if info.get("role") != "assistant":
            return
        if not turns:
            turns.append(Turn(continued=True))
        for part in parts:
            if isinstance(part, dict) and part.get("type") == "tool":
                _tool(turns[-1], part)
            elif _text(part).strip():
                turns[-1].set_final(_text(part))
                turns[-1].say(part.get("id") or entry.get("id"), _text(part))

    each(decoded(lines, counts, lambda line: False), counts, take)
    return turns


def _tool(turn: Turn, part: dict[str, Any]) -> None:
    name, state = part.get("tool"), part.get("state")
    if not isinstance(state, dict) or state.get("status") not in ("completed", "error"):
        return
    args: dict[str, Any] = state["input"] if isinstance(state.get("input"), dict) else {}
    metadata: dict[str, Any] = state["metadata"] if isinstance(state.get("metadata"), dict) else {}
    output: str = state["output"] if isinstance(state.get("output"), str) else ""
    if state["status"] == "completed":
        turn.tool_call(name, args)
    if state["status"] == "error":
        detail: str = state["error"] if isinstance(state.get("error"), str) else "failed"
        if name == "bash":
            turn.command(args.get("command"), None, detail, failed=True)
        else:
            turn.error(f"{name} {args.get('filePath', '')}: {detail}".replace("  ", " "))
        return
    if name in _FILES:
        kind = _FILES[name]
        if name == "write" and metadata.get("exists") is True:
            kind = "edited"
        turn.file(kind, args.get("filePath"))
    elif name == "bash":
        code = metadata.get("exit")
        shown = "" if output.strip() == NO_OUTPUT else output  # OpenCode's placeholder, not the command's
        turn.command(args.get("command"), code if isinstance(code, int) else 0, shown)
    elif name in ("apply_patch", "patch") and isinstance(args.get("patchText"), str):
        for action, path in _PATCH_FILE.findall(args["patchText"]):
            turn.file("created" if action == "Add" else "edited", path.strip())
    elif name == "todowrite" and isinstance(args.get("todos"), list):
        turn.set_todos([(t.get("content"), t.get("status")) for t in args["todos"] if isinstance(t, dict)])
