"""The sessions index sidecar: session summaries and recent entries in a small JSON file.

It lets a new process answer `list_sessions`, the resume_N prompts, the picker and the common
first reads (`read_shared_context`, `resume_session`, `get_latest_handoff`) without folding
or loading the whole store, as ContextFlowMCP's index did. It is machine-local (never in the
synced folder), keyed on the signature of every log it summarizes, and rewritten when stale;
deleting it is safe. A read the tails cannot prove complete falls back to the full view.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from weakref import WeakKeyDictionary

import orjson

from contextflow.core.errors import StoreError
from contextflow.core.events import Event, decode, encode
from contextflow.core.fields import Schema, conform
from contextflow.core.fsutil import atomic_write, read_regular
from contextflow.core.segments import code_fingerprint
from contextflow.core.store import Store
from contextflow.sessions.view import Marks, SessionsState, SessionSummary, SessionsView

INDEX_FORMAT = 5
FILE_NAME = "sessions-index.json"
PROJECT_TAIL = 200  # recent entries kept per project (the largest `limit` a read accepts)
SESSION_TAIL = 20  # recent entries kept per session (the default `limit`)
MIN_INTERVAL_S = 5.0

Signatures = dict[str, tuple[int, int, int, int]]


@dataclass(frozen=True)
class Tail:
    """The most recent entries of a project or session, oldest first; `complete` when it holds all."""

    entries: list[Event]
    complete: bool


@dataclass(frozen=True)
class SessionsIndex:
    sessions: dict[str, list[SessionSummary]]  # per project, most recent first
    tails: dict[tuple[str, str], Tail]  # per (project, session id); session "" is the whole project
    latest_handoffs: dict[tuple[str, str], Event]  # none marked wrong
    bad_lines: int
    wrong: Marks

    def tail(self, project: str, session_id: str | None = None) -> Tail:
        return self.tails.get((project, session_id or ""), Tail([], True))


def index_path(store: Store) -> Path:
    return store.state_dir / FILE_NAME


_path = index_path


def _summary(record: dict[str, Any]) -> SessionSummary:
    keys = {name: tuple(record[name]) for name in ("latest_key", "task_key", "handoff_key")}
    return SessionSummary(**{**record, **keys, "agents": set(record["agents"])})


def _lines(events: list[Event]) -> list[str]:
    return [encode(event)[:-1].decode() for event in events]


def _decode(line: str, schema: Schema) -> Event:
    """An entry as saved; its fields conformed again (core/fields.py), as a sidecar is a file like any other."""
    event = decode(line.encode())
    data, dropped = conform(schema, event.kind, event.data)
    return Event(event.id, event.writer, event.seq, event.hlc, event.kind, data) if dropped else event


def usable(store: Store) -> SessionsIndex | None:
    """The sidecar when it may answer instead of the fold: in a process that has not folded the
    store yet (a fold is as cheap to ask and always current), and only while it matches the logs.
    The one place that chooses between the two."""
    return None if store.loaded else load(store)


def load(store: Store) -> SessionsIndex | None:
    """The index, when the sidecar matches every log on disk now; else None."""
    if not store.shares_state:
        return None
    current = store.current_signatures()
    cached = _loaded.get(store)
    if cached is not None and cached[0] == current:
        return cached[1]
    try:
        saved = orjson.loads(read_regular(_path(store)))
        if saved["format"] != INDEX_FORMAT or saved["code"] != code_fingerprint():
            return None
        if saved["logs"] != {path: list(sig) for path, sig in current.items()}:
            return None
        schema = store.fields
        index = SessionsIndex(
            sessions={p: [_summary(r) for r in records] for p, records in saved["projects"].items()},
            tails={
                (p, s): Tail([_decode(line, schema) for line in lines], done) for p, s, lines, done in saved["tails"]
            },
            latest_handoffs={(p, s): _decode(line, schema) for p, s, line in saved["latest_handoffs"]},
            bad_lines=saved["bad_lines"],
            wrong={(p, s, h): note for p, s, h, note in saved["wrong"]},
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    _loaded[store] = (current, index)
    return index


def save(store: Store, state: SessionsState) -> None:
    """Write the sidecar for the state as folded now (atomically, 0600; failures are harmless:
    the sidecar is an optimisation, so no stored line, however odd, can fail a command here)."""
    if not store.shares_state:
        return
    with contextlib.suppress(Exception):
        atomic_write(_path(store), orjson.dumps(_record(store, state)), fsync=False)


def _record(store: Store, state: SessionsState) -> dict[str, Any]:
    tails: list[list[Any]] = [
        [project, "", _lines(entries[-PROJECT_TAIL:]), len(entries) <= PROJECT_TAIL]
        for project, entries in state.by_project.items()
    ]
    handoffs: list[list[str]] = []
    for (project, session_id), entries in state.by_session.items():
        tails.append([project, session_id, _lines(entries[-SESSION_TAIL:]), len(entries) <= SESSION_TAIL])
        handoff = next((e for e in reversed(entries) if e.kind == "handoff" and not state.is_wrong(e)), None)
        if handoff is not None:
            handoffs.append([project, session_id, _lines([handoff])[0]])
    return {
        "format": INDEX_FORMAT,
        "code": code_fingerprint(),
        "logs": store.signatures(),
        "projects": {
            p: [{**vars(s), "agents": sorted(s.agents)} for s in state.recent_sessions(p)] for p in state.summaries
        },
        "tails": tails,
        "latest_handoffs": handoffs,
        "bad_lines": store.bad_line_count,
        "wrong": [[*mark, note] for mark, note in state.wrong.items()],
    }


def check(store: Store, state: SessionsState) -> bool | None:
    """Whether the sidecar (when one matches the logs' signatures) says what `state`, a fresh fold of
    the logs, says; one that does not (forged or damaged) is deleted. None: no sidecar to check."""
    try:
        saved = orjson.loads(read_regular(_path(store)))
        if saved["logs"] != {path: list(sig) for path, sig in store.current_signatures().items()}:
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    fresh = orjson.loads(orjson.dumps(_record(store, state)))
    same = all(_same(saved.get(name), fresh[name]) for name in ("projects", "tails", "latest_handoffs", "wrong"))
    if not same:
        _path(store).unlink(missing_ok=True)
        _loaded.pop(store, None)
    return same


def _same(saved: Any, fresh: Any) -> bool:
    """Equal up to the order of projects and sessions (a fold's dict order follows arrival)."""
    if isinstance(fresh, list):
        return isinstance(saved, list) and sorted(map(orjson.dumps, saved)) == sorted(map(orjson.dumps, fresh))
    return bool(saved == fresh)


def save_if_stale(store: Store, state: SessionsState, force: bool = False) -> None:
    """Rewrite the sidecar when the logs moved on since this process last wrote it: at most every
    few seconds (the hot path stays cheap), or now with `force` (on close)."""
    signatures = store.signatures()
    last = _written.get(store)
    if last is not None and (last[0] == signatures or (not force and time.monotonic() - last[1] < MIN_INTERVAL_S)):
        return
    save(store, state)
    _written[store] = (signatures, time.monotonic())


def save_on_close(store: Store) -> None:
    """The sidecar brought up to date when the process closes the store (`Feature.on_close`)."""
    with contextlib.suppress(StoreError):  # a view that cannot be read now (a legacy file too large)
        save_if_stale(store, store.view(SessionsView), force=True)


_written: WeakKeyDictionary[Store, tuple[Signatures, float]] = WeakKeyDictionary()
_loaded: WeakKeyDictionary[Store, tuple[Signatures, SessionsIndex]] = WeakKeyDictionary()
