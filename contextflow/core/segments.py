"""What the store knows about each log it reads (`Segment`) and the health report built from them."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from contextflow.core.events import LEGACY_WRITER
from contextflow.core.log import Cursor, parse_log_name


@dataclass
class Segment:
    path: Path
    writer: str
    conflict_copy: bool
    legacy: bool
    cursor: Cursor | None = None
    events: int = 0
    bad_lines: int = 0
    newest: int = 0  # the highest clock stamp read from this log
    max_seq: int = 0  # the highest seq of the log's own writer read from it
    bad_kinds: dict[str, int] = field(default_factory=dict)  # bad lines by kind of problem
    bad_fields: dict[str, int] = field(default_factory=dict)  # fields left out for their type, by kind.field
    ahead: dict[str, int] = field(default_factory=dict)  # id -> stamp of events read beyond the drift bound
    held: int = 0  # events of a batch at the log's end whose commit is not on disk (not applied; batches.py)
    held_at: int | None = None  # where that batch begins
    torn: int = 0  # lines of torn batches dropped


@dataclass(frozen=True)
class BadLineReport:
    file: str
    line: int
    reason: str


@dataclass
class Health:
    segments: list[Segment] = field(default_factory=list)
    bad_lines: list[BadLineReport] = field(default_factory=list)
    bad_line_count: int = 0
    oversized: dict[str, int] = field(default_factory=dict)  # legacy files not read: over the size limit
    bounded: dict[str, int] = field(default_factory=dict)  # events a bound ordered earlier, per writer
    waiting: dict[str, int] = field(default_factory=dict)  # per log's writer: events ahead beyond the drift
    # bound that no bound names yet (the next write here names them)

    @property
    def bad_fields(self) -> dict[str, int]:
        """Fields left out of events for their type (`core/fields.py`), by `kind.field`, over every log."""
        total: dict[str, int] = {}
        for segment in self.segments:
            for name, count in segment.bad_fields.items():
                total[name] = total.get(name, 0) + count
        return dict(sorted(total.items()))


PROGRESS_BYTES = 8 * 1024 * 1024  # a log with this much new to read is announced to a terminal


def new_segment(path: Path, legacy: bool) -> Segment:
    """What is known of a log before it is read: its writer (from its name) and what it is."""
    if legacy:
        return Segment(path, LEGACY_WRITER, False, True)
    parsed = parse_log_name(path.name)
    writer, conflict = parsed if parsed else (path.name, False)
    return Segment(path, writer, conflict, False)


def much_to_read(path: Path, cursor: Cursor | None) -> str | None:
    """A line for a person at a terminal when `path` has PROGRESS_BYTES or more new to read."""
    try:
        new = os.stat(path).st_size - (cursor.offset if cursor else 0)
    except OSError:
        return None
    if new < PROGRESS_BYTES:
        return None
    return f"reading {new / 1e6:.1f} MB of {path.name} (later reads take only what is new)..."


def bad_kind(reason: str) -> str:
    """The kind of a bad line's problem: its reason up to the first detail."""
    return reason.split(" (", 1)[0].split(":", 1)[0]
