"""The store: a folder of logs, appended to and read, the one object the adapters hold.

It folds no view: every read of a view queries the derived tables on disk (`core/tables.py`). What it
reads every log for (`refresh()`: doctor's health, writer counts, duplicates, the clock bounds
a write names) is a `Scan` (`core/scan.py`): each log is stat'ed and only bytes appended since the last
look are read; a file that changed in any other way is scanned again from the start. Nothing is saved.
A write needs only its own log's end (its last seq, newest stamp and a batch a kill cut short), read from
the log's last lines under the writer lock (`batches.log_end`: O(1) in the log's size, whatever the scan
holds or any machine-local state says); the scan catches up when it is read.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import os
import time
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextflow.core import legacy
from contextflow.core.ahead import MAX_AHEAD_TRACKED, horizon, unbounded, waiting
from contextflow.core.batches import End, Stated
from contextflow.core.clock import MAX_HLC, HybridClock
from contextflow.core.errors import StoreError
from contextflow.core.events import BadLine, Event, decode, encode
from contextflow.core.fields import Schema, conform
from contextflow.core.fsutil import Signature, signature
from contextflow.core.ids import new_id
from contextflow.core.locate import Location, locate_store, store_state_dir, writer_id
from contextflow.core.log import LogWriter, last_stamp, list_segments, read_new, unchanged
from contextflow.core.scan import BOUND_KIND, Scan
from contextflow.core.segments import (
    BadLineReport,
    Health,
    Segment,
    bad_kind,
    much_to_read,
    new_segment,
)
from contextflow.core.settings import LEGACY_MAX_BYTES, read

if TYPE_CHECKING:
    from contextflow.core.staged import StagedBatch  # (an import's; not loaded by a read)

MAX_BAD_LINE_REPORTS = 100
BULK_ITEMS = 64  # an append of more items writes with orjson (jsonio.fast)


class Store:
    def __init__(
        self,
        location: Location,
        writer: str,
        state_dir: Path,
        *,
        fields: Schema | Callable[[], Schema] | None = None,
        fsync: bool = False,
        clock: HybridClock | None = None,
        shares_state: bool = True,
        legacy_max_bytes: int = LEGACY_MAX_BYTES,
        secrets: str | None = None,
    ) -> None:
        self.location = location
        self.secrets = secrets  # CONTEXTFLOW_SECRETS of the environment the store was opened with
        self.folder = Path(os.path.realpath(location.folder))  # one store, one lock, however it is reached
        self.writer = writer
        self.state_dir = state_dir
        self.clock = clock or HybridClock()
        self.legacy_max_bytes = legacy_max_bytes  # a ContextFlowMCP file larger than this is not read
        self._fields = fields  # the shape of every field of every kind (a factory until first needed)
        self._writer = LogWriter(self.folder, writer, state_dir / "writer.lock", fsync=fsync)
        # may use the machine-local derived tables (False: a test's store that must neither read nor write them)
        self.shares_state = shares_state
        self.progress: Callable[[str], None] | None = None  # told when a log has much to read (the CLI on a TTY)
        self._listing: tuple[tuple[int | None, ...], list[Path]] | None = None
        self._last_stamps: dict[Path, tuple[Signature | None, int | None]] = {}  # other logs' newest, as last read
        self._collected: list[Event] | None = None  # appends held back by `collecting`
        self._collected_after = 0  # the seq this writer's log ended with when `collecting` began
        self._provisional: Callable[[list[Event]], None] | None = None  # told of each collected append
        self.bytes_read = 0  # log bytes this store read: scanned, or read for what a write needs (its log's end)
        self._reset()

    @classmethod
    def open(cls, env: Mapping[str, str] | None = None, location: Location | None = None, **kwargs: Any) -> Store:
        """The store `env` names (`location`: where a caller already found it, so it is located once)."""
        env = os.environ if env is None else env
        settings = read(env)
        settings.refuse()  # every setting but the server's own (its inbound limits)
        location = location or locate_store(env)
        kwargs.setdefault("legacy_max_bytes", settings.legacy_max_bytes)
        kwargs.setdefault("secrets", settings.secrets)
        folder = location.folder
        return cls(location, writer_id(env), store_state_dir(folder, env), fsync=settings.fsync, **kwargs)

    # -- reading -------------------------------------------------------------------------

    def _reset(self, caps: dict[str, int] | None = None) -> None:
        self._scan_made: Scan | None = None  # made on first read of the logs
        self._caps = caps or {}  # the bounds known before scanning (scan.py)
        self._segments: dict[Path, Segment] = {}
        self._bad: list[BadLineReport] = []
        self._bad_count = 0
        self._oversized: dict[Path, int] = {}
        self._unscanned: tuple[int, int, int, int] | None = None  # own log's signature after writes not scanned

    @property
    def scan(self) -> Scan:
        """What reading the logs found so far (ids, counts per writer, bounds)."""
        if self._scan_made is None:
            self._scan_made = Scan(self._caps)
        return self._scan_made

    @property
    def scanned(self) -> bool:
        """Whether this process read the logs through the scan (a call the derived tables answer never does)."""
        return bool(self._segments)

    @property
    def _stale(self) -> bool:
        """A bound read since lowered an event already counted: the logs need a new scan."""
        return self._scan_made is not None and self._scan_made.stale

    def signatures(self) -> dict[str, tuple[int, int, int, int]]:
        """(device, inode, size, mtime_ns) of every log as scanned (this store's own writes included, scanned
        or not); compare with `current_signatures()`."""
        found = {str(path): segment.position.signature for path, segment in self._segments.items() if segment.position}
        if self._unscanned is not None:
            found[str(self._writer.path)] = self._unscanned
        return found

    def current_signatures(self) -> dict[str, tuple[int, int, int, int]]:
        """The same for the logs as they are on disk now (one stat each, nothing read)."""
        found = {str(path): signature(path) for path in list_segments(self.folder, self.location.legacy_files)}
        return {path: sig for path, sig in found.items() if sig is not None}

    def _segment_paths(self) -> list[Path]:
        """The logs to read. The folders are listed again only when an mtime moved (the store's, a legacy
        .sessions folder's), or is too recent to trust (file times are coarse: two files made in one
        tick share an mtime)."""
        stamp, newest = legacy.listing_stamp(self.folder, self.location.legacy_files)
        cached = self._listing
        if cached is not None and newest is not None and cached[0] == stamp and time.time_ns() - newest > 2_000_000_000:
            return cached[1]
        paths = list_segments(self.folder, self.location.legacy_files)
        self._listing = (stamp, paths)
        return paths

    def _refresh_own_log(self) -> None:
        own = self._writer.path
        if not self._continues(own) or (own not in self._segments and own.exists()) or self._stale:
            self.refresh()

    def refresh(self) -> None:
        paths = self._segment_paths()
        gone = any(path not in paths for path in [*self._segments, *self._oversized])
        if gone or not all(map(self._continues, paths)) or self._stale:
            self._rebuild(paths)

    def _rebuild(self, paths: list[Path]) -> None:
        """Scan every log again. The bounds the last scan read are known from the start, and it scans
        once more when the bounds it reads differ (a log lost or gained one), so every event is counted
        at the stamp its bounds give it."""
        caps = dict(self._scan_made.bound_caps) if self._scan_made is not None else {}
        for _ in range(3):
            self._reset(caps)
            for path in paths:
                self._read_segment(path)
            if self.scan.exact:
                break
            caps = dict(self.scan.bound_caps)
        gc.freeze()  # the ids seen are long-lived: no full collection walks them again (no pauses on appends)

    def _continues(self, path: Path) -> bool:
        return self._read_segment(path)

    def _read_segment(self, path: Path) -> bool:
        """Scan what `path` gained; False when it no longer continues what was read."""
        segment = self._segments.get(path)
        if segment is not None and unchanged(path, segment.position):
            return True
        limit = self.legacy_max_bytes
        if (segment is None or segment.legacy) and (size := legacy.oversize(path, self.location.legacy_files, limit)):
            self._oversized[path] = size
            return segment is None  # read no further; a file already scanned is scanned again without it
        self._oversized.pop(path, None)
        if self.progress is not None and (note := much_to_read(path, segment.position if segment else None)):
            self.progress(note)  # a person at a terminal: a first read of a big log is slow
        try:
            chunk = read_new(path, segment.position if segment else None)
        except FileNotFoundError:
            return segment is None
        except OSError as exc:
            self._note_bad(path, 0, f"unreadable: {exc.strerror}")
            return True
        if chunk.reset:
            return False
        self.bytes_read += chunk.position.offset - (segment.position.offset if segment and segment.position else 0)
        if path == self._writer.path:
            self._unscanned = None  # scanned from here on
        if segment is None:
            segment = new_segment(path, legacy.is_legacy(path, self.location.legacy_files))
            self._segments[path] = segment
        segment.position = chunk.position
        segment.held, segment.held_at, segment.torn = chunk.held, chunk.held_at, segment.torn + chunk.torn
        newest, max_seq, own = segment.newest, segment.max_seq, segment.writer
        schema, edge, ahead = self.fields, horizon(), segment.ahead
        for line_no, raw in chunk.lines:
            try:
                event = decode(raw, line_no)
            except BadLine as exc:
                segment.bad_lines += 1
                kind = bad_kind(str(exc))
                segment.bad_kinds[kind] = segment.bad_kinds.get(kind, 0) + 1
                self._note_bad(path, line_no, str(exc))
                continue
            data, dropped = conform(schema, event.kind, event.data)
            if dropped:
                event = Event(event.id, event.writer, event.seq, event.hlc, event.kind, data)
                for name in dropped:
                    segment.bad_fields[name] = segment.bad_fields.get(name, 0) + 1
            if self.scan.apply(event) is not None:
                segment.events += 1
            if event.hlc > newest:
                newest = event.hlc
            if event.hlc > edge and len(ahead) < MAX_AHEAD_TRACKED:
                ahead[event.id] = event.hlc
            if event.seq > max_seq and event.writer == own:
                max_seq = event.seq
        segment.newest, segment.max_seq = newest, max_seq
        self.clock.observe(newest)  # bounded: a clock far ahead does not drag this one along
        return True

    @property
    def batching(self) -> bool:
        """Inside `collecting`: appends made so far are not in the logs yet."""
        return self._collected is not None

    @property
    def held_back(self) -> list[Event]:
        """Inside `collecting` where no derived tables hold them (no `provisional`): the appends made so far."""
        return list(self._collected or ()) if self._provisional is None else []

    @property
    def fields(self) -> Schema:
        """The shape of every field of every kind, as events are checked when read."""
        if callable(self._fields):
            self._fields = self._fields()
        return self._fields or {}

    def _note_bad(self, path: Path, line: int, reason: str) -> None:
        self._bad_count += 1
        if len(self._bad) < MAX_BAD_LINE_REPORTS:
            self._bad.append(BadLineReport(str(path), line, reason))

    @property
    def event_count(self) -> int:
        self.refresh()
        return self.scan.count

    def health(self) -> Health:
        self.refresh()
        scan, segments = self.scan, list(self._segments.values())
        oversized = {str(path): size for path, size in self._oversized.items()}
        return Health(
            segments, list(self._bad), self._bad_count, oversized, dict(scan.bounded), waiting(segments, scan)
        )

    @property
    def bad_line_count(self) -> int:
        """Bad lines among the logs as last read (no refresh: read first)."""
        return self._bad_count

    @property
    def duplicates(self) -> int:
        return self.scan.duplicates

    def writer_counts(self) -> dict[str, tuple[int, int]]:
        """(events, highest seq) per writer id; more events than the seq means two machines share the id."""
        self.refresh()
        return {w: (count, self.scan.last_seq.get(w, 0)) for w, count in self.scan.per_writer.items()}

    @property
    def log_writer(self) -> LogWriter:
        """This writer's own log (path, lock, raw append): for doctor --fix and compaction only."""
        return self._writer

    # -- writing -------------------------------------------------------------------------

    def _observe_other_logs(self) -> bool:
        """Let the clock see the newest stamp of every other log (one tail read each, no scan), so a
        write orders after everything already on this machine however far behind its clock is.
        True when a log ends beyond the drift bound (its events are then read, to be bounded)."""
        edge, beyond = horizon(), False
        for path in self._segment_paths():
            if path != self._writer.path and (stamp := self._last_stamp(path)) is not None:
                self.clock.observe(stamp)
                beyond = beyond or stamp > edge
        return beyond

    def _last_stamp(self, path: Path) -> int | None:
        """`last_stamp` of a log, read again only when the file changed since the last write looked (or it
        changed too recently to tell: file times are coarse)."""
        now = signature(path)
        seen = self._last_stamps.get(path)
        if seen is None or seen[0] != now or now is None or time.time_ns() - now[3] < 2_000_000_000:
            seen = self._last_stamps[path] = (now, last_stamp(path))
        return seen[1]

    def admit(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        """The data as `append` would store it, or the error it would raise (a scoped store checks its grant).
        Every append passes each item through it."""
        return data

    def append(self, kind: str, data: dict[str, Any]) -> Event:
        return self.append_many([(kind, data)])[0]

    # The projects this store's reads may see (None: every one): an HTTP grant's scope, which every read of
    # the machine's shared derived state (the tables, the search index) takes as a condition of each query.
    read_projects: frozenset[str] | None = None

    # Threads of one process that append through stores of the same writer queue on this (a store
    # shared by threads sets a lock) instead of polling the writer's file lock.
    appending: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()

    @contextlib.contextmanager
    def collecting(self, provisional: Callable[[list[Event]], None] | None = None) -> Iterator[list[Event]]:
        """Appends made inside are collected, not written: each returns a provisional event (its id is
        final, its seq and clock are not: stamped after every log's newest), given to `provisional` (the
        derived tables' `overlaid`, where later reads see it) or, without it (tables that do not open
        here, where reads add the logs' rest and `held_back`: core/rest.py), held back. Leaving the block
        writes them all in one append; an exception drops them.
        Either way the provisional state is forgotten, never saved."""
        end = self._writer.end()  # (its last lines: the seq to number after, the stamp to order after)
        self._observe_other_logs()
        self.clock.observe(end.newest)
        collected: list[Event] = []
        self._collected, self._collected_after, self._provisional = collected, end.seq, provisional
        try:
            yield collected
            self._collected = None
            if collected:
                self.append_many(
                    [(event.kind, event.data) for event in collected],
                    [event.id for event in collected],
                    collected=True,
                )
        finally:
            self._collected, self._provisional = None, None
            if provisional is None:
                self._reset()  # (the next read scans the logs again)

    def append_many(
        self,
        items: Sequence[tuple[str, dict[str, Any]]],
        ids: Sequence[str] | None = None,
        stamps: Sequence[int] | None = None,
        *,
        collected: bool = False,
        fold: bool = True,
    ) -> list[Event]:
        """Append events in one locked write; they are scanned before this returns. Events read stamped
        beyond the drift bound are first named in a bound (ahead.py), written with them. `ids` (one per item)
        replaces the random event ids: an importer's ids derived from what it imports. `stamps` (one
        per item) replaces the clock: an importer's events dated when they happened (a past session's
        turns), which order by those stamps like any event; the clock does not move for them. `fold=False`
        leaves scanning them to the next read (an import that ends here need not hold them all in memory)."""
        from contextflow.core import private
        from contextflow.core.secrets import scrub_items  # its patterns compile on first use: only writes pay

        if len(items) > BULK_ITEMS:
            from contextflow.core import jsonio

            jsonio.fast()  # many lines to write: orjson's import pays for itself
        if (ids is not None and len(ids) != len(items)) or (stamps is not None and len(stamps) != len(items)):
            raise ValueError("append_many: one id and one stamp per item")
        if stamps is not None and not all(0 < stamp <= MAX_HLC for stamp in stamps):
            raise ValueError("append_many: stamps must be hybrid clock stamps (clock.stamp_from_ms)")
        items = [(kind, self.admit(kind, private.strip(data))) for kind, data in items]  # never stored (README)
        if not collected:  # a batch's events were scrubbed as `collecting` made them
            items = scrub_items(items, self.secrets)  # secrets are redacted (or refused) before anything is persisted
        if self._collected is not None:
            seq = self._collected_after + len(self._collected)
            found = [
                Event(new_id(), self.writer, seq + n, self.clock.tick(), kind, data)
                for n, (kind, data) in enumerate(items, start=1)
            ]
            if self._provisional is not None:
                self._provisional(found)
            else:  # no derived tables to hold them (they do not open here): counted as scanned (`known`)
                if not self._collected:
                    self.refresh()
                for event in found:
                    self.scan.apply(event)
            self._collected.extend(found)
            return found
        with self._locked_write() as (pending, end, scanned):
            seq = end.seq
            batch = [(BOUND_KIND, {"ids": pending}), *items] if pending else list(items)
            if not batch:
                return []
            lead = len(batch) - len(items)  # the bound, if any, gets a new id and a clock stamp
            chosen = [new_id() for _ in range(lead)] + (list(ids) if ids is not None else [new_id() for _ in items])
            times = [self.clock.tick() for _ in range(lead)] + (
                list(stamps) if stamps is not None else [self.clock.tick() for _ in items]
            )
            events = [
                Event(event_id, self.writer, seq + offset, stamp, kind, data)
                for offset, (event_id, stamp, (kind, data)) in enumerate(zip(chosen, times, batch, strict=True), 1)
            ]
            # a framed write states the log's end after it (given stamps may be in the past: always framed)
            after = Stated(events[-1].seq, max(end.newest, *times))
            self._writer.append_lines([encode(event) for event in events], end, after, framed=stamps is not None)
            if scanned and fold and not collected:  # (a batch counted in memory is forgotten: `collecting`)
                self._refresh_own_log()  # scan exactly what was just written (a bound: scan again)
            else:
                self._unscanned = signature(self._writer.path)
        return events[len(events) - len(items) :]

    @contextlib.contextmanager
    def _locked_write(self) -> Iterator[tuple[list[str], End, bool]]:
        """Under the writer lock with what this machine's log ends with (`LogWriter.end`: its last lines):
        the ids a bound must name first; the last sequence number written, the newest stamp and a batch a
        kill cut short (closed first); whether the scan held the log to its end (then it scans the write)."""
        from contextflow.core.lock import LockTimeout as Timeout

        try:
            with self.appending, self._writer.locked():
                path = self._writer.path
                own = self._segments.get(path)
                scanned = own is not None and not own.legacy and unchanged(path, own.position) and not self._stale
                if self._observe_other_logs():
                    self.refresh()  # a log ends beyond the drift bound: learn which events are
                end = self._writer.end()
                self.bytes_read += end.read
                self.clock.observe(end.newest)  # bounded: as when the scan reads it
                pending = unbounded(self._segments.values(), self.scan.caps)
                if pending or end.newest > horizon():
                    self.refresh()  # a bound to write: read every log first, so it names what it must
                    pending, scanned = unbounded(self._segments.values(), self.scan.caps), not self._stale
                    end = self._writer.end()
                yield pending, end, scanned
        except Timeout:
            raise self._lock_held() from None

    def _lock_held(self) -> StoreError:
        return StoreError(
            f"another contextflow process has held the writer lock for {self.writer} over 10 s; "
            "try again, and if it persists run `contextflow doctor`"
        )

    def append_staged(self, staged: StagedBatch) -> int:
        """Write a batch staged outside the lock (`staged.py`: an import too large to hold in memory) as one
        framed batch: under the writer lock only each event's seq and clock stamp are made. Its events are
        scanned by the next read. Returns how many were written."""
        if not len(staged):
            return 0
        with self._locked_write() as (pending, end, _):
            lead, seq = [], end.seq
            if pending:
                bound = Event(new_id(), self.writer, seq + 1, self.clock.tick(), BOUND_KIND, {"ids": pending})
                lead, seq = [encode(bound)], seq + 1
            stamps = array("Q", (self.clock.tick() for _ in range(len(staged))))
            size, pieces = staged.lines(seq + 1, stamps)
            lines = itertools.chain(lead, pieces)
            after = Stated(seq + len(staged), max(end.newest, stamps[-1]))
            self._writer.append_framed(len(lead) + len(staged), size + sum(map(len, lead)), lines, end, after)
            self._unscanned = signature(self._writer.path)
        return len(staged)
