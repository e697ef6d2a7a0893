"""Sync-conflict copies and duplicate writer ids: what `doctor` reports and `doctor --fix` repairs.

Syncthing keeps one version of a file two devices changed and renames the other
`<name>.sync-conflict-<date>-<time>-<device>.<ext>`; with one log per writer that happens only
when two machines share a writer id or a log is copied by hand. Readers already read copies as
extra segments, applying each event id once, so nothing is lost. `fix` appends the events found
only in a copy to this writer's log (lines verbatim), re-reads the logs from disk, and removes a
copy only when every event in it is found in a log that is not a copy; a copy with unreadable
lines (or a torn last line) is kept and reported.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextflow.core.batches import End, Stated
from contextflow.core.events import LEGACY_WRITER, BadLine, decode, decode_lines
from contextflow.core.log import read_whole, remove_conflict_copy
from contextflow.core.store import Store

FIX_HINT = "`contextflow doctor --fix` folds them into this machine's log and removes each copy once verified"


@dataclass(frozen=True)
class CopyContents:
    path: Path
    lines: dict[str, bytes]  # event id -> its line, first occurrence
    unreadable: int  # bad lines plus a torn (unterminated) last line


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
    _, numbered, torn = read_whole(path)
    decoded = decode_lines(numbered)
    lines: dict[str, bytes] = {}
    for raw, event in decoded:
        if event is not None:
            lines.setdefault(event.id, raw)
    return CopyContents(path, lines, sum(event is None for _, event in decoded) + bool(torn))


def _ids_outside_copies(store: Store) -> set[str]:
    """Every event id in the logs that are not conflict copies, read from disk now."""
    found: set[str] = set()
    for segment in store.health().segments:
        if not segment.conflict_copy:
            with contextlib.suppress(FileNotFoundError):
                found.update(read_copy(segment.path).lines)
    return found


def _read_copies(store: Store) -> tuple[list[CopyContents], set[str]]:
    """The conflict copies' contents and, when there are any, the event ids outside them."""
    copies = [segment.path for segment in store.health().segments if segment.conflict_copy]
    present = _ids_outside_copies(store) if copies else set()
    return [read_copy(path) for path in copies], present


def findings(store: Store) -> list[str]:
    """Plain-language problems about conflict copies and shared writer ids, for `doctor`."""
    found = []
    contents, present = _read_copies(store)
    only_here = sum(len(copy.lines.keys() - present) for copy in contents)
    unreadable = sum(copy.unreadable for copy in contents)
    if only_here or unreadable:  # copies holding nothing new are harmless: `doctor --fix` still removes them
        detail = f"; {unreadable} line(s) in them are unreadable" if unreadable else ""
        found.append(
            f"{only_here} event(s) exist only in sync-conflict copies (they are read, not lost){detail}; {FIX_HINT}"
        )
    for writer, (count, last_seq) in sorted(store.writer_counts().items()):
        if writer == LEGACY_WRITER or count <= last_seq:  # more events than the highest seq: two machines
            continue
        mine = " (this machine)" if writer == store.writer else ""
        found.append(
            f"writer id {writer}{mine} was used by more than one machine: {count} events but the "
            f"highest sequence number is {last_seq}. Give each machine its own CONTEXTFLOW_WRITER (or delete "
            "the writer-id file in the state folder on the cloned machine); the events already written are kept"
        )
    return found


def _after(end: End, lines: list[bytes], writer: str) -> Stated:
    """The log's end after `lines` are appended to it: their seqs and stamps may be older than its own."""
    seq, newest = end.seq, end.newest
    for raw in lines:
        with contextlib.suppress(BadLine):
            event = decode(raw)
            newest = max(newest, event.hlc)
            seq = max(seq, event.seq) if event.writer == writer else seq
    return Stated(seq, newest)


def fix(store: Store) -> FixReport:
    """Fold conflict copies into this writer's log; remove each only once all its events are verified."""
    report = FixReport()
    with store.log_writer.locked():
        store.refresh()
        contents, present = _read_copies(store)
        if not contents:
            return report
        for copy in contents:
            missing = [raw for event_id, raw in copy.lines.items() if event_id not in present]
            if missing:
                end = store.log_writer.end()
                after = _after(end, missing, store.writer)
                store.log_writer.append_lines([raw + b"\n" for raw in missing], end, after)
                present.update(copy.lines)
                report.folded_events += len(missing)
        store.refresh()
        verified = _ids_outside_copies(store)  # from disk again: trust only what reads back
        for copy in contents:
            name = str(copy.path)
            absent = len(copy.lines.keys() - verified)
            if copy.unreadable:
                report.kept[name] = f"{copy.unreadable} unreadable line(s); inspect it by hand, then delete it"
            elif absent:
                report.kept[name] = f"{absent} event(s) could not be verified in the logs"
            else:
                remove_conflict_copy(copy.path)
                report.removed.append(name)
        store.refresh()
    return report
