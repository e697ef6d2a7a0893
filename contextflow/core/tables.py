"""Derived tables on disk: the views a call reads, in one SQLite database per store, shared by every
process of this machine. The only module that does SQLite I/O.

On-disk contract (`<state folder>/views.sqlite3`, WAL mode: many readers and one writer; machine-local,
never synced, always safe to delete):

- Each feature that keeps tables declares a `TableSet`: its `Format` (name, explicit version, code
  closure: `core/formats.py`), its schema, one insert statement per table and `rows(event)`, a pure
  fold from one event to the rows it adds. Rows are keyed by the event (replaying an event adds
  nothing), so the fold is idempotent and order-free; "latest", "superseded" and filters are queries.
- `formats` holds the version each format was built with: a different version drops and rebuilds that
  format's tables only. `cursors` holds, per format and log, the `log.Cursor` up to which its events
  are in: rows and cursors commit in one transaction, so a crash loses nothing and replays nothing.
- Clock stamps are stored shifted (`db_stamp`: SQLite's integers are signed) in columns named `hlc`.
- `bounds` holds the clock bounds read (`clock.bound`, core/fold.py): an event named by one is stored
  at the bound's stamp minus one, whichever of the two is read first (tables with `id` and `hlc`).

A read first compares every log's signature with the cursors (one stat each, one small query). When a
log grew, the process that sees it takes SQLite's write lock (waiting at most `wait` seconds), reads
only the new bytes, 8 MiB at a time through `core/log.py`, and commits after each chunk; a process
that cannot get the lock in time answers from what is there (a build in progress is partial, never
wrong). A backlog over BACKGROUND_BYTES (a fresh machine, a format rebuilt) is built by one forked
background process (`views.build.lock`) while readers answer from what is built so far. A log that
no longer continues (compaction, a removed conflict copy) rebuilds the formats that read it; a
database that fails to open or read is deleted and rebuilt.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from contextflow.core import legacy
from contextflow.core.events import BadLine, Event, decode
from contextflow.core.fields import conform
from contextflow.core.fold import BOUND_KIND
from contextflow.core.formats import Format
from contextflow.core.fsutil import signature
from contextflow.core.log import Cursor, list_segments, read_new, read_tail
from contextflow.core.segments import much_to_read

if TYPE_CHECKING:
    from contextflow.core.store import Store

DB_FILE = "views.sqlite3"
READ_BYTES = 8 * 1024 * 1024  # new bytes read (and committed) at a time
WAIT_S = 2.0  # a reader waits this long for the writer, then answers from what is there
BACKGROUND_BYTES = 32 * 1024 * 1024  # a reader finding more unread than this has it built in the background
BUILD_LOCK = "views.build.lock"  # held by the one process building in the background
BUILD_WAIT_S = 60.0  # an explicit update (doctor, a benchmark's build) waits this long
CACHE_KB = 16 * 1024  # pages kept in memory: a chunk's index updates (a larger cache did not build faster)
Row = tuple[str, tuple[Any, ...]]  # (table, values in its insert statement's order)
STAMP_OFFSET = 1 << 63  # clock stamps run to 2**64 (clock.MAX_HLC); SQLite's integers are signed 64-bit


def db_stamp(hlc: int) -> int:
    """A clock stamp as an `hlc` column holds it (shifted into SQLite's range, order kept)."""
    return hlc - STAMP_OFFSET


def stamp_of(value: int) -> int:
    """The clock stamp an `hlc` column holds."""
    return value + STAMP_OFFSET


_META = """
CREATE TABLE IF NOT EXISTS formats(name TEXT PRIMARY KEY, version INTEGER NOT NULL, built TEXT) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS cursors(
    format TEXT NOT NULL, path TEXT NOT NULL, cursor BLOB NOT NULL, complete INTEGER NOT NULL,
    bad INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(format, path)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS bounds(id TEXT PRIMARY KEY, cap INTEGER NOT NULL) WITHOUT ROWID;
"""


@dataclass(frozen=True)
class TableSet:
    """One derived format's tables: what a feature declares, the rest is done here."""

    format: Format
    schema: tuple[str, ...]  # CREATE TABLE / INDEX / TRIGGER statements, one each
    inserts: Mapping[str, str]  # table -> its INSERT statement (`?` parameters)
    rows: Callable[[Event], Iterable[Row]]  # the pure fold
    bounded: tuple[str, ...] = ()  # tables whose `hlc` a clock bound lowers (by their `id` column)
    tables: tuple[str, ...] = ()  # every table it owns (dropped on a rebuild); its insert tables by default

    @property
    def name(self) -> str:
        return self.format.name


class Busy(RuntimeError):
    """Another process holds the write lock: answer from what is there."""


def _cursor_blob(cursor: Cursor) -> bytes:
    hashes = [cursor.tail.hex(), cursor.blocks.hex(), cursor.partial.hex()]
    return orjson.dumps([cursor.dev, cursor.ino, cursor.size, cursor.mtime_ns, cursor.offset, cursor.lines, *hashes])


def _cursor(blob: bytes) -> Cursor:
    dev, ino, size, mtime_ns, offset, lines, tail, blocks, partial = orjson.loads(blob)
    return Cursor(
        dev, ino, size, mtime_ns, offset, lines, bytes.fromhex(tail), bytes.fromhex(blocks), bytes.fromhex(partial)
    )


def _unread(path: Path, blob: bytes | None) -> int:
    sig = signature(path)
    return max(0, (sig[2] if sig else 0) - (orjson.loads(blob)[4] if blob else 0))


def _damaged(exc: BaseException) -> bool:
    """A database that does not read (not one that is busy, full or read-only: those pass)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    message = str(exc).lower()
    passing = ("locked", "busy", "full", "readonly", "read-only", "interrupt", "no such table")
    return not any(word in message for word in passing)


def _busy(exc: BaseException) -> bool:
    return "locked" in str(exc).lower() or "busy" in str(exc).lower()


class Tables:
    """The derived tables of one store, as this process sees them (one connection, one thread at a time)."""

    def __init__(self, store: Store, sets: Sequence[TableSet], path: Path | None = None) -> None:
        self.store = store
        self.sets = {s.name: s for s in sets}
        self.path = path or store.state_dir / DB_FILE
        self._db: sqlite3.Connection | None = None
        self._mutex = threading.RLock()  # the HTTP bridge's threads share the connection
        self.caught_up = 0  # events this process folded in (for tests and benchmarks)
        self._failed = False  # the database does not open here
        self._told: tuple[Path, Cursor | None] | None = None  # the last read a person was told about
        self.building = False  # a background process builds the backlog (answers hold what is built so far)
        self._settled = 0  # inside `as_of_now`: queries read the tables as they were brought up to date once

    # -- the connection ---------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            if not self.path.exists():  # private from the start (SQLite gives its -wal and -shm the same mode)
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY | os.O_NOFOLLOW, 0o600))
            elif not stat.S_ISREG(os.lstat(self.path).st_mode):  # a FIFO, device or link planted there: never opened
                raise sqlite3.DatabaseError(f"{self.path} is not a regular file")
            db = sqlite3.connect(self.path, timeout=WAIT_S, isolation_level=None, check_same_thread=False)
            try:
                if db.execute("PRAGMA journal_mode=WAL").fetchone()[0] != "wal":
                    raise sqlite3.DatabaseError("the database does not take WAL mode")
                db.execute("PRAGMA synchronous=NORMAL")  # derived state: a power cut may cost the last commits
                db.execute(f"PRAGMA cache_size=-{CACHE_KB}")  # a chunk's index updates stay in memory
            except BaseException:
                db.close()
                raise
            self._db = db
        return self._db

    def _discard(self) -> None:
        """Delete a damaged database (the logs stay the truth): the next use builds it again."""
        if self._db is not None:
            self._db.close()
            self._db = None
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def usable(self) -> bool:
        """Whether the database opens here (else readers use the in-memory views: a state folder that is
        read-only or full must not stop a read)."""
        with self._mutex:
            if self._failed:
                return False
            try:
                self._connect()
            except sqlite3.DatabaseError as exc:
                if not _damaged(exc):
                    self._failed = True
                    return False
                self._discard()
                try:
                    self._connect()
                except (sqlite3.DatabaseError, OSError):
                    self._failed = True
            except OSError:
                self._failed = True
            return not self._failed

    def close(self) -> None:
        with self._mutex:
            if self._db is not None:
                self._db.close()
                self._db = None

    # -- reading ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def as_of_now(self, wait: float = WAIT_S) -> Iterator[None]:
        """Queries inside read the tables brought up to date once, at the start: the reads of one call (a
        session start's dozens of small queries) check the logs once, not once each."""
        with self._mutex:
            self.update(wait)
            self._settled += 1
            try:
                yield
            finally:
                self._settled -= 1

    def query(self, sql: str, params: Sequence[Any] = (), wait: float = WAIT_S) -> list[tuple[Any, ...]]:
        """Rows of `sql` over tables brought up to date first (waiting at most `wait` s for another writer)."""
        with self._mutex:
            for attempt in range(2):
                try:
                    if not self._settled:
                        self.update(wait)
                    return self._connect().execute(sql, params).fetchall()
                except sqlite3.DatabaseError as exc:
                    if "no such table" in str(exc):
                        return []  # another process is building the database: nothing in it yet
                    if attempt or not _damaged(exc):
                        raise
                    self._discard()
            raise AssertionError("unreachable")

    def current(self) -> bool:
        """Whether every format holds every log's events (one small query and a stat per log)."""
        with self._mutex:
            try:
                retire, todo = self._plan(self._connect(), self._paths())
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):
                    return False
                raise
            return not retire and not todo

    def built(self) -> tuple[int, int]:
        """(bytes of the logs every format holds, bytes of the logs): how far a build is (the web page
        shows it while answers hold what is built so far)."""
        paths = self._paths()
        total = sum(_unread(path, None) for path in paths)
        with self._mutex:
            try:
                rows = self._connect().execute("SELECT format, path, cursor FROM cursors").fetchall()
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):
                    return 0, total
                raise
        held: dict[str, dict[str, int]] = {}
        for name, path, blob in rows:
            held.setdefault(str(path), {})[name] = int(orjson.loads(blob)[4])
        done = sum(min((held.get(str(path), {}).get(name, 0) for name in self.sets), default=0) for path in paths)
        return min(done, total), total

    def differing(self) -> list[str]:
        """The tables whose rows differ from a fresh build from the logs (for `doctor`); when any do, the
        database is deleted (forged or damaged: the next read builds it again)."""
        import tempfile

        with self._mutex, tempfile.TemporaryDirectory(dir=self.path.parent) as folder:
            fresh = Tables(self.store, list(self.sets.values()), Path(folder) / DB_FILE)
            try:
                fresh.update(BUILD_WAIT_S, foreground=True)
                self.update(BUILD_WAIT_S, foreground=True)
                differ = [
                    table
                    for table_set in self.sets.values()
                    for table in table_set.tables or tuple(table_set.inserts)
                    if not _same_rows(self._connect(), fresh._connect(), table)
                ]
            finally:
                fresh.close()
            if differ:
                self._discard()
            return differ

    def cursors(self, name: str) -> dict[str, Cursor]:
        """Per log, the cursor up to which format `name` holds its events (reads, never updates)."""
        with self._mutex:
            try:
                found = self._connect().execute("SELECT path, cursor FROM cursors WHERE format = ?", (name,)).fetchall()
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):
                    return {}
                raise
        return {str(path): _cursor(blob) for path, blob in found}

    def paths(self) -> list[Path]:
        """The logs the tables read."""
        return self._paths()

    def bad_lines(self) -> int:
        """Lines of the logs that are not readable events, as far as the tables have read."""
        found = self.query("SELECT max(bad) FROM cursors GROUP BY path")
        return sum(count for (count,) in found)

    def _paths(self) -> list[Path]:
        return list_segments(self.store.folder, self.store.location.legacy_files)

    def oversized(self) -> bool:
        """A ContextFlowMCP file over its size limit is never read: reads that would need it go to the
        store, which refuses them (core/legacy.py) as ContextFlowMCP would."""
        roots, limit = self.store.location.legacy_files, self.store.legacy_max_bytes
        return bool(roots) and any(legacy.oversize(path, roots, limit) for path in legacy.files(roots))

    # -- updating ---------------------------------------------------------------------------

    def update(self, wait: float = WAIT_S, *, foreground: bool = False) -> int:
        """Fold the logs' new events into every format; returns how many events were read. When another
        process holds the write lock longer than `wait` s, returns -1 (the tables answer as they are).
        Unless `foreground`, a backlog over BACKGROUND_BYTES (a fresh machine, a format rebuilt) is built
        by one background process while this one answers from what is there (also -1)."""
        with self._mutex:
            try:
                return self._update(wait, foreground)
            except Busy:
                return -1
            except sqlite3.DatabaseError as exc:
                if not _damaged(exc):
                    return -1  # the disk is full or read-only: the tables answer as they are
                self._discard()
                return self._update(wait, foreground)

    def _update(self, wait: float, foreground: bool) -> int:
        db = self._connect()
        try:
            db.executescript(_META)  # (nothing to do once they exist)
        except sqlite3.OperationalError as exc:
            if not _busy(exc):
                raise
            raise Busy(str(exc)) from None  # another process is making the database
        retire, todo = self._plan(db, self._paths())
        if not retire and not todo:
            return 0
        paths = self._paths()
        passes = 2 * sum(_unread(path, None) for path in paths) // READ_BYTES + 4 * len(paths) + 16  # a rebuild's twice
        unread = sum(_unread(path, None) for path in paths) if retire else sum(_unread(p, b) for p, b, _ in todo)
        backlog = unread > READ_BYTES
        if not foreground and unread > BACKGROUND_BYTES and hasattr(os, "fork"):
            self._build_in_background(unread)
            return -1
        if backlog:  # a build: no fsync per chunk (a crash of the OS may cost the derived state, which is rebuilt)
            db.execute("PRAGMA synchronous=OFF")
        try:
            return self._chunks(db, passes, backlog, wait)
        finally:
            if backlog:
                with contextlib.suppress(sqlite3.Error):  # (a damaged database is deleted by the caller)
                    db.execute("PRAGMA synchronous=NORMAL")

    def _chunks(self, db: sqlite3.Connection, passes: int, backlog: bool, wait: float) -> int:
        """Up to `passes` chunks, each in its own transaction; returns how many events were read."""
        read, resets = 0, 0
        for number in range(passes):  # one chunk a transaction, so readers see a build grow and a crash loses one
            # much to read and another process already at it: answer from what is there (`Busy`), never build twice
            with _Txn(db, 0 if backlog and not number else wait):
                retire, todo = self._plan(db, self._paths())
                for name in retire:
                    self._reset(db, name)
                resets += bool(retire)
                if retire and resets <= 4:
                    continue
                if not todo:
                    break
                path, blob, names = todo[0]
                read += self._read(db, path, blob, names)
        return read

    def _build_in_background(self, unread: int) -> None:
        """Have one background process build the tables (none when one already does)."""
        from contextflow.core.lock import LockTimeout, WriterLock
        from contextflow.core.snapshot import in_background

        self.building = True
        lock = WriterLock(self.path.with_name(BUILD_LOCK), 0)
        try:
            lock.acquire()
        except LockTimeout:
            return  # another process builds them
        lock.release()  # the builder takes it
        if self.store.progress is not None:
            self.store.progress(
                f"building this machine's views from {unread / 1e6:.0f} MB of logs in the background; "
                "until it is done, answers hold what is built so far"
            )
        self.close()  # no database connection crosses the fork
        store, sets, path = self.store, list(self.sets.values()), self.path
        in_background(lambda: _build(store, sets, path))

    def _plan(
        self, db: sqlite3.Connection, paths: list[Path]
    ) -> tuple[list[str], list[tuple[Path, bytes | None, list[str]]]]:
        """(formats to rebuild, [(log, the cursor to read it from, the formats at that cursor)])."""
        versions = dict(db.execute("SELECT name, version FROM formats").fetchall())
        stored: dict[str, dict[str, tuple[bytes, int]]] = {}
        for name, path, blob, complete in db.execute("SELECT format, path, cursor, complete FROM cursors"):
            stored.setdefault(name, {})[path] = (blob, complete)
        names = {str(p) for p in paths}
        retire = [
            name
            for name, table_set in self.sets.items()
            if versions.get(name) != table_set.format.version or any(p not in names for p in stored.get(name, {}))
        ]
        if retire:
            return retire, []
        todo: list[tuple[Path, bytes | None, list[str]]] = []
        for path in paths:
            sig = signature(path)
            groups: dict[bytes | None, list[str]] = {}
            for name in self.sets:
                found = stored.get(name, {}).get(str(path))
                if found is not None and found[1] and sig is not None and tuple(orjson.loads(found[0])[:4]) == sig:
                    continue
                if found is None and sig is None:
                    continue
                groups.setdefault(found[0] if found else None, []).append(name)
            todo += [(path, blob, group) for blob, group in groups.items()]
        return [], todo

    def _reset(self, db: sqlite3.Connection, name: str) -> None:
        """Start format `name` over (in the caller's transaction): tables empty, no cursor, its version recorded."""
        table_set = self.sets[name]
        for table in table_set.tables or tuple(table_set.inserts):
            db.execute(f'DROP TABLE IF EXISTS "{table}"')  # (its indexes and triggers go with it)
        for statement in table_set.schema:
            db.execute(statement)
        db.execute("DELETE FROM cursors WHERE format = ?", (name,))
        built = os.urandom(8).hex()  # a new build: readers that folded the old rows start over
        db.execute(
            "INSERT OR REPLACE INTO formats(name, version, built) VALUES (?, ?, ?)",
            (name, table_set.format.version, built),
        )

    def _read(self, db: sqlite3.Connection, path: Path, blob: bytes | None, names: list[str]) -> int:
        """Read one chunk of `path`'s new lines into formats `names` (inside the caller's transaction)."""
        start = _cursor(blob) if blob is not None else None
        if self.store.progress is not None and (note := much_to_read(path, start)) and self._told != (path, start):
            self._told = (path, start)
            self.store.progress(note)  # a person at a terminal: a first read of a big log is slow
        try:
            chunk = read_new(path, start, READ_BYTES)
        except FileNotFoundError:  # gone since it was listed: the next pass lists again
            return 0
        if chunk.reset:
            for name in names:
                self._reset(db, name)
            return 0
        caps = dict(db.execute("SELECT id, cap FROM bounds").fetchall()) if chunk.lines else {}
        sets = [self.sets[name] for name in names]
        rows: dict[str, dict[tuple[Any, ...], None]] = {}
        schema, count, bad = self.store.fields, 0, 0
        for line_no, raw in chunk.lines:
            try:
                event = decode(raw, line_no)
            except BadLine:
                bad += 1
                continue
            data, dropped = conform(schema, event.kind, event.data)
            if dropped:
                event = Event(event.id, event.writer, event.seq, event.hlc, event.kind, data)
            count += 1
            if event.kind == BOUND_KIND:
                self._bound(db, event, sets, caps)
            cap = caps.get(event.id)
            if cap is not None and event.hlc > cap:
                event = Event(event.id, event.writer, event.seq, cap, event.kind, event.data)
            for table_set in sets:
                for table, values in table_set.rows(event):
                    rows.setdefault(f"{table_set.name}\0{table}", {})[values] = None
        for where, found in rows.items():
            name, table = where.split("\0")
            db.executemany(self.sets[name].inserts[table], list(found))
        complete = chunk.cursor.offset - (start.offset if start else 0) < READ_BYTES
        before = dict(db.execute("SELECT format, bad FROM cursors WHERE path = ?", (str(path),)).fetchall())
        db.executemany(
            "INSERT OR REPLACE INTO cursors(format, path, cursor, complete, bad) VALUES (?, ?, ?, ?, ?)",
            [(name, str(path), _cursor_blob(chunk.cursor), int(complete), before.get(name, 0) + bad) for name in names],
        )
        self.caught_up += count
        return count

    def _bound(self, db: sqlite3.Connection, bound: Event, sets: list[TableSet], caps: dict[str, int]) -> None:
        ids = bound.data.get("ids")
        cap = max(bound.hlc - 1, 0)
        for event_id in ids if isinstance(ids, list) else ():
            if not isinstance(event_id, str) or event_id == bound.id or cap >= caps.get(event_id, cap + 1):
                continue
            caps[event_id] = cap
            db.execute("INSERT OR REPLACE INTO bounds(id, cap) VALUES (?, ?)", (event_id, cap))
            for table_set in sets:
                for table in table_set.bounded:
                    db.execute(
                        f'UPDATE "{table}" SET hlc = ? WHERE id = ? AND hlc > ?',
                        (db_stamp(cap), event_id, db_stamp(cap)),
                    )


def _build(store: Store, sets: list[TableSet], path: Path) -> None:
    """The background builder: the whole backlog, under the build lock (released when it exits)."""
    from contextflow.core.lock import LockTimeout, WriterLock

    lock = WriterLock(path.with_name(BUILD_LOCK), BUILD_WAIT_S)
    try:
        with lock:
            tables = Tables(store, sets, path)
            try:
                tables.update(BUILD_WAIT_S, foreground=True)
            finally:
                tables.close()
    except LockTimeout:
        return


def _same_rows(one: sqlite3.Connection, other: sqlite3.Connection, table: str) -> bool:
    """Whether two databases' `table` hold the same rows (compared in order, a row at a time)."""
    columns = len(one.execute(f'SELECT * FROM "{table}" LIMIT 0').description)
    order = ", ".join(str(n) for n in range(1, columns + 1))
    sql = f'SELECT * FROM "{table}" ORDER BY {order}'
    left, right = one.execute(sql), other.execute(sql)
    while True:
        a, b = left.fetchmany(1000), right.fetchmany(1000)
        if a != b:
            return False
        if not a:
            return True


class _Txn:
    """One write transaction under SQLite's lock, waiting at most `wait` s for it (else `Busy`)."""

    def __init__(self, db: sqlite3.Connection, wait: float) -> None:
        self.db, self.wait = db, wait

    def __enter__(self) -> None:
        self.db.execute(f"PRAGMA busy_timeout = {int(self.wait * 1000)}")
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if _busy(exc):
                raise Busy(str(exc)) from None
            raise

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        if not self.db.in_transaction:
            return
        if kind is None:
            self.db.execute("COMMIT")
        else:
            self.db.execute("ROLLBACK")


def describe(tables: Tables) -> dict[str, Any]:
    """Where the derived tables are, how big and how current (for `doctor`; reads, never updates)."""
    size = sum(p.stat().st_size for p in tables.path.parent.glob(DB_FILE + "*") if p.is_file())
    try:
        current = tables.current()
    except sqlite3.DatabaseError:
        current = False
    return {
        "file": str(tables.path),
        "bytes": size,
        "current": current,
        "formats": {name: s.format.version for name, s in tables.sets.items()},
        "rebuild": f"delete {tables.path} (the next read rebuilds it from the logs)",
    }


_OPEN: weakref.WeakKeyDictionary[Store, Tables] = weakref.WeakKeyDictionary()


def tables_for(store: Store, sets: Callable[[], Sequence[TableSet]]) -> Tables:
    """This process's handle on the store's derived tables (one per store object)."""
    found = _OPEN.get(store)
    if found is None:
        found = _OPEN[store] = Tables(store, sets())
    return found


def close_for(store: Store) -> None:
    found = _OPEN.pop(store, None)
    if found is not None:
        found.close()


TAIL_BYTES = 1024 * 1024  # of each log, read by a process answering while the tables are built


class TailTables(Tables):
    """The tables of the logs' newest events only, in memory, never updated: what a short-lived process
    (the session start) answers from while this machine's tables are built in the background, instead of
    nothing. About `limit` bytes of each log are read; only events at or after `horizon` (the oldest stamp
    every log's tail reaches back to) are kept, so what is there is every event since then."""

    def __init__(self, store: Store, sets: Sequence[TableSet], limit: int = TAIL_BYTES) -> None:
        super().__init__(store, sets, Path(":memory:"))
        db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        db.executescript(_META)
        for table_set in self.sets.values():
            for statement in table_set.schema:
                db.execute(statement)
        self._db = db
        tails: list[list[tuple[int, bytes]]] = []
        self.horizon = 0
        for path in self._paths():
            try:
                lines = read_tail(path, limit)
                cut = path.stat().st_size > limit
            except OSError:
                continue
            tails.append(lines)
            first = next((event for event in _events(lines[:50], store)), None)
            if cut and first is not None:
                self.horizon = max(self.horizon, first.hlc)
        caps: dict[str, int] = {}
        sets = list(self.sets.values())
        db.execute("BEGIN")
        for lines in tails:
            rows: dict[str, dict[tuple[Any, ...], None]] = {}
            for event in _events(lines, store):
                if event.hlc < self.horizon:
                    continue
                self.caught_up += 1
                if event.kind == BOUND_KIND:
                    self._bound(db, event, sets, caps)
                cap = caps.get(event.id)
                if cap is not None and event.hlc > cap:
                    event = Event(event.id, event.writer, event.seq, cap, event.kind, event.data)
                for table_set in sets:
                    for table, values in table_set.rows(event):
                        rows.setdefault(f"{table_set.name}\0{table}", {})[values] = None
            for where, found in rows.items():
                name, table = where.split("\0")
                db.executemany(self.sets[name].inserts[table], list(found))
        db.execute("COMMIT")

    def _connect(self) -> sqlite3.Connection:
        assert self._db is not None
        return self._db

    def update(self, wait: float = WAIT_S, *, foreground: bool = False) -> int:
        return 0

    def current(self) -> bool:
        return False


def _events(lines: list[tuple[int, bytes]], store: Store) -> Iterator[Event]:
    """The readable events of these lines, each field checked as every reader checks it."""
    for line_no, raw in lines:
        try:
            event = decode(raw, line_no)
        except BadLine:
            continue
        data, dropped = conform(store.fields, event.kind, event.data)
        yield Event(event.id, event.writer, event.seq, event.hlc, event.kind, data) if dropped else event


def answer_from_tail(
    store: Store, sets: Callable[[], Sequence[TableSet]], needed: Iterable[str], limit: int = TAIL_BYTES
) -> bool:
    """While this machine's tables are built in the background, have this process's reads of `store`
    answered from the logs' newest events (`TailTables` of the formats `needed`; the others read as
    empty); False when the tables are there to answer."""
    tables = tables_for(store, sets)
    if not tables.building:
        return False
    tables.close()
    wanted = set(needed)
    _OPEN[store] = TailTables(store, [s for s in sets() if s.name in wanted], limit)
    return True
