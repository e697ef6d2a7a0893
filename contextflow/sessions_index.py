"""The sessions index sidecar: per-session summaries in a small JSON file beside the snapshot.

It lets `list_sessions`, the resume_N prompts and the picker answer in a new process without
folding or loading the whole store. It is machine-local (never in the synced folder), keyed
on the signature of every log it summarizes, and rewritten when stale; deleting it is safe.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from weakref import WeakKeyDictionary
from typing import Any

import orjson

from contextflow.store import Store, code_fingerprint
from contextflow.views.sessions import SessionsState, SessionSummary

INDEX_FORMAT = 1
FILE_NAME = "sessions-index.json"


def _path(store: Store) -> Path:
    return store.state_dir / FILE_NAME


def _summary_record(summary: SessionSummary) -> dict[str, Any]:
    record = dict(vars(summary))
    record["agents"] = sorted(summary.agents)
    return record


def _summary(record: dict[str, Any]) -> SessionSummary:
    fields = dict(record)
    for key in ("latest_key", "task_key", "handoff_key"):
        fields[key] = tuple(fields[key])
    fields["agents"] = set(fields["agents"])
    return SessionSummary(**fields)


def load(store: Store) -> dict[str, list[SessionSummary]] | None:
    """Sessions per project, most recent first, when the sidecar matches every log on disk."""
    try:
        saved = orjson.loads(_path(store).read_bytes())
        if saved["format"] != INDEX_FORMAT or saved["code"] != code_fingerprint():
            return None
        current = {path: list(sig) for path, sig in store.current_signatures().items()}
        if saved["logs"] != current:
            return None
        return {project: [_summary(r) for r in records] for project, records in saved["projects"].items()}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def save(store: Store, state: SessionsState) -> None:
    """Write the sidecar for the state as folded now (atomically; failures are harmless)."""
    record = {
        "format": INDEX_FORMAT,
        "code": code_fingerprint(),
        "logs": store.signatures(),
        "projects": {project: [_summary_record(s) for s in state.recent_sessions(project)] for project in state.summaries},
    }
    target = _path(store)
    temp = target.with_name(f".{FILE_NAME}.{os.getpid()}.tmp")
    try:
        temp.write_bytes(orjson.dumps(record))
        os.replace(temp, target)
    except OSError:
        temp.unlink(missing_ok=True)


def save_if_stale(store: Store, state: SessionsState, force: bool = False) -> None:
    """Rewrite the sidecar when the logs moved on since this process last wrote it.

    At most every few seconds (the hot path stays cheap), or now with `force` (on close).
    """
    signatures = store.signatures()
    last = _written.get(store)
    if last is not None and (last[0] == signatures or (not force and time.monotonic() - last[1] < MIN_INTERVAL_S)):
        return
    save(store, state)
    _written[store] = (signatures, time.monotonic())


MIN_INTERVAL_S = 5.0
_written: WeakKeyDictionary[Store, tuple[dict[str, tuple[int, int, int, int]], float]] = WeakKeyDictionary()
