"""Sync-conflict copies and duplicate writer ids: what `doctor` reports and `doctor --fix` repairs.

Syncthing never merges: when two devices change one file it keeps one and renames the other
`<name>.sync-conflict-<date>-<time>-<device>.<ext>`. With one log per writer that happens
only when two machines share a writer id (a cloned machine or copied state folder) or when
someone copies a log by hand. Readers already read such copies as extra segments and apply
each event id once, so nothing is lost; these functions make it visible and tidy it up.

`fix` folds every event that exists only in a copy into this writer's own log (lines copied
verbatim: id, writer, seq and clock unchanged), re-reads the logs from disk, and removes a
copy only when every event in it is found in a log that is not a copy. A copy with lines
that cannot be read (or a torn last line) is kept and reported, never removed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextflow.app import App
from contextflow.events import LEGACY_WRITER, BadLine, decode
from contextflow.log import read_new, remove_conflict_copy
from contextflow.store import Segment, Store

FIX_HINT = "`contextflow doctor --fix` folds them into this machine's log and removes each copy once verified"


@dataclass(frozen=True)
class CopyContents:
    path: Path
    lines: dict[str, bytes]  # event id -> its line, first occurrence
    unreadable: int  # bad lines plus a torn (unterminated) last line


@dataclass(frozen=True)
class CopyReport:
    file: str
    writer: str
    events: int
    only_here: int  # events found in no log that is not a copy
    unreadable: int


@dataclass(frozen=True)
class DuplicateWriter:
    writer: str
    events: int
    last_seq: int


@dataclass
class FixReport:
    folded_events: int = 0
    removed: list[str] = field(default_factory=list)
    kept: dict[str, str] = field(default_factory=dict)  # file -> why it was kept

    def as_dict(self) -> dict[str, Any]:
        return {"folded_events": self.folded_events, "removed": self.removed, "kept": self.kept}

    def lines(self) -> list[str]:
        found = [f"fix:          folded {self.folded_events} event(s) into this writer's log"]
        found += [f"  removed {name} (every event verified in the logs)" for name in self.removed]
        found += [f"  kept {name}: {why}" for name, why in self.kept.items()]
        return found


def read_copy(path: Path) -> CopyContents:
    chunk = read_new(path, None)
    lines: dict[str, bytes] = {}
    unreadable = 0
    for line_no, raw in chunk.lines:
        try:
            event = decode(raw, line_no)
        except BadLine:
            unreadable += 1
            continue
        lines.setdefault(event.id, raw)
    if chunk.cursor.offset < chunk.cursor.size:
        unreadable += 1
    return CopyContents(path, lines, unreadable)


def _copies(store: Store) -> list[Segment]:
    return [segment for segment in store.health().segments if segment.conflict_copy]


def _ids_outside_copies(store: Store) -> set[str]:
    """Every event id in the logs that are not conflict copies, read from disk now."""
    found: set[str] = set()
    for segment in store.health().segments:
        if not segment.conflict_copy:
            try:
                found.update(read_copy(segment.path).lines)
            except FileNotFoundError:
                continue
    return found


def conflict_copies(app: App) -> list[CopyReport]:
    copies = _copies(app.store)
    if not copies:
        return []
    present = _ids_outside_copies(app.store)
    reports = []
    for segment in copies:
        contents = read_copy(segment.path)
        only_here = sum(1 for event_id in contents.lines if event_id not in present)
        reports.append(
            CopyReport(str(segment.path), segment.writer, len(contents.lines), only_here, contents.unreadable)
        )
    return reports


def duplicate_writers(app: App) -> list[DuplicateWriter]:
    """Writer ids with more events than their highest sequence number: two machines used them."""
    return [
        DuplicateWriter(writer, count, last)
        for writer, (count, last) in sorted(app.store.writer_counts().items())
        if writer != LEGACY_WRITER and count > last
    ]


def findings(app: App) -> list[str]:
    """Plain-language problems about conflict copies and shared writer ids, for `doctor`."""
    found = []
    copies = conflict_copies(app)
    if copies:
        only_here = sum(report.only_here for report in copies)
        unreadable = sum(report.unreadable for report in copies)
        detail = f"; {unreadable} line(s) in them are unreadable" if unreadable else ""
        found.append(
            f"{only_here} event(s) exist only in sync-conflict copies (they are read, not lost){detail}; {FIX_HINT}"
        )
    for dup in duplicate_writers(app):
        mine = " (this machine)" if dup.writer == app.store.writer else ""
        found.append(
            f"writer id {dup.writer}{mine} was used by more than one machine: {dup.events} events but the "
            f"highest sequence number is {dup.last_seq}. Give each machine its own CONTEXTFLOW_WRITER (or delete "
            "the writer-id file in the state folder on the cloned machine); the events already written are kept"
        )
    return found


def fix(app: App) -> FixReport:
    """Fold conflict copies into this writer's log; remove each only once all its events are verified."""
    store = app.store
    report = FixReport()
    with store.log_writer.locked():
        store.refresh()
        copies = _copies(store)
        if not copies:
            return report
        present = _ids_outside_copies(store)
        contents = [read_copy(segment.path) for segment in copies]
        for copy in contents:
            missing = [raw for event_id, raw in copy.lines.items() if event_id not in present]
            if missing:
                store.log_writer.append(b"\n".join(missing) + b"\n")
                present.update(copy.lines)
                report.folded_events += len(missing)
        store.refresh()
        verified = _ids_outside_copies(store)  # from disk again: trust only what reads back
        for copy in contents:
            name = str(copy.path)
            absent = [event_id for event_id in copy.lines if event_id not in verified]
            if copy.unreadable:
                report.kept[name] = f"{copy.unreadable} unreadable line(s); inspect it by hand, then delete it"
            elif absent:
                report.kept[name] = f"{len(absent)} event(s) could not be verified in the logs"
            else:
                remove_conflict_copy(copy.path)
                report.removed.append(name)
        store.refresh()
    return report
