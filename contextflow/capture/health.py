"""Capture health per client, from the machine-local capture state (`<store state>/capture/`):
turns stored, transcript lines skipped (too long) or unreadable (bad), transcripts read, the
last error with its time, and the transcripts the sweep refused (`not_swept`: a FIFO, a folder, a
link out of the client's folder, unreadable, too large; `capture/sweep.py`). For `doctor` and the
page's health view; reads at most MAX_FILES state files, the newest first, each through the same
guarded reader as the hook (never blocks).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from contextflow.capture.transcript import load_state

MAX_FILES = 2_000


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def capture_health(state_dir: Path) -> list[dict[str, Any]]:
    """One row per client, most turns first: `{client, transcripts, turns, skipped, bad,
    last_error, last_error_at}` (`last_error` None when it never failed), and `not_swept` (each
    transcript the last sweep refused, with why) when there is one."""
    folder = state_dir / "capture"
    try:
        entries = [e for e in os.scandir(folder) if e.name.endswith(".json") and e.is_file(follow_symlinks=False)]
    except OSError:
        entries = []
    entries.sort(key=lambda entry: entry.stat(follow_symlinks=False).st_mtime, reverse=True)
    rows: dict[str, dict[str, Any]] = {}
    for entry in entries[:MAX_FILES]:
        state = load_state(Path(entry.path))
        named = state.get("client")
        row = _row(rows, named[:64] if isinstance(named, str) else "unknown")
        row["transcripts"] += 1
        for name, key in (("turns", "stored"), ("skipped", "skipped"), ("bad", "bad")):
            row[name] += _count(state.get(key))
        at = state.get("last_error_at")
        if isinstance(state.get("last_error"), str) and isinstance(at, str) and at > row.get("last_error_at", ""):
            row["last_error"], row["last_error_at"] = state["last_error"][:300], at
    from contextflow.capture.sweep import problems

    for path, why in problems(state_dir).items():
        if isinstance(why, list) and len(why) == 2 and all(isinstance(part, str) for part in why):
            _row(rows, why[0][:64]).setdefault("not_swept", []).append(f"{path[:500]}: {why[1][:300]}")
    return sorted(rows.values(), key=lambda row: (-row["turns"], row["client"]))


def _row(rows: dict[str, dict[str, Any]], client: str) -> dict[str, Any]:
    return rows.setdefault(
        client, {"client": client, "transcripts": 0, "turns": 0, "skipped": 0, "bad": 0, "last_error": None}
    )


def health_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The rows as doctor prints them."""
    if not rows:
        return ["capture:      nothing captured on this machine yet"]
    lines = ["capture:"]
    for row in rows:
        line = (
            f"  {row['client']}: {row['turns']} turns stored from {row['transcripts']} transcript(s), "
            f"{row['skipped']} lines skipped, {row['bad']} unreadable"
        )
        if row["last_error"]:
            line += f"; last error {row['last_error_at']}: {row['last_error']}"
        lines.append(line)
        lines += [f"    not swept: {item}" for item in row.get("not_swept", [])]
    return lines
