"""The store: a folder of logs folded into views, the one object the adapters hold.

Every read first calls `refresh()`: each log is stat'ed and only bytes appended since the last
look are read; a file that changed in any other way refolds everything. A machine-local
snapshot of the folded state (checked against the logs on load) lets a new process skip the refold.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import os
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextflow import __version__, snapshot
from contextflow.clock import HybridClock
from contextflow.errors import StoreError
from contextflow.events import LEGACY_WRITER, BadLine, Event, decode, encode
from contextflow.fold import Fold, View
from contextflow.fsutil import signature
from contextflow.ids import new_id
from contextflow.locate import Location, locate_store, store_state_dir, writer_id
from contextflow.log import (
    Cursor,
    LogWriter,
    last_stamp,
    list_segments,
    parse_log_name,
    read_new,
    unchanged,
)

SNAPSHOT_FORMAT = 2
SNAPSHOT_MIN_NEW_EVENTS = 2000
MAX_BAD_LINE_REPORTS = 100


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


def bad_kind(reason: str) -> str:
    """The kind of a bad line's problem: its reason up to the first detail."""
    return reason.split(" (", 1)[0].split(":", 1)[0]


@functools.cache
def code_fingerprint() -> str:
    """Changes whenever contextflow's code does, so a snapshot never outlives the classes it saved."""
    package = Path(__file__).parent
    digest = hashlib.blake2b(digest_size=8)
    for path in sorted(package.rglob("*.py")):
        st = path.stat()
        digest.update(f"{path.relative_to(package)}:{st.st_size}:{st.st_mtime_ns};".encode())
    return digest.hexdigest()


def fsync_setting(env: Mapping[str, str]) -> bool:
    value = env.get("CONTEXTFLOW_FSYNC", "off").strip().lower()
    if value in ("1", "on", "true", "always", "yes"):
        return True
    if value in ("", "0", "off", "false", "never", "no"):
        return False
    raise StoreError(f"CONTEXTFLOW_FSYNC={value!r} is not understood: use 'on' or 'off'")


class Store:
    def __init__(
        self,
        location: Location,
        writer: str,
        state_dir: Path,
        *,
        views: Sequence[View] | None = None,
        fsync: bool = False,
        clock: HybridClock | None = None,
        use_snapshot: bool = True,
    ) -> None:
        from contextflow.views import folded_views

        self.location = location
        self.folder = Path(os.path.realpath(location.folder))  # one store, one lock, however it is reached
        self.writer = writer
        self.state_dir = state_dir
        self.clock = clock or HybridClock()
        self._view_factory: Callable[[], list[View]] = (lambda: list(views)) if views is not None else folded_views
        self._writer = LogWriter(self.folder, writer, state_dir / "writer.lock", fsync=fsync)
        # the standard views: may use the machine-local snapshot and sidecar (a store with an HTTP grant's
        # filtered views must neither read nor write them)
        self.shares_state = use_snapshot
        self._snapshot_path = state_dir / snapshot.FILE_NAME
        self._new_since_snapshot = 0
        self.loaded = False  # once folded (or loaded): the snapshot loads on first use, so cheap commands never pay
        self._listing: tuple[int | None, list[Path]] | None = None
        self._blobs: snapshot.Blobs | None = None  # the loaded snapshot's views, read on first use
        self._collected: list[Event] | None = None  # appends held back by `collecting`
        self._reset()

    @classmethod
    def open(cls, env: Mapping[str, str] | None = None, **kwargs: Any) -> Store:
        env = os.environ if env is None else env
        location = locate_store(env)
        return cls(location, writer_id(env), store_state_dir(location.folder, env), fsync=fsync_setting(env), **kwargs)

    # -- reading -------------------------------------------------------------------------

    def _reset(self) -> None:
        if self._blobs is not None:
            self._blobs.close()  # the old snapshot's views are no longer wanted
            self._blobs = None
        self._fold_made: Fold | None = None  # made on first use: building the views imports their modules
        self._segments: dict[Path, Segment] = {}
        self._bad: list[BadLineReport] = []
        self._bad_count = 0

    @property
    def _fold(self) -> Fold:
        if self._fold_made is None:
            self._fold_made = Fold(self._view_factory())
        return self._fold_made

    def signatures(self) -> dict[str, tuple[int, int, int, int]]:
        """(device, inode, size, mtime_ns) of every log as folded; compare with `current_signatures()`."""
        return {str(path): segment.cursor.signature for path, segment in self._segments.items() if segment.cursor}

    def current_signatures(self) -> dict[str, tuple[int, int, int, int]]:
        """The same for the logs as they are on disk now (one stat each, nothing read)."""
        found = {str(path): signature(path) for path in list_segments(self.folder, self.location.legacy_files)}
        return {path: sig for path, sig in found.items() if sig is not None}

    def _ensure_loaded(self) -> None:
        if not self.loaded:
            self.loaded = True
            if self.shares_state:
                self._load_snapshot()

    def _segment_paths(self) -> list[Path]:
        """The logs to read. The folder is listed again only when its mtime moved, or is too
        recent to trust (file times are coarse, so two files made in one tick share an mtime)."""
        try:
            mtime = os.stat(self.folder).st_mtime_ns
        except OSError:
            mtime = None
        cached = self._listing
        if cached is not None and mtime is not None and cached[0] == mtime and time.time_ns() - mtime > 2_000_000_000:
            return cached[1]
        paths = list_segments(self.folder, self.location.legacy_files)
        self._listing = (mtime, paths)
        return paths

    def _refresh_own_log(self) -> None:
        self._ensure_loaded()
        own = self._writer.path
        if not self._continues(own) or (own not in self._segments and own.exists()):
            self.refresh()

    def refresh(self) -> None:
        self._ensure_loaded()
        paths = self._segment_paths()
        if any(path not in paths for path in self._segments) or not all(map(self._continues, paths)):
            self._rebuild(paths)

    def _rebuild(self, paths: list[Path]) -> None:
        self._reset()
        for path in paths:
            self._read_segment(path)
        self._new_since_snapshot = self._fold.count
        gc.freeze()  # the folded state is long-lived: no full collection walks it again (no pauses on appends)

    def _continues(self, path: Path) -> bool:
        try:
            return self._read_segment(path)
        except snapshot.SnapshotBroken:  # the saved state does not load: refold
            return False

    def _read_segment(self, path: Path) -> bool:
        """Fold what `path` gained; False when it no longer continues what was read."""
        segment = self._segments.get(path)
        if segment is not None and unchanged(path, segment.cursor):
            return True
        try:
            chunk = read_new(path, segment.cursor if segment else None)
        except FileNotFoundError:
            return segment is None
        except OSError as exc:
            self._note_bad(path, 0, f"unreadable: {exc.strerror}")
            return True
        if chunk.reset:
            return False
        if segment is None:
            segment = self._new_segment(path)
            self._segments[path] = segment
        segment.cursor = chunk.cursor
        newest, max_seq, own = segment.newest, segment.max_seq, segment.writer
        for line_no, raw in chunk.lines:
            try:
                event = decode(raw, line_no)
            except BadLine as exc:
                segment.bad_lines += 1
                kind = bad_kind(str(exc))
                segment.bad_kinds[kind] = segment.bad_kinds.get(kind, 0) + 1
                self._note_bad(path, line_no, str(exc))
                continue
            if self._fold.apply(event):
                segment.events += 1
                self._new_since_snapshot += 1
            if event.hlc > newest:
                newest = event.hlc
            if event.seq > max_seq and event.writer == own:
                max_seq = event.seq
        segment.newest, segment.max_seq = newest, max_seq
        self.clock.observe(newest)  # bounded: a clock far ahead does not drag this one along
        return True

    def _new_segment(self, path: Path) -> Segment:
        if path in self.location.legacy_files:
            return Segment(path, LEGACY_WRITER, False, True)
        parsed = parse_log_name(path.name)
        writer, conflict = parsed if parsed else (path.name, False)
        return Segment(path, writer, conflict, False)

    def _note_bad(self, path: Path, line: int, reason: str) -> None:
        self._bad_count += 1
        if len(self._bad) < MAX_BAD_LINE_REPORTS:
            self._bad.append(BadLineReport(str(path), line, reason))

    def view(self, name: str) -> Any:
        """The current state of one view (after picking up new events)."""
        self.refresh()
        try:
            if name in self._fold.deferred:
                state = self._fold.state(name)
                gc.freeze()  # a loaded view is long-lived: keep it out of every later full collection
                return state
            return self._fold.state(name)
        except snapshot.SnapshotBroken:
            self._rebuild(list_segments(self.folder, self.location.legacy_files))
            return self._fold.state(name)

    def folds(self, name: str) -> bool:
        """True when view `name` is folded in this process (else it is served from derived state on disk)."""
        return any(view.name == name for view in self._view_factory())

    def view_loaded(self, name: str) -> bool:
        """False while view `name` still waits in the snapshot (reading it would load it)."""
        return name not in self._fold.deferred

    @property
    def event_count(self) -> int:
        self.refresh()
        return self._fold.count

    def health(self) -> Health:
        self.refresh()
        return Health(list(self._segments.values()), list(self._bad), self._bad_count)

    @property
    def bad_line_count(self) -> int:
        """Bad lines among the logs as last read (no refresh: read first)."""
        return self._bad_count

    @property
    def duplicates(self) -> int:
        return self._fold.duplicates

    def writer_counts(self) -> dict[str, tuple[int, int]]:
        """(events, highest seq) per writer id; more events than the seq means two machines share the id."""
        self.refresh()
        return {w: (count, self._fold.last_seq.get(w, 0)) for w, count in self._fold.per_writer.items()}

    @property
    def log_writer(self) -> LogWriter:
        """This writer's own log (path, lock, raw append): for doctor --fix and compaction only."""
        return self._writer

    # -- writing -------------------------------------------------------------------------

    def _observe_other_logs(self) -> None:
        """Let the clock see the newest stamp of every other log (one tail read each, no fold), so a
        write orders after everything already on this machine however far behind its clock is."""
        for path in self._segment_paths():
            if path != self._writer.path and (stamp := last_stamp(path)) is not None:
                self.clock.observe(stamp)

    def admit(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        """The data as `append` would store it, or the error it would raise (a scoped store checks its grant)."""
        return data

    def _own_seq(self) -> int:
        """The highest seq in this writer's own log (a line elsewhere claiming its id never moves it)."""
        own = self._segments.get(self._writer.path)
        return own.max_seq if own is not None else 0

    def append(self, kind: str, data: dict[str, Any]) -> Event:
        return self.append_many([(kind, data)])[0]

    @contextlib.contextmanager
    def collecting(self) -> Iterator[list[Event]]:
        """Appends made inside are collected, not written: each returns a provisional event (its id is
        final, its seq and clock are not), folded so later reads see it. Leaving the block writes them
        all in one append; an exception drops them. Either way the provisional state is forgotten (the
        next read reloads from the logs), so it is never saved."""
        collected: list[Event] = []
        self._collected = collected
        try:
            yield collected
            self._collected = None
            if collected:
                self.append_many([(event.kind, event.data) for event in collected], [event.id for event in collected])
        finally:
            self._collected = None
            self._reset()
            self.loaded, self._new_since_snapshot = False, 0

    def append_many(self, items: Sequence[tuple[str, dict[str, Any]]], ids: Sequence[str] = ()) -> list[Event]:
        """Append events in one locked write; they are folded before this returns. `ids`: the events'
        ids, for events `collecting` made (and scrubbed) first."""
        from filelock import Timeout

        from contextflow.secrets import scrub_items  # its patterns compile on first use: only writes pay

        if not ids:  # events with ids were collected (and scrubbed) by `collecting`
            items = scrub_items(items)  # secrets are redacted (or refused) before anything is persisted
        if self._collected is not None:
            if not self._collected:
                self.refresh()  # once: the batch's own events are folded as they come
            seq = self._own_seq() + len(self._collected)
            found = [Event(new_id(), self.writer, seq + n, self.clock.tick(), kind, data)
                     for n, (kind, data) in enumerate(items, start=1)]
            for event in found:
                self._fold.apply(event)
            self._collected.extend(found)
            return found
        try:
            with self._writer.locked():
                self._refresh_own_log()  # other processes of this machine may have appended
                self._observe_other_logs()
                seq = self._own_seq()
                named = list(ids) or [new_id() for _ in items]
                events = [
                    Event(named[offset - 1], self.writer, seq + offset, self.clock.tick(), kind, data)
                    for offset, (kind, data) in enumerate(items, start=1)
                ]
                self._writer.append(b"".join(encode(event) for event in events))
                if not ids:  # (a batch's events were folded already, and `collecting` forgets them next)
                    self._refresh_own_log()  # fold exactly what was just written
        except Timeout:
            raise StoreError(
                f"another contextflow process has held the writer lock for {self.writer} over 10 s; "
                "try again, and if it persists run `contextflow doctor`"
            ) from None
        return events

    # -- snapshot ------------------------------------------------------------------------

    def _snapshot_key(self) -> tuple[Any, ...]:
        # each view's `version` (what the code fingerprint cannot cover, e.g. a library's) is checked as it loads
        names = tuple(view.name for view in self._view_factory())
        return (SNAPSHOT_FORMAT, __version__, code_fingerprint(), str(self.folder), names)

    def _load_snapshot(self) -> None:
        found = snapshot.read(self._snapshot_path, self._snapshot_key())
        if found is None:
            return
        header, blobs = found
        if not all(
            isinstance(path, Path) and isinstance(segment, Segment) and isinstance(segment.cursor, Cursor | None)
            for path, segment in header.segments.items()
        ):
            blobs.close()
            return
        self._blobs = blobs
        self._fold_made = snapshot.restore(self._view_factory(), header, self._blobs)
        self._segments = header.segments
        self._bad_count += sum(segment.bad_lines for segment in self._segments.values())
        self.clock.observe(self._fold.max_hlc)
        self._new_since_snapshot = 0

    def save_snapshot(self, force: bool = False) -> bool:
        """Persist the folded state when enough changed since the last save."""
        if not self.shares_state or (not force and self._new_since_snapshot < SNAPSHOT_MIN_NEW_EVENTS):
            return False
        try:
            snapshot.write(self._snapshot_path, self._snapshot_key(), self._fold, self._segments, self._blobs)
        except Exception:
            return False
        self._new_since_snapshot = 0
        return True

    def save_snapshot_soon(self) -> bool:
        """Once enough is new, save the snapshot from a forked child (POSIX only; else on close), so a
        long-running server keeps answering and its work survives being killed at exit."""
        if not self.shares_state or self._new_since_snapshot < SNAPSHOT_MIN_NEW_EVENTS or not hasattr(os, "fork"):
            return False
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # threads exist; the child only writes a file
            child = os.fork()
        if child == 0:
            try:
                if os.fork() == 0:  # the grandchild saves, so the server has no child to wait for
                    try:
                        self.save_snapshot(force=True)
                    finally:
                        os._exit(0)  # never flush the parent's buffered stdout a second time
            finally:
                os._exit(0)
        os.waitpid(child, 0)
        self._new_since_snapshot = 0
        return True

    def close(self) -> None:
        self.save_snapshot()
        if self._blobs is not None:
            self._blobs.close()
