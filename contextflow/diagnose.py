"""What `contextflow doctor` and the info resource report about a store."""

from __future__ import annotations

import os
import stat
from typing import Any

from contextflow.app import App
from contextflow.log import iter_quarantine


def store_info(app: App) -> dict[str, Any]:
    from contextflow.sessions import active_session

    store = app.store
    health = store.health()
    location = store.location
    writers: dict[str, int] = {}
    for segment in health.segments:
        if not segment.legacy:
            writers[segment.writer] = writers.get(segment.writer, 0) + 1
    return {
        "store": str(store.folder),
        "chosen_by": location.rule,
        "chosen_detail": location.detail or None,
        "writer": store.writer,
        "state_dir": str(store.state_dir),
        "active_session": active_session(app),
        "active_session_file": str(app.settings.active_session_file),
        "default_project": app.settings.default_project,
        "events": store.event_count,
        "duplicate_events_ignored": store.duplicates,
        "bad_lines": health.bad_line_count,
        "bad_line_samples": [vars(report) for report in health.bad_lines[:10]],
        "logs": [
            {
                "file": str(segment.path),
                "writer": segment.writer,
                "events": segment.events,
                "bad_lines": segment.bad_lines,
                "legacy": segment.legacy,
                "conflict_copy": segment.conflict_copy,
            }
            for segment in health.segments
        ],
        "quarantined_fragments": [str(path) for path in iter_quarantine(store.folder)],
    }


def problems(info: dict[str, Any]) -> list[str]:
    """Plain-language findings that need a person's attention (conflict copies: conflicts.findings)."""
    found: list[str] = []
    if info["bad_lines"]:
        found.append(f"{info['bad_lines']} malformed line(s) were skipped (see bad_line_samples); the rest reads fine")
    if info["quarantined_fragments"]:
        found.append(f"{len(info['quarantined_fragments'])} torn line fragment(s) were quarantined after a crash")
    try:
        mode = stat.S_IMODE(os.stat(info["store"]).st_mode)
        if mode & 0o077:
            found.append(f"the store folder is readable by other users (mode {mode:o}); chmod 700 it")
    except FileNotFoundError:
        found.append("the store folder does not exist yet; it is created on the first write")
    return found
