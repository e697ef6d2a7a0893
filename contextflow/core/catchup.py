"""Catching the derived tables up with the logs (`CatchUp`, the part of `core/tables.py`'s
`Tables` that writes): the new bytes of each log read a chunk at a time, rows and read positions committed
together; a backlog built by one background process, this machine's newest rows added ahead of it."""

from __future__ import annotations

import contextlib
import gc
import os
import sqlite3
import stat
import threading
from collections.abc import Callable, Collection, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextflow.core import jsonio
from contextflow.core.events import Event
from contextflow.core.fsutil import signature
from contextflow.core.log import Position, log_path, read_new, read_tail
from contextflow.core.projections import (
    META,
    TAIL_BYTES,
    WAIT_S,
    Busy,
    Projection,
    Txn,
    busy,
    damaged,
    db_stamp,
    last_rowid,
    patience,
    position_blob,
    position_of,
    readable_events,
    unread_bytes,
)
from contextflow.core.scan import BOUND_KIND
from contextflow.core.segments import much_to_read

if TYPE_CHECKING:
    from contextflow.core.progress import Progress
    from contextflow.core.store import Store

READ_BYTES = 8 * 1024 * 1024  # new bytes read (and committed) at a time
# read at a time for lazy projections alone (the search index catching up while the tables are current):
# their work on a chunk (tantivy's) holds the write lock that a reader adding new rows waits for
LAZY_READ_BYTES = 1024 * 1024
BACKGROUND_BYTES = 32 * 1024 * 1024  # a reader finding more unread than this has it built in the background
BUILD_LOCK = "views.build.lock"  # held by the one process building in the background
AHEAD_LOCK = "views.ahead.lock"  # held by a process adding its newest rows ahead of a build, which lets it first
BUILD_WAIT_S = 60.0  # an explicit update (doctor, a benchmark's build) waits this long
BUILD_NICENESS = 10  # a background build takes the CPU that the agents' own calls leave (`os.nice`)
BUILD_GC_THRESHOLD = 50_000  # new objects a build lets pile up before the cyclic collector looks (`_fewer_collections`)
Rows = dict[str, dict[str, dict[tuple[Any, ...], None]]]  # projection -> table -> its rows (each once, in order)
# formats and tables earlier versions kept: dropped on a reset
# ("cursors": the read positions' table before its rename)
RETIRED = ("view-events", "view_events", "stages", "cursors")
# every format's version, and a row (NULL, NULL) when an earlier version's read positions are there ("cursors")
FORMATS = "SELECT name, version FROM formats UNION ALL SELECT NULL, NULL FROM sqlite_master WHERE name = 'cursors'"


class CatchUp:
    """How `Tables` (core/tables.py) brings its tables up to date; it provides what is declared here."""

    store: Store
    sets: dict[str, Projection]
    path: Path
    caught_up: int
    building: bool
    _mutex: threading.RLock
    _told: tuple[Path, Position | None] | None
    _backlog: bool
    _checked: object
    _bytes_read = 0  # by the update under way (its progress)
    _ahead: dict[str, tuple[str, int]]
    _ahead_stuck: bool
    _found_current = False  # the last `_update` found every format holding every log (nothing to read)
    _also: frozenset[str] = frozenset()  # the lazy projections the update under way catches up too
    _made_on: sqlite3.Connection | None = None  # the connection on which the bookkeeping tables were last made

    def _connect(self) -> sqlite3.Connection:
        raise NotImplementedError

    def _discard(self) -> None:
        raise NotImplementedError

    def _paths(self) -> list[Path]:
        raise NotImplementedError

    def _at(self, path: Path) -> CatchUp:
        """A handle on the same store's tables in the database at `path`."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def update(
        self, wait: float = WAIT_S, *, foreground: bool = False, ahead: bool = True, also: Collection[str] = ()
    ) -> int:
        """Fold the logs' new events into every format (a lazy one only when named in `also`); returns how
        many events were read. When another
        process holds the write lock longer than `wait` s, returns -1 (the tables answer as they are).
        Unless `foreground`, a backlog over BACKGROUND_BYTES (a fresh machine, a format rebuilt) is built
        by one background process while this one answers from what is there and, when `ahead`, from
        this machine's newest rows (also -1). A call that waited out the lock once does not wait again
        (`projections.one_wait`), but a `foreground` build waits its whole `wait`."""
        with self._mutex:
            wait = wait if foreground else patience(wait)
            self._also = frozenset(also)
            try:
                read = self._update(wait, foreground)
            except Busy:
                read = -1
            except sqlite3.DatabaseError as exc:
                if not damaged(exc):
                    return -1  # the disk is full or read-only: the tables answer as they are
                self._discard()
                read = self._update(wait, foreground)
            finally:
                for name in self._also | {n for n, s in self.sets.items() if not s.lazy}:
                    if (done := self.sets[name].done) is not None:
                        done()
                self._also = frozenset()
            if read < 0 and ahead and not foreground and self._backlog:  # (not after a short update's wait)
                self._add_own_newest(wait)
            return read

    def _add_own_newest(self, wait: float) -> None:
        """While another process builds (or holds the write lock): the rows of this machine's log's newest
        bytes that a format has not read yet are added ahead of it, read positions untouched, so what this
        machine just wrote is read at once, by every process of it. Rows are keyed by their event (the
        build adds them again as nothing) and order-free (`Projection.ahead`), so the tables end as a fresh
        build's. At most TAIL_BYTES back the first time, then only the new bytes; a busy writer past
        `wait` s, or a full disk, leaves the tables as they are."""
        from contextflow.core.lock import LockTimeout, WriterLock

        own = log_path(self.store.folder, self.store.writer)
        try:
            info = os.lstat(own)
            if not stat.S_ISREG(info.st_mode) or not self._ahead_starts(self._connect(), own, info.st_size):
                return  # (nothing new since the last look: two small queries)
            db = self._connect()
            with WriterLock(self.path.with_name(AHEAD_LOCK), wait), Txn(db, wait):
                starts = self._ahead_starts(db, own, info.st_size, reset=True)
                if not starts:
                    return
                begin = min(start for _, start in starts.values())
                lines = read_tail(own, info.st_size - begin + 1 if begin else info.st_size + 1)  # (from `begin` on)
                caps = dict(db.execute("SELECT id, cap FROM bounds").fetchall())
                self._insert(db, readable_events(lines, self.store), [self.sets[name] for name in starts], caps)
        except (OSError, Busy, LockTimeout, sqlite3.Error):
            return
        for name, (built, _) in starts.items():
            self._ahead[name] = (built, info.st_size)

    def _ahead_starts(
        self, db: sqlite3.Connection, own: Path, size: int, *, reset: bool = False
    ) -> dict[str, tuple[str, int]]:
        """Per format that takes rows ahead: (its build, where in this machine's log its unread rows
        start), when before `size`. A format not made yet (or by another version) is made first when
        `reset` (in the caller's transaction: as the build would, which then only reads)."""
        formats = {name: (version, built) for name, version, built in db.execute("SELECT * FROM formats")}
        held = dict(db.execute("SELECT format, position FROM positions WHERE path = ?", (str(own),)).fetchall())
        starts: dict[str, tuple[str, int]] = {}
        for name, table_set in self.sets.items():
            if not table_set.ahead:
                continue
            version, built = formats.get(name, (None, ""))
            if version != table_set.format.version and reset:
                self._reset(db, name)
                held.pop(name, None)
                built = db.execute("SELECT built FROM formats WHERE name = ?", (name,)).fetchone()[0]
            start = max(position_of(held[name]).offset if name in held else 0, size - TAIL_BYTES)
            added = self._ahead.get(name, ("", 0))
            start = max(start, added[1] if added[0] == built else 0)
            if start < size:
                starts[name] = (built, start)
        return starts

    def _update(self, wait: float, foreground: bool) -> int:
        self._backlog = self._found_current = False
        db = self._connect()
        if self._made_on is not db:  # (once per connection: nothing drops them but deleting the database)
            try:
                db.executescript(META)
            except sqlite3.OperationalError as exc:
                if not busy(exc):
                    raise
                raise Busy(str(exc)) from None  # another process is making the database
            self._made_on = db
        retire, todo = self._plan(db, self._paths())
        if not retire and not todo:
            self._found_current = True
            return 0
        paths = self._paths()
        whole = sum(unread_bytes(path, None) for path in paths)
        passes = 2 * whole // LAZY_READ_BYTES + 4 * len(paths) + 16  # a rebuild's twice, in the smaller chunks
        unread = whole if retire else sum(unread_bytes(p, b) for p, b, _ in todo)
        backlog = self._backlog = unread > READ_BYTES
        jsonio.fast(unread)
        if not foreground and unread > BACKGROUND_BYTES and hasattr(os, "fork"):
            self._backlog = True
            self._build_in_background(f"building this machine's views from {unread / 1e6:.0f} MB of logs")
            return -1
        if backlog:  # a build: no fsync per chunk (a crash of the OS may cost the derived state, which is rebuilt)
            db.execute("PRAGMA synchronous=OFF")
            db.execute("PRAGMA temp_store=MEMORY")  # statement journals (each row's triggers): 20x the tables' size
        from contextflow.core.progress import Progress

        progress = Progress(unread) if backlog else None  # (`progress.running()`: the page shows a build's)
        try:
            with _fewer_collections() if backlog else contextlib.nullcontext():
                read = self._chunks(db, passes, backlog, wait, progress)
            if progress is not None:
                progress.finish(read)
            return read
        finally:
            if progress is not None:
                progress.close()
            if backlog:
                with contextlib.suppress(sqlite3.Error):  # (a damaged database is deleted by the caller)
                    db.execute("PRAGMA synchronous=NORMAL")
                    db.execute("PRAGMA temp_store=DEFAULT")

    def _chunks(
        self, db: sqlite3.Connection, passes: int, backlog: bool, wait: float, progress: Progress | None = None
    ) -> int:
        """Up to `passes` chunks, each in its own transaction; returns how many events were read."""
        read, resets, self._bytes_read = 0, 0, 0
        for number in range(passes):  # one chunk a transaction, so readers see a build grow and a crash loses one
            if backlog:
                self._let_ahead()
            # much to read and another process already at it: answer from what is there (`Busy`), never build twice
            with self._ahead_of_build(backlog, wait), Txn(db, 0 if backlog and not number else wait):
                retire, todo = self._plan(db, self._paths())
                for name in retire:
                    self._reset(db, name)
                resets += bool(retire)
                if retire and resets <= 4:
                    continue
                if not todo:
                    self._found_current = True
                    break
                path, blob, names = todo[0]
                count, whole = self._read(db, path, blob, names)
                read += count
            if progress is not None:
                progress.update(self._bytes_read, read)
            if whole and len(todo) == 1:  # that was all there was (a warm write's own line): no transaction to
                self._found_current = True  # find nothing more, and every format holds every log read
                break
        return read

    def _ahead_of_build(self, backlog: bool, wait: float) -> contextlib.AbstractContextManager[object]:
        """A short update (another process's new note) goes before a build's next chunk (`_let_ahead`): without
        it, a build taking SQLite's write lock again at once kept it waiting its whole `wait`."""
        if backlog:
            return contextlib.nullcontext()
        return _first_in_line(self.path.with_name(AHEAD_LOCK), wait)

    def _let_ahead(self) -> None:
        """Before a build's next chunk: a process adding its newest rows ahead of it goes first (it waits
        for one chunk at most, never for the whole build). A lock held past WAIT_S is stuck: not waited
        for again."""
        from contextflow.core.lock import LockTimeout, WriterLock

        try:
            with WriterLock(self.path.with_name(AHEAD_LOCK), 0 if self._ahead_stuck else WAIT_S):
                pass
        except LockTimeout:
            self._ahead_stuck = True
        except OSError:
            pass

    def backlog(self) -> bool:
        """Whether the last update found a build's worth to read (built in the background or by another process)."""
        return self._backlog

    def restart(self, name: str, wait: float = WAIT_S) -> None:
        """Have format `name` built again from the logs (its version marked stale: the next update resets it)."""
        with self._mutex:
            self._checked = None  # (its own commit moves no `data_version`: the next update looks again)
            try:
                with Txn(self._connect(), wait):
                    self._connect().execute("UPDATE formats SET version = -1 WHERE name = ?", (name,))
            except (Busy, sqlite3.Error):
                return

    def _build_in_background(self, what: str) -> None:
        """Have one background process build the tables (none when one already does)."""
        from contextflow.core.lock import LockTimeout, WriterLock

        self.building = True
        lock = WriterLock(self.path.with_name(BUILD_LOCK), 0)
        try:
            lock.acquire()
        except LockTimeout:
            return  # another process builds them
        lock.release()  # the builder takes it
        if self.store.progress is not None:
            self.store.progress(f"{what} in the background; until it is done, answers hold what is built so far")
        self.close()  # no database connection crosses the fork
        path, at = self.path, self._at
        in_background(lambda: _build(at, path))

    def _plan(
        self, db: sqlite3.Connection, paths: list[Path], only: Collection[str] | None = None
    ) -> tuple[list[str], list[tuple[Path, bytes | None, list[str]]]]:
        """(formats to rebuild, [(log, the read position to read it from, the formats at that read position)]), of
        formats `only` when given (else of every format)."""
        if only is None:
            sets = {name: s for name, s in self.sets.items() if not s.lazy or name in self._also}
        else:
            sets = {name: s for name, s in self.sets.items() if name in only}
        versions = dict(db.execute(FORMATS).fetchall())
        if None in versions:  # read positions kept by an earlier version:
            versions = {}  # every format is built again (its reset drops that table: RETIRED)
        stored: dict[str, dict[str, tuple[bytes, int]]] = {}
        for name, path, blob, complete in db.execute("SELECT format, path, position, complete FROM positions"):
            stored.setdefault(name, {})[path] = (blob, complete)
        names = {str(p) for p in paths}
        retire = [
            name
            for name, table_set in sets.items()
            if versions.get(name) != table_set.format.version or any(p not in names for p in stored.get(name, {}))
        ]
        if retire:
            return retire, []
        todo: list[tuple[Path, bytes | None, list[str]]] = []
        read_at: dict[bytes, tuple[int, ...]] = {}  # each position's file signature (formats share positions)
        for path in paths:
            sig = signature(path)
            groups: dict[bytes | None, list[str]] = {}
            for name in sets:
                found = stored.get(name, {}).get(str(path))
                if found is not None and found[1] and sig is not None and _read_at(found[0], read_at) == sig:
                    continue
                if found is None and sig is None:
                    continue
                groups.setdefault(found[0] if found else None, []).append(name)
            todo += [(path, blob, group) for blob, group in groups.items()]
        return [], todo

    def _reset(self, db: sqlite3.Connection, name: str) -> None:
        """Start format `name` over (in the caller's transaction): tables empty, no position, its version recorded."""
        table_set = self.sets[name]
        for table in table_set.tables or tuple(table_set.inserts):
            db.execute(f'DROP TABLE IF EXISTS "{table}"')  # (its indexes and triggers go with it)
        for statement in table_set.schema:
            db.execute(statement)
        db.execute("DELETE FROM positions WHERE format = ?", (name,))
        db.execute("DELETE FROM positions WHERE format = ?", (RETIRED[0],))
        db.execute("DELETE FROM formats WHERE name = ?", (RETIRED[0],))
        for table in RETIRED[1:]:
            db.execute(f'DROP TABLE IF EXISTS "{table}"')
        built = os.urandom(8).hex()  # a new build: readers that folded the old rows start over
        db.execute(
            "INSERT OR REPLACE INTO formats(name, version, built) VALUES (?, ?, ?)",
            (name, table_set.format.version, built),
        )

    def _read(self, db: sqlite3.Connection, path: Path, blob: bytes | None, names: list[str]) -> tuple[int, bool]:
        """Read one chunk of `path`'s new lines into formats `names` (inside the caller's transaction): (events
        read, whether that was all: the chunk reached the log's end and lowered no clock bound)."""
        start = position_of(blob) if blob is not None else None
        if self.store.progress is not None and (note := much_to_read(path, start)) and self._told != (path, start):
            self._told = (path, start)
            self.store.progress(note)  # a person at a terminal: a first read of a big log is slow
        size = LAZY_READ_BYTES if all(self.sets[name].lazy for name in names) else READ_BYTES
        try:
            chunk = read_new(path, start, size)
        except FileNotFoundError:  # gone since it was listed: the next pass lists again
            return 0, False
        if chunk.reset:
            for name in names:
                self._reset(db, name)
            return 0, False
        caps = dict(db.execute("SELECT id, cap FROM bounds").fetchall()) if chunk.lines else {}
        tally, bounds = [0, 0], dict(caps)  # events read, bad lines; the clock bounds before this chunk
        self._insert(db, readable_events(chunk.lines, self.store, tally), [self.sets[name] for name in names], caps)
        count, bad = tally
        complete = chunk.position.offset - (start.offset if start else 0) < size
        self._bytes_read += chunk.position.offset - (start.offset if start else 0)
        before = dict(db.execute("SELECT format, bad FROM positions WHERE path = ?", (str(path),)).fetchall())
        db.executemany(
            "INSERT OR REPLACE INTO positions(format, path, position, complete, bad) VALUES (?, ?, ?, ?, ?)",
            [
                (name, str(path), position_blob(chunk.position), int(complete), before.get(name, 0) + bad)
                for name in names
            ],
        )
        self.caught_up += count
        return count, complete and caps == bounds  # (a bound it lowered restarts a folding format: more to do)

    def _insert(
        self, db: sqlite3.Connection, events: Iterable[Event], sets: list[Projection], caps: dict[str, int]
    ) -> None:
        """Add the rows of `events` to formats `sets` (inside the caller's transaction), clock bounds applied:
        each event's rows, and each folding projection's chunk of events (`Projection.apply`)."""
        plain = [(table_set.rows, table_set.name) for table_set in sets if table_set.apply is None]
        folding = [(table_set.kinds, table_set.name) for table_set in sets if table_set.apply is not None]
        rows: Rows = {name: {} for _, name in plain}  # (per table, its rows: each once, in order)
        folded: dict[str, list[Event]] = {name: [] for _, name in folding}
        for event in events:
            if event.kind == BOUND_KIND:
                self._flush(db, rows, folded)  # this chunk's earlier events, for the bound to lower
                rows, folded = {name: {} for name in rows}, {name: [] for name in folded}
                self._bound(db, event, sets, caps)
            cap = caps.get(event.id)
            if cap is not None and event.hlc > cap:
                event = Event(event.id, event.writer, event.seq, cap, event.kind, event.data)
            for kinds, name in folding:
                if event.kind.startswith(kinds):
                    folded[name].append(event)
            for rows_of, name in plain:
                tables = rows[name]
                for table, values in rows_of(event):
                    found = tables.get(table)
                    if found is None:
                        found = tables[table] = {}
                    found[values] = None
        self._flush(db, rows, folded)

    def _flush(self, db: sqlite3.Connection, rows: Rows, folded: dict[str, list[Event]]) -> None:
        for name, tables in rows.items():
            inserts, summarise = self.sets[name].inserts, self.sets[name].summarise
            for table, found in tables.items():
                if summarise is not None and summarise[0] == table:
                    after = last_rowid(db, table)
                    db.executemany(inserts[table], found)
                    summarise[1](db, after)
                else:
                    db.executemany(inserts[table], found)
        for name, events in folded.items():
            apply = self.sets[name].apply
            if events and apply is not None:
                apply(db, events)

    def _bound(self, db: sqlite3.Connection, bound: Event, sets: list[Projection], caps: dict[str, int]) -> None:
        """A clock bound read: its events' stamps lowered in the rows (and in the rows read later). A folding
        projection's state holds stamps it cannot lower in place: it starts over (its version marked
        stale, so the next chunk rebuilds it, the new bound known from the start; bounds are rare)."""
        ids = bound.data.get("ids")
        cap = max(bound.hlc - 1, 0)
        lowered = False
        for event_id in ids if isinstance(ids, list) else ():
            if not isinstance(event_id, str) or event_id == bound.id or cap >= caps.get(event_id, cap + 1):
                continue
            caps[event_id] = cap
            lowered = True
            db.execute("INSERT OR REPLACE INTO bounds(id, cap) VALUES (?, ?)", (event_id, cap))
            for table_set in sets:
                for table in table_set.bounded:
                    db.execute(
                        f'UPDATE "{table}" SET hlc = ? WHERE id = ? AND hlc > ?',
                        (db_stamp(cap), event_id, db_stamp(cap)),
                    )
        for table_set in sets if lowered else ():
            if table_set.apply is not None:
                db.execute("UPDATE formats SET version = -1 WHERE name = ?", (table_set.name,))


@contextlib.contextmanager
def _first_in_line(path: Path, wait: float) -> Iterator[None]:
    """Hold the lock at `path` when it comes within `wait` s (a build lets its holder go first); else go on."""
    from contextflow.core.lock import LockTimeout, WriterLock

    lock = WriterLock(path, wait)
    try:
        lock.acquire()
    except (LockTimeout, OSError):
        yield
        return
    try:
        yield
    finally:
        lock.release()


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """Python's cyclic collector looking less often: a build makes and drops many objects a chunk (events,
    rows, search documents) that form no cycles, and at its default threshold (700) the collector took 8%
    of building the search index (at 100k events, 1.4 s against 0.4 s at BUILD_GC_THRESHOLD)."""
    before = gc.get_threshold()
    gc.set_threshold(BUILD_GC_THRESHOLD, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def in_background(work: Callable[[], object]) -> None:
    """Run `work` (a build) in a forked grandchild, so the caller neither waits for it nor has a child to
    reap; its standard streams point at the null device, so a client reading the caller's output to its
    end never waits for it either. POSIX only: the caller checks `os.fork` exists."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # threads exist; the child only writes its tables
        child = os.fork()
    if child == 0:
        try:
            if os.fork() == 0:
                try:
                    null = os.open(os.devnull, os.O_RDWR)
                    for fd in (0, 1, 2):
                        os.dup2(null, fd)
                    behind_the_agents()
                    work()
                finally:
                    os._exit(0)  # never flush the parent's buffered output a second time
        finally:
            os._exit(0)
    os.waitpid(child, 0)


def behind_the_agents() -> None:
    """Lower this process's CPU priority: a build running beside a client's calls slows them down otherwise
    (a new machine's first calls from several servers wait for the CPU it takes); alone it runs as fast."""
    with contextlib.suppress(OSError):
        os.nice(BUILD_NICENESS)


def _build(at: Callable[[Path], CatchUp], path: Path) -> None:
    """The background builder: the whole backlog, under the build lock (released when it exits)."""
    from contextflow.core.lock import LockTimeout, WriterLock

    lock = WriterLock(path.with_name(BUILD_LOCK), BUILD_WAIT_S)
    try:
        with lock:
            tables = at(path)
            try:  # (every projection: the lazy ones too)
                tables.update(BUILD_WAIT_S, foreground=True, also=[n for n, s in tables.sets.items() if s.lazy])
            finally:
                tables.close()
    except LockTimeout:
        return


def _read_at(blob: bytes, known: dict[bytes, tuple[int, ...]]) -> tuple[int, ...]:
    """The file signature a stored read position was taken at (device, inode, size, mtime), decoded once."""
    found = known.get(blob)
    if found is None:
        found = known[blob] = tuple(jsonio.loads(blob)[:4])
    return found
