"""`contextflow compact`: rewrite this writer's own log (never another's) without the events no projection needs.

An event goes only when every projection (and the search index) agrees it is unneeded (`Projection.unneeded`,
`scan.Unneeded`: superseded by a later event *in this log*, which travels with it in the atomic rename, since
other writers' events may order anywhere), and is reduced to a few data fields when one still needs it to
exist (an overwritten record still counts as a version); one that cannot answer keeps everything.
Besides: a reduced event keeps its `project` (scoped readers filter on it), unreadable lines and a torn
last line are kept byte for byte, a repeated event id is kept once, and this writer's newest event always
stays (its sequence number and clock carry on).

The rewrite is atomic (temp file, fsync, rename, folder fsync) under this writer's lock; another
machine sees the file no longer continues what it read and rebuilds from it, converging on the same
rows with nothing lost or revived. The old generation may be archived (gzip) outside the synced store.
"""

from __future__ import annotations

import gzip
import os
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextflow.core.errors import InputError
from contextflow.core.events import Event, decode_lines, encode
from contextflow.core.fsutil import fsync_folder, signature
from contextflow.core.log import read_whole, replace_log
from contextflow.core.scan import BOUND_KIND, Unneeded
from contextflow.core.store import Store

ARCHIVE_DIR = "archive"
SCOPING_FIELDS = ("project",)  # kept in every reduced event: what project scopes (HTTP grants) filter on


@dataclass
class CompactReport:
    log: str
    dry_run: bool
    lines_before: int = 0
    lines_after: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    dropped: Counter[str] = field(default_factory=Counter)  # kind -> events dropped
    reduced: Counter[str] = field(default_factory=Counter)  # kind -> events kept with fewer fields
    duplicates: int = 0
    kept_unreadable: int = 0
    blocked_by: list[str] = field(default_factory=list)  # projections that cannot tell what they no longer need
    archive: str | None = None

    @property
    def changed(self) -> bool:
        return bool(self.dropped or self.reduced or self.duplicates)

    def as_dict(self) -> dict[str, Any]:
        return {
            "log": self.log,
            "dry_run": self.dry_run,
            "changed": self.changed,
            "lines_before": self.lines_before,
            "lines_after": self.lines_after,
            "bytes_before": self.bytes_before,
            "bytes_after": self.bytes_after,
            "dropped": dict(sorted(self.dropped.items())),
            "reduced": dict(sorted(self.reduced.items())),
            "duplicates_removed": self.duplicates,
            "unreadable_lines_kept": self.kept_unreadable,
            "blocked_by": self.blocked_by,
            "archive": self.archive,
        }


def default_archive_dir(store: Store) -> Path:
    return store.state_dir / ARCHIVE_DIR


Deciders = Mapping[str, Unneeded | None]  # by projection name: what it can do without (None: it cannot tell)


def verdicts(deciders: Deciders, events: list[Event]) -> tuple[dict[str, tuple[str, ...] | None], list[str]]:
    """Per event id: None to drop it, or the data fields to reduce it to (absent ids stay whole); and
    the names of projections that cannot answer (they keep everything)."""
    blocked = [name for name, unneeded in deciders.items() if unneeded is None]
    if blocked or not events:
        return {}, blocked
    answers = [unneeded(events) for unneeded in deciders.values() if unneeded is not None]
    found: dict[str, tuple[str, ...] | None] = {}
    for event in events:
        if all(event.id in answer for answer in answers):
            keep = sorted({name for answer in answers for name in answer[event.id]})
            found[event.id] = tuple(keep) if keep else None
    return found, blocked


def _newest_own(events: list[Event], writer: str) -> set[str]:
    own = [event for event in events if event.writer == writer]
    return {max(own, key=lambda e: e.seq).id, max(own, key=lambda e: e.key).id} if own else set()


def plan(
    deciders: Deciders, writer: str, lines: list[tuple[bytes, Event | None]], report: CompactReport
) -> list[bytes]:
    """The lines of `writer`'s compacted log, in their original order, as `deciders` decide; fills in `report`."""
    first: dict[str, Event] = {}  # each id's first line
    for _, event in lines:
        if event is not None:
            first.setdefault(event.id, event)
    events = list(first.values())
    decided, report.blocked_by = verdicts(deciders, events)
    for event_id in _newest_own(events, writer):
        decided.pop(event_id, None)
    for event in events:
        if event.kind == BOUND_KIND:  # no projection asks for a bound, and every reader needs it
            decided.pop(event.id, None)
    out: list[bytes] = []
    for raw, event in lines:
        if event is None:
            report.kept_unreadable += 1
            out.append(raw)
            continue
        if first[event.id] is not event:
            report.duplicates += 1
            continue
        if event.id not in decided:
            out.append(raw)
            continue
        fields = decided[event.id]
        if fields is None:
            report.dropped[event.kind] += 1
            continue
        kept = (*fields, *SCOPING_FIELDS)  # a reduced event stays in its project for scoped readers
        data = {name: event.data[name] for name in kept if name in event.data}
        if data == event.data:
            out.append(raw)
            continue
        report.reduced[event.kind] += 1
        out.append(encode(event._replace(data=data)).rstrip(b"\n"))
    return out


def archive_old(path: Path, data: bytes, folder: Path) -> Path:
    """A gzip copy of the old generation, written and fsynced before the log is replaced."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = folder / f"{path.name}.{stamp}.{time.time_ns() % 1_000_000_000}.gz"
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as packed:
        packed.write(data)
        packed.flush()
        raw.flush()
        os.fsync(raw.fileno())
    fsync_folder(folder)
    return target


def compact(store: Store, deciders: Deciders, *, archive: Path | None = None, dry_run: bool = False) -> CompactReport:
    """Rewrite this writer's own log without what none of `deciders` needs (every projection, the search
    index included: `App.unneeded()`); see the module docstring."""
    path = store.log_writer.path
    report = CompactReport(str(path), dry_run)
    if archive is not None and archive.resolve().is_relative_to(store.folder.resolve()):
        raise InputError(
            f"the archive folder {archive} is inside the synced store; choose a folder outside it "
            f"(the default is {default_archive_dir(store)})"
        )
    with store.log_writer.locked():
        before = signature(path)
        if before is None:
            return report
        old, numbered, tail = read_whole(path)
        lines = decode_lines(numbered)
        kept = plan(deciders, store.writer, lines, report)
        new = b"".join(raw + b"\n" for raw in kept) + tail
        report.lines_before, report.lines_after = len(lines), len(kept)
        report.bytes_before, report.bytes_after = len(old), len(new)
        if dry_run or not report.changed:
            if not report.changed:
                report.bytes_after = report.bytes_before
            return report
        if archive is not None:
            report.archive = str(archive_old(path, old, archive))
        replace_log(path, new, before)
        store.refresh()
    return report
