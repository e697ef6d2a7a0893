"""What the store knows about each log it reads (`Segment`) and the health report built from them.

Plain classes and tuples, not dataclasses: every hook call defines them (defining a dataclass costs
about as much as a hook's own work)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from contextflow.core.events import LEGACY_WRITER
from contextflow.core.log import Position, parse_log_name


class Segment:
    """One log as the store knows it: what it is (from its name) and how far it has been read."""

    def __init__(self, path: Path, writer: str, conflict_copy: bool, legacy: bool) -> None:
        self.path = path
        self.writer = writer
        self.conflict_copy = conflict_copy
        self.legacy = legacy
        self.position: Position | None = None
        self.events = 0
        self.bad_lines = 0
        self.newest = 0  # the highest clock stamp read from this log
        self.max_seq = 0  # the highest seq of the log's own writer read from it
        self.bad_kinds: dict[str, int] = {}  # bad lines by kind of problem
        self.bad_fields: dict[str, int] = {}  # fields left out for their type, by kind.field
        self.ahead: dict[str, int] = {}  # id -> stamp of events read beyond the drift bound
        self.held = 0  # events of a batch at the log's end whose commit is not on disk (not applied; batches.py)
        self.held_at: int | None = None  # where that batch begins
        self.torn = 0  # lines of torn batches dropped


class BadLineReport(NamedTuple):
    file: str
    line: int
    reason: str


class Health:
    """The store's health report: its logs, the bad lines read and what was left out or held back."""

    def __init__(
        self,
        segments: list[Segment] | None = None,
        bad_lines: list[BadLineReport] | None = None,
        bad_line_count: int = 0,
        oversized: dict[str, int] | None = None,
        bounded: dict[str, int] | None = None,
        waiting: dict[str, int] | None = None,
    ) -> None:
        self.segments = segments if segments is not None else []
        self.bad_lines = bad_lines if bad_lines is not None else []
        self.bad_line_count = bad_line_count
        self.oversized = oversized if oversized is not None else {}  # legacy files not read: over the size limit
        self.bounded = bounded if bounded is not None else {}  # events a bound ordered earlier, per writer
        # per log's writer: events ahead beyond the drift bound that no bound names yet (the next write here names them)
        self.waiting = waiting if waiting is not None else {}

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


def much_to_read(path: Path, position: Position | None) -> str | None:
    """A line for a person at a terminal when `path` has PROGRESS_BYTES or more new to read."""
    try:
        new = os.stat(path).st_size - (position.offset if position else 0)
    except OSError:
        return None
    if new < PROGRESS_BYTES:
        return None
    return f"reading {new / 1e6:.1f} MB of {path.name} (later reads take only what is new)..."


def bad_kind(reason: str) -> str:
    """The kind of a bad line's problem: its reason up to the first detail."""
    return reason.split(" (", 1)[0].split(":", 1)[0]
