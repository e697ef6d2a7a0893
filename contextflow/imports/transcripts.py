"""Past sessions from the clients' own records: Claude Code transcripts and Codex rollouts.

    ~/.claude/projects/<folder>/<session id>.jsonl        (format claude-code)
    ~/.codex/sessions/YYYY/MM/DD/rollout-<...>.jsonl      (format codex)

Each file is one session, read by the same parsers that capture live sessions
(`contextflow.capture`): its turns become `capture.turn` events (the session's activity) and the
digest of them its automatic handoff, exactly as the Stop hook would have stored them, except that
they are dated when the session happened (its last line's time), so an old session does not pose
as the latest one. A turn's id is capture's own (a hash of the session and the turn), so a session
that was also captured live, or imported before, stores nothing again; a session that already has a
handoff (written by the agent, or captured), or that only talked, gets no automatic one. The
project follows the session's working folder (its repository), as for live capture.

A line that is not JSON is an error naming the file and line (nothing of that file is stored), except
a last line cut short without its newline (a client stopped mid-write), which is left out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextflow.app import App
from contextflow.capture import core as capture
from contextflow.capture import transcript
from contextflow.capture.turns import TURN_KIND
from contextflow.core import hashing, jsonio, secrets
from contextflow.core.clock import stamp_from_ms
from contextflow.core.ids import derived_id
from contextflow.core.project import DEFAULT_PROJECT, normalise_remote, project_for
from contextflow.core.timeutil import iso_ms
from contextflow.imports import files as source_files
from contextflow.imports.model import Planned, SourceError

FORMATS = {"claude-code": "claude-code", "codex": "codex"}  # format -> capture's client name
PATTERNS = {"claude-code": "*.jsonl", "codex": "rollout-*.jsonl"}

if TYPE_CHECKING:
    from contextflow.capture.stored import KnownTurns


def looks_like(line: dict[str, Any]) -> str | None:
    """The transcript format a first line belongs to, if any."""
    if line.get("type") == "session_meta":
        return "codex"
    if isinstance(line.get("sessionId"), str) or line.get("type") in ("summary", "queue-operation"):
        return "claude-code"
    return None


def first_line_format(path: Path) -> str | None:
    """The transcript format of a file, judged by its first line."""
    try:
        with source_files.opened(path) as handle:
            first = handle.readline(1 << 20)
        line = jsonio.loads(first)
    except (OSError, SourceError, jsonio.DecodeError):
        return None
    return looks_like(line) if isinstance(line, dict) else None


def detect_folder(root: Path) -> str | None:
    """claude-code or codex when the first transcripts found under `root` are such, else None."""
    for pattern in ("rollout-*.jsonl", "*.jsonl"):
        for path in source_files.walk(root, pattern)[0][:5]:
            if fmt := first_line_format(path):
                return fmt
    return None


def files(root: Path, fmt: str) -> tuple[list[Path], list[SourceError]]:
    """The transcripts under `root`, and those refused (links out of it, special files)."""
    if not root.is_dir():
        return [root], []
    return source_files.walk(root, PATTERNS[fmt])


class _Seen:
    """What one pass over a transcript learns beside its turns: the session, its folder, its last time."""

    def __init__(self) -> None:
        self.session: str | None = None
        self.cwd: str | None = None
        self.meta: dict[str, Any] | None = None  # codex's session_meta payload
        self.last_ms: int | None = None

    def note(self, entry: dict[str, Any]) -> None:
        if self.session is None and isinstance(entry.get("sessionId"), str):
            self.session = entry["sessionId"]
        if self.cwd is None and isinstance(entry.get("cwd"), str):
            self.cwd = entry["cwd"]
        if self.meta is None and entry.get("type") == "session_meta" and isinstance(entry.get("payload"), dict):
            self.meta = entry["payload"]
        ms = iso_ms(entry.get("timestamp"))
        if ms is not None and (self.last_ms is None or ms > self.last_ms):
            self.last_ms = ms

    def session_of(self, fmt: str, path: Path) -> tuple[str, str | None, str | None]:
        """(session id, working folder, project from the record itself) of the file."""
        if fmt == "codex":
            meta = self.meta or {}
            session = meta.get("id") or meta.get("session_id") or path.stem
            git = meta.get("git")
            url = git.get("repository_url") if isinstance(git, dict) else None
            return str(session), meta.get("cwd"), normalise_remote(url) if isinstance(url, str) else None
        return self.session or path.stem, self.cwd, None


def _checked(path: Path, lines: Iterable[bytes], seen: _Seen) -> Iterator[bytes]:
    """Each line (streamed: a transcript of any size is read a line at a time), checked to be a JSON object
    and noted in `seen`; a line that is not is a SourceError naming it, except a last line cut short."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = jsonio.loads(line)
        except jsonio.DecodeError as exc:
            if not line.endswith(b"\n"):  # the last line, no newline after it: a write cut short
                continue
            raise SourceError(path, f"not valid JSON ({exc})", number) from None
        if not isinstance(value, dict):
            raise SourceError(path, "expected a JSON object on this line", number)
        seen.note(value)
        yield line.rstrip(b"\n")


class SessionPlan:
    """What importing one transcript writes: its turns and maybe an automatic handoff, with their stamps."""

    def __init__(self) -> None:
        self.events: list[Planned] = []
        self.stamps: list[int] = []
        self.present = 0
        self.skipped: dict[str, int] = {}


def plan_file(app: App, fmt: str, path: Path, known_turns: KnownTurns | set[str]) -> SessionPlan:
    """One transcript's plan; the file is streamed a line at a time (its size does not bound memory)."""
    from contextflow.capture import digest as digests
    from contextflow.sessions import core as sessions

    plan = SessionPlan()
    seen = _Seen()
    client = FORMATS[fmt]
    counts: dict[str, int] = {}
    with source_files.opened(path) as lines:
        turns = transcript.parser(client)(_checked(path, lines, seen), counts, {})  # type: ignore[arg-type]
    turns = [turn for turn in turns if not turn.continued or turn.has_activity()]
    if not turns:
        plan.skipped["file without turns"] = 1
        return plan
    session_id, cwd, named = seen.session_of(fmt, path)
    root = capture.repo_root(cwd) if cwd and Path(cwd).is_dir() else None
    project = project_for(cwd)[0] if root else named or (project_for(cwd)[0] if cwd else DEFAULT_PROJECT)
    base = {"project": project, "session_id": session_id, "agent": client, "transcript": str(path)}
    stamp = stamp_from_ms(seen.last_ms or int(path.stat().st_mtime * 1000))
    digest: dict[str, Any] = {}
    records = [turn.data(root) for turn in turns[: capture.MAX_SESSION_TURNS]]
    dirty = secrets.suspects(records)  # the rest have nothing to redact: capture.redacted would return them as is
    for index, record in enumerate(records):
        data = capture.redacted(record) if index in dirty else record
        key = capture.turn_id(session_id, data)
        digest = digests.fold(digest, data)
        if key in known_turns:
            plan.present += 1
            continue
        known_turns.add(key)
        event = {**base, "turn_id": key, "turn": data}
        label = f"{session_id} turn {index + 1}: {data.get('request') or '(continued)'}"
        plan.events.append(Planned(derived_id(fmt, "turn", key), TURN_KIND, event, "turn", label[:100]))
        plan.stamps.append(stamp)
    if not digests.has_work(digest):  # it only talked: its turns are stored, no automatic handoff (as live)
        plan.skipped["session that only talked"] = 1
        return plan
    latest = sessions.latest_handoff(app, sessions.EntryFilter(project, session_id=session_id))
    if latest is not None:
        plan.skipped["session that has a handoff"] = 1
        return plan
    handoff = capture.handoff_data(app, digest, base, client, str(path))
    version = hashing.sha256(json.dumps(handoff, sort_keys=True).encode()).hexdigest()
    plan.events.append(
        Planned(derived_id(fmt, "handoff", session_id, version), "handoff", handoff, "handoff", session_id)
    )
    plan.stamps.append(stamp)
    return plan
