"""Where each client keeps its records of this repository's sessions, for the sweep (`capture/sweep.py`).

- Claude Code: `${CLAUDE_CONFIG_DIR:-~/.claude}/projects/<working folder, each character not a letter
  or digit as "-">/<session id>.jsonl`, for the working folder and the repository root;
- Codex: `${CODEX_HOME:-~/.codex}/sessions/YYYY/MM/DD/rollout-*.jsonl`, the newest DAYS day folders,
  a rollout when its `session_meta` names a folder inside the repository;
- Gemini CLI: `${GEMINI_CLI_HOME:-~}/.gemini/tmp/<folder>/chats/session-*.jsonl`, the folder named by
  the project's hash or its name, a chat when its header's `projectHash` is the hash of the working
  folder or the repository root (the whole-document `.json` chats of old versions are not read).

Each gives the NEWEST, as `Found` (the path as the client names it in its hooks' payloads, so the
capture state the hooks keep is the same, and the file's signature). A FIFO, a device, a folder, a link
out of the client's folder or a file that cannot be read is put in `problems`, never opened. A first
line is read once per file (at most MAX_HEADS a call, MAX_HEAD bytes): its answer is kept in `heads`.
Stdlib only: a hook pays nothing to import it.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from itertools import islice
from pathlib import Path
from typing import Any, NamedTuple

from contextflow.core import hashing, regexes

NEWEST = 4  # transcripts of each client looked at, newest first
MAX_LISTED = 2_000  # folder entries listed per folder
DAYS = 3  # Codex's newest day folders
MAX_HEADS = 16  # first lines read per call (each transcript's once)
MAX_HEAD = 256 << 10  # bytes of a first line read
_NOT_NAME = regexes.compile(r"[^A-Za-z0-9]")


class Found(NamedTuple):
    client: str
    path: str  # as the client names it in its hooks' payloads (the capture state is keyed on it)
    session_id: str | None  # None: read from its first line
    signature: list[int]  # [inode, size, mtime in ns]


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def _listed(folder: str, problems: dict[str, list[str]], client: str, keep: Callable[[str], bool]) -> Iterator[Found]:
    """The regular files of `folder` whose names `keep` takes (a link only when it stays inside the
    folder); a FIFO, a device, a folder or a link out of it is named in `problems`, never opened."""
    try:
        entries = os.scandir(folder)
    except OSError:
        return
    real = os.path.realpath(folder)
    with entries:
        for number, entry in enumerate(entries):
            if number >= MAX_LISTED:
                break
            if not keep(entry.name):
                continue
            path = os.path.join(folder, entry.name)
            try:
                if entry.is_symlink():
                    target = os.path.realpath(path)
                    if os.path.dirname(target) != real:
                        problems[path] = [client, "a link out of the client's folder: not read"]
                        continue
                info = os.stat(path)
            except OSError as exc:
                problems[path] = [client, f"unreadable: {exc.strerror or exc}"]
                continue
            if not stat.S_ISREG(info.st_mode):
                kind = (
                    "a folder"
                    if stat.S_ISDIR(info.st_mode)
                    else "a FIFO"
                    if stat.S_ISFIFO(info.st_mode)
                    else "a device"
                )
                problems[path] = [client, f"{kind}, not a transcript: not read"]
                continue
            yield Found(client, path, None, [info.st_ino, info.st_size, info.st_mtime_ns])


def _newest(found: Iterator[Found] | list[Found], count: int = NEWEST) -> list[Found]:
    return sorted(found, key=lambda item: item.signature[2], reverse=True)[:count]


def claude(env: Mapping[str, str], cwd: str, root: str, problems: dict[str, list[str]]) -> list[Found]:
    base = env.get("CLAUDE_CONFIG_DIR") or os.path.join(_home(env), ".claude")
    found: list[Found] = []
    for folder in dict.fromkeys([cwd, root]):
        where = os.path.join(base, "projects", _NOT_NAME.sub("-", folder))
        kept = _listed(
            where, problems, "claude-code", lambda name: name.endswith(".jsonl") and not name.startswith("agent-")
        )
        found += [item._replace(session_id=Path(item.path).stem) for item in kept]
    return _newest(found)


def _inside(folder: Any, root: str) -> bool:
    return isinstance(folder, str) and (folder == root or folder.startswith(root.rstrip("/") + "/"))


def _head(path: str) -> dict[str, Any]:
    """A transcript's first line as JSON ({} when it is not an object or is longer than MAX_HEAD)."""
    from contextflow.capture.read_position import open_regular

    with open_regular(path) as handle:
        line = handle.readline(MAX_HEAD)
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _ours(
    items: list[Found],
    heads: dict[str, Any],
    problems: dict[str, list[str]],
    belongs: Callable[[dict[str, Any]], str | None],
) -> list[Found]:
    """The items whose first line says they are this repository's (`belongs`: their session id, or None),
    newest first; a first line is read once per file (the answer is kept in `heads`)."""
    ours: list[Found] = []
    read = 0
    for item in _newest(items, MAX_LISTED):
        head = heads.get(item.path)
        if not (isinstance(head, list) and len(head) == 2 and head[0] == item.signature[0]):
            if read >= MAX_HEADS:
                continue
            read += 1
            try:
                session = belongs(_head(item.path))
            except OSError as exc:
                problems[item.path] = [item.client, f"unreadable: {exc.strerror or exc}"]
                continue
            head = heads[item.path] = [item.signature[0], session or ""]
        if head[1]:
            ours.append(item._replace(session_id=head[1]))
            if len(ours) == NEWEST:
                break
    return ours


def codex(env: Mapping[str, str], root: str, heads: dict[str, Any], problems: dict[str, list[str]]) -> list[Found]:
    base = os.path.join(env.get("CODEX_HOME") or os.path.join(_home(env), ".codex"), "sessions")
    days: list[str] = []
    for year in _dated(base, 4):
        for month in _dated(year, 2):
            days += _dated(month, 2)[: DAYS - len(days)]
            if len(days) >= DAYS:
                break
        if len(days) >= DAYS:
            break
    items = [item for day in days for item in _listed(day, problems, "codex", _rollout)]

    def belongs(head: dict[str, Any]) -> str | None:
        meta = head.get("payload") if head.get("type") == "session_meta" else None
        if isinstance(meta, dict) and _inside(meta.get("cwd"), root):
            session = meta.get("id") or meta.get("session_id")
            return session if isinstance(session, str) and 0 < len(session) <= 256 else None
        return None

    return _ours(items, heads, problems, belongs)


def _rollout(name: str) -> bool:
    return name.startswith("rollout-") and name.endswith(".jsonl")


def _dated(folder: str, width: int) -> list[str]:
    """The subfolders of `folder` named by `width` digits, newest (largest) first."""
    try:
        with os.scandir(folder) as entries:
            names = [e.name for e in islice(entries, MAX_LISTED) if len(e.name) == width and e.name.isdigit()]
    except OSError:
        return []
    return [os.path.join(folder, name) for name in sorted(names, reverse=True)]


def gemini(
    env: Mapping[str, str], cwd: str, root: str, heads: dict[str, Any], problems: dict[str, list[str]]
) -> list[Found]:
    base = os.path.join(env.get("GEMINI_CLI_HOME") or _home(env), ".gemini", "tmp")
    hashes = {hashing.sha256(folder.encode("utf-8", "surrogatepass")).hexdigest() for folder in (cwd, root)}
    names = {os.path.basename(folder).lower() for folder in (cwd, root)}
    try:
        with os.scandir(base) as entries:
            folders = [e.name for e in islice(entries, MAX_LISTED) if e.name in hashes or _named(e.name, names)]
    except OSError:
        return []
    items = [
        item for name in folders for item in _listed(os.path.join(base, name, "chats"), problems, "gemini-cli", _chat)
    ]

    def belongs(head: dict[str, Any]) -> str | None:
        session = head.get("sessionId")
        if head.get("projectHash") in hashes and isinstance(session, str) and 0 < len(session) <= 256:
            return session
        return None

    return _ours(items, heads, problems, belongs)


def _named(name: str, names: set[str]) -> bool:
    lower = name.lower()
    return lower in names or any(lower.startswith(f"{known}-") and lower[len(known) + 1 :].isdigit() for known in names)


def _chat(name: str) -> bool:
    return name.startswith("session-") and name.endswith(".jsonl")
