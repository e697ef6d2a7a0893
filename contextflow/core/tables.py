"""Derived tables on disk: the views a call reads, in one SQLite database per store, shared by every
process of this machine. The only module that does SQLite I/O, with its parts: `core/projections.py`
(what a feature declares, the bookkeeping tables, the write transaction), `core/catchup.py`
(catching up from the logs, the background build, rows added ahead of it); `core/rest.py` answers beside
them while they do not hold every log.

On-disk contract (`<state folder>/views.sqlite3`, WAL mode: many readers and one writer; machine-local,
never synced, always safe to delete):

- Each feature that keeps tables declares a `Projection` (a projection): its `Format` (name, explicit
  version, code closure: `core/formats.py`), its schema and either one insert statement per table and
  `rows(event)`, a pure fold from one event to the rows it adds (keyed by the event: replaying an event
  adds nothing, so the fold is idempotent and order-free; "latest", "superseded" and filters are
  queries), or `apply(db, events)`, which folds a chunk's events into a view's state kept in its tables
  (the graph, records, conversations), with `load(db)` that whole state for a reader.
- `formats` holds the version each format was built with: a different version drops and rebuilds that
  format's tables only. `positions` holds, per format and log, the `log.Position` up to which its events
  are in: rows and read positions commit in one transaction, so a crash loses nothing and replays nothing.
- Clock stamps are stored shifted (`db_stamp`: SQLite's integers are signed) in columns named `hlc`.
- `bounds` holds the clock bounds read (`clock.bound`, core/scan.py): an event named by one is stored
  at the bound's stamp minus one, whichever of the two is read first (tables with `id` and `hlc`).

A read first compares every log's signature with the read positions (one stat each, one small query); while
nothing it depends on moved since they matched (`Tables._key`), it reads no bookkeeping table. When a
log grew, the process that sees it takes SQLite's write lock (waiting at most `wait` seconds), reads
only the new bytes, 8 MiB at a time through `core/log.py`, and commits after each chunk. A process
that cannot get the lock in time, or finds a build under way, has tables that hold part of the logs:
`serves(formats)` says so, and a reader that would answer "not found" or a short page from them reads
the tables with the rows of the logs' remaining bytes (`core/rest.py`). A backlog over BACKGROUND_BYTES (a fresh
machine, a format rebuilt) is built by one forked background process (`views.build.lock`) while
readers answer from what is built so far, plus the rows of this machine's log's newest bytes, added
ahead of the build (`Projection.ahead`). A log that no longer continues (compaction, a removed conflict
copy) rebuilds the formats that read it; a database that fails to open or read is deleted and rebuilt.

A `--stdin` batch (`adapters/batch.py`) reads its provisional events back from the tables (`overlaid`:
their rows in a write transaction held for the batch, never committed).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from contextflow.core import jsonio, legacy
from contextflow.core.catchup import BUILD_LOCK, CatchUp
from contextflow.core.catchup import BUILD_WAIT_S as BUILD_WAIT_S
from contextflow.core.catchup import READ_BYTES as READ_BYTES
from contextflow.core.fsutil import remove_derived, signature
from contextflow.core.log import Position
from contextflow.core.projections import WAIT_S as WAIT_S
from contextflow.core.projections import Projection as Projection
from contextflow.core.projections import Row as Row
from contextflow.core.projections import busy, damaged, patience, position_of, scoped_views, unread_bytes, waited_out
from contextflow.core.projections import db_stamp as db_stamp
from contextflow.core.projections import stamp_of as stamp_of

if TYPE_CHECKING:
    from contextflow.core.events import Event
    from contextflow.core.store import Store

# (`X as X` above: re-exported, features and scripts import `Row`, `Projection`, the stamps and waits from here)
H = TypeVar("H")
DB_FILE = "views.sqlite3"
CACHE_KB = 16 * 1024  # pages kept in memory: a chunk's index updates (a larger cache did not build faster)


class Tables(CatchUp):
    """The derived tables of one store, as this process sees them (one connection, one thread at a time)."""

    def __init__(
        self,
        store: Store,
        sets: Sequence[Projection],
        path: Path | None = None,
    ) -> None:
        self.store = store
        self.sets = {s.name: s for s in sets}
        self.path = path or store.state_dir / DB_FILE
        self._db: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None  # a scoped store's reads (`_reads`)
        self._mutex = threading.RLock()  # the HTTP bridge's threads share the connection
        self.caught_up = 0  # events this process folded in (for tests and benchmarks)
        self._failed = False  # the database does not open here
        self.busy = False  # the last `usable` found another process holding the new database's lock
        self._told: tuple[Path, Position | None] | None = None  # the last read a person was told about
        self.building = False  # a background process builds the backlog (answers hold what is built so far)
        self._settled = 0  # inside `as_of_now`: queries read the tables as they were brought up to date once
        self._backlog = False  # the last update found a build's worth to read (built in the background or elsewhere)
        self._ahead: dict[str, tuple[str, int]] = {}  # format -> (its build, bytes of this machine's log added ahead)
        self._ahead_stuck = False  # `views.ahead.lock` was held past WAIT_S: a build no longer waits for it
        self._checked: object = None  # the freshness key (`_key`) at which every format last held every log
        self._checked_also: frozenset[str] = frozenset()  # the lazy formats current at that key too
        self._current = False  # the last `update` found every format holding every log
        self._bad: tuple[object, int] | None = None  # (freshness key, malformed lines then): `bad_lines` asked again
        self._held = False  # inside `overlaid`: current as held, a batch's rows added, never committed
        self._pending: list[Event] = []  # a batch's events whose rows are added before the next statement
        self._caps: dict[str, int] = {}  # the clock bounds as the batch began

    def _key(self) -> object:
        """What the tables' freshness depends on: every log's signature (the store's listing, listed again when
        its folder changed, and a stat per log), the database's `data_version` (another process committed: a
        build, a format reset) and the formats' versions."""
        version = self._connect().execute("PRAGMA data_version").fetchone()[0]
        formats = tuple((name, table_set.format.version) for name, table_set in self.sets.items())
        logs = self.store._segment_paths()  # (the listing `Store.refresh` reads: a stat while the folder stays)
        return version, formats, tuple((str(path), signature(path)) for path in logs)

    def update(
        self, wait: float = WAIT_S, *, foreground: bool = False, ahead: bool = True, also: Iterable[str] = ()
    ) -> int:
        """`CatchUp.update`, skipped (returning 0) while nothing it depends on changed since it last
        found every format current (`_key`; the lazy ones named in `also` too): a warm read checks one
        stat per log and no table."""
        also = frozenset(also)
        with self._mutex:
            if self._held:
                return 0  # (as held for a batch: nothing else commits meanwhile)
            self._current = False
            try:
                key = self._key()
            except (sqlite3.DatabaseError, OSError):
                key = None
            if key is not None and key == self._checked and also <= self._checked_also:
                self._current = True
                return 0
            self._checked, db = None, self._db
            read = super().update(wait, foreground=foreground, ahead=ahead, also=also)
            if read >= 0 and self._found_current and self._db is db:  # (current as of `key`, or later)
                self._checked, self._checked_also, self._current = key, also, True
            return read

    # -- the connection ---------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            if not self.path.exists():  # private from the start (SQLite gives its -wal and -shm the same mode)
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY | os.O_NOFOLLOW, 0o600))
            elif not stat.S_ISREG(os.lstat(self.path).st_mode):  # a FIFO, device or link planted there: never opened
                raise sqlite3.DatabaseError(f"{self.path} is not a regular file")
            for suffix in ("-wal", "-shm"):  # a folder or link in their place: SQLite would open it read-only
                beside = Path(f"{self.path}{suffix}")
                if os.path.lexists(beside) and not stat.S_ISREG(os.lstat(beside).st_mode):
                    remove_derived(beside)
            wait = patience(WAIT_S)  # (none once this call waited out another process's lock)
            db = sqlite3.connect(self.path, timeout=wait, isolation_level=None, check_same_thread=False)
            try:
                if _wal(db, wait) != "wal":
                    raise sqlite3.DatabaseError("the database does not take WAL mode")
                if wait != WAIT_S:
                    db.execute(f"PRAGMA busy_timeout = {int(WAIT_S * 1000)}")  # (the next call's reads wait)
                db.execute("PRAGMA synchronous=NORMAL")  # derived state: a power cut may cost the last commits
                db.execute(f"PRAGMA cache_size=-{CACHE_KB}")  # a chunk's index updates stay in memory
            except BaseException:
                db.close()
                raise
            self._db = db
        if self._pending:  # (a batch's rows: added when something is read, so a batch that reads nothing adds none)
            events = list(self._pending)
            self._pending.clear()
            self._insert(self._db, events, [s for s in self.sets.values() if not s.lazy], self._caps)
        return self._db

    def _reads(self) -> sqlite3.Connection:
        """The connection reads go through: this store's, or for a store scoped to some projects (an HTTP
        grant's, `Store.read_projects`) a read-only one on which each table a format scopes (`Projection.scoped`)
        is a TEMP view of its rows of those projects: every query keeps to them, whoever wrote it."""
        db, projects = self._connect(), self.store.read_projects
        if projects is None:
            return db
        if self._reader is None:
            uri = f"{self.path.resolve().as_uri()}?mode=ro"
            reader = sqlite3.connect(uri, uri=True, timeout=WAIT_S, isolation_level=None, check_same_thread=False)
            for statement in scoped_views(self.sets.values(), projects):
                reader.execute(statement)
            self._reader = reader
        return self._reader

    def _discard(self) -> None:
        """Delete a damaged database (the logs stay the truth): the next use builds it again."""
        self.close()
        for suffix in ("", "-wal", "-shm"):
            remove_derived(Path(f"{self.path}{suffix}"))

    def usable(self) -> bool:
        """Whether the database opens here (else readers use the in-memory views: a state folder that is
        read-only or full must not stop a read)."""
        with self._mutex:
            if self._failed:
                return False
            try:
                self._connect()
                self.busy = False
            except sqlite3.DatabaseError as exc:
                if not damaged(exc):
                    self.busy = busy(exc)  # (still busy after waiting: not remembered, the next read tries again)
                    self._failed = not self.busy
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
            self._checked = None  # (a new connection's data_version starts afresh)
            for db in (self._db, self._reader):
                if db is not None:
                    db.close()
            self._db = self._reader = None

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

    def query(
        self, sql: str, params: Sequence[Any] = (), wait: float = WAIT_S, *, checked: bool = False
    ) -> list[tuple[Any, ...]]:
        """Rows of `sql` over tables brought up to date first (waiting at most `wait` s for another writer),
        unless `checked`: the caller found them current for its call (`serves`, `core/rest.py`'s `reading`).
        A database found damaged is deleted; then a `checked` caller gets the error (its reading answers from
        the logs instead, `core/rest.py`), a caller inside `as_of_now` a DamagedTables error, another the rows of
        the tables rebuilt in the foreground, or a StoreError when they are not (a backlog built in the
        background): never rows of an empty new file."""
        with self._mutex:
            try:
                if not self._settled and not checked:
                    self.update(wait)
                return self._reads().execute(sql, params).fetchall()
            except sqlite3.DatabaseError as exc:
                if "no such table" in str(exc):
                    return []  # another process is building the database: nothing in it yet
                if not damaged(exc):
                    raise
                self._discard()
                if checked:
                    raise
                if self._settled:  # (its call read older rows of the deleted file: it runs again, `found_damaged`)
                    raise _damaged_error(self.path) from exc
                self.update(wait)
                if not self._current:
                    raise _damaged_error(self.path) from exc
                return self._reads().execute(sql, params).fetchall()

    def peek(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of `sql` over the tables as they are (no catching up: for a caller that brought them up to
        date once for its call)."""
        with self._mutex:
            return self._reads().execute(sql, params).fetchall()

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """The tables as they are (no catching up), read in one transaction: what a chunk commits meanwhile
        is in none of the reads or in all of them (a reader adding the logs' remaining bytes to them). A database
        found damaged meanwhile is deleted, and a StoreError says so (never the reads of a damaged file)."""
        with self._mutex:
            try:
                db = self._reads()
                db.execute("BEGIN")
                try:
                    yield db
                finally:
                    db.execute("COMMIT")
            except sqlite3.DatabaseError as exc:
                if not damaged(exc):
                    raise
                self._discard()
                raise _damaged_error(self.path) from exc

    def current(self) -> bool:
        """Whether every format holds every log's events (one small query and a stat per log)."""
        with self._mutex:
            if self._held:
                return True
            try:
                retire, todo = self._plan(self._connect(), self._paths())
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):
                    return False
                raise
            return not retire and not todo

    @contextlib.contextmanager
    def overlaid(self) -> Iterator[Callable[[Sequence[Event]], None] | None]:
        """Inside: the tables holding every log (built in the foreground first if need be, a background
        build waited for within BUILD_WAIT_S), held so in one write transaction that is never committed, and
        `add(events)`, which puts provisional events' rows in it: every query of this process reads them
        with the tables. Leaving rolls them back. None (nothing held: reads fold the logs, as every read
        there) when the database does not open; a StoreError when its lock or a build is held past
        BUILD_WAIT_S."""
        with self._mutex:
            db = self._hold() if self.usable() else None
            if db is None:
                yield None
                return
            self._held, self._caps = True, dict(db.execute("SELECT id, cap FROM bounds").fetchall())
            try:
                yield self._pending.extend
            finally:
                self._held, self._checked = False, None
                self._pending.clear()
                with contextlib.suppress(sqlite3.Error):  # (a database found damaged meanwhile is gone)
                    db.execute("ROLLBACK")

    def _hold(self) -> sqlite3.Connection | None:
        """The connection, in a write transaction begun while every format holds every log (None: the
        state folder does not take the build's lock file)."""
        from contextflow.core.errors import StoreError
        from contextflow.core.lock import LockTimeout, WriterLock

        db = self._connect()
        try:
            for _ in range(3):  # (a log that grew between the update and the transaction: again)
                with WriterLock(self.path.with_name(BUILD_LOCK), BUILD_WAIT_S):  # no build under way meanwhile
                    self.update(BUILD_WAIT_S, foreground=True)
                    db.execute(f"PRAGMA busy_timeout = {int(BUILD_WAIT_S * 1000)}")
                    db.execute("BEGIN IMMEDIATE")
                retire, todo = self._plan(db, self._paths())
                if not retire and not todo:
                    return db
                db.execute("ROLLBACK")
        except OSError:
            return None
        except (LockTimeout, sqlite3.OperationalError) as exc:
            if db.in_transaction:
                db.execute("ROLLBACK")
            if isinstance(exc, sqlite3.OperationalError) and not busy(exc):
                raise
        finally:
            db.execute(f"PRAGMA busy_timeout = {int(WAIT_S * 1000)}")
        raise StoreError(
            f"the derived tables {self.path} stayed busy (another process building or writing them); "
            "a batch reads its own items back from them: try again, and if it persists run `contextflow doctor`"
        )

    def serves(self, names: Iterable[str], wait: float = WAIT_S) -> bool:
        """Whether formats `names` hold every log's events now, brought up to date first (waiting at most
        `wait` s for another writer). False while a build runs, another process holds the write lock or
        the database does not read: a reader then answers from the logs instead, never from a partial table
        ("not found" must never come from an unfinished build)."""
        wanted = set(names)
        with self._mutex:
            if self._held:
                return True
            if not self._settled:
                self._current = False
                self.update(wait)
                if self._current:  # (found current, now or at this very freshness key)
                    return True
            try:
                retire, todo = self._plan(self._connect(), self._paths(), wanted)
            except sqlite3.DatabaseError:
                return False
            return not retire and not todo

    def built(self) -> tuple[int, int]:
        """(bytes of the logs every format holds, bytes of the logs): how far a build is (the web page
        shows it while answers hold what is built so far)."""
        paths = self._paths()
        total = sum(unread_bytes(path, None) for path in paths)
        with self._mutex:
            try:
                rows = self._connect().execute("SELECT format, path, position FROM positions").fetchall()
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):
                    return 0, total
                raise
        held: dict[str, dict[str, int]] = {}
        for name, path, blob in rows:
            held.setdefault(str(path), {})[name] = int(jsonio.loads(blob)[4])
        names = [name for name, table_set in self.sets.items() if not table_set.lazy]
        done = sum(min((held.get(str(path), {}).get(name, 0) for name in names), default=0) for path in paths)
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
                tables = [
                    table
                    for table_set in self.sets.values()
                    if not table_set.lazy
                    for table in table_set.tables or tuple(table_set.inserts)
                ]
                try:
                    differ = [table for table in tables if not _same_rows(self._connect(), fresh._connect(), table)]
                except sqlite3.DatabaseError as exc:
                    if not damaged(exc):
                        raise
                    differ = [f"{self.path.name} ({exc})"]
            finally:
                fresh.close()
            if differ:
                self._discard()
            return differ

    def damage(self) -> str | None:
        """What SQLite's `PRAGMA quick_check` finds wrong with the database file (every page read, no index
        compared with its table; about 0.1 s for 100k events), or None when nothing is (or there is no file yet)."""
        with self._mutex:
            if not self.path.is_file():
                return None
            try:
                found = [str(row[0]) for row in self._connect().execute("PRAGMA quick_check(3)")]
            except sqlite3.DatabaseError as exc:
                if not damaged(exc):
                    raise
                return str(exc)
            if found == ["ok"]:
                return None
            return "; ".join(" ".join(line.replace("*** in database main ***", "").split()) for line in found)

    def found_damaged(self, exc: BaseException) -> bool:
        """Whether the database is damaged, asked after a read failed with `exc`: rows that cannot be (a
        LookupError: an index SQLite did not flag) or a file that does not read make SQLite check every page
        (`damage`) then only, never on a read's way; a damaged database is deleted (the logs stay the truth).
        True too for a DamagedTables error (found and deleted already)."""
        from contextflow.core.errors import DamagedTables

        if isinstance(exc, DamagedTables):
            return True  # (deleted already)
        if not isinstance(exc, (LookupError, sqlite3.DatabaseError)) or busy(exc):
            return False  # (another process's lock is no damage: the file is not read again to check)
        try:
            if self.damage() is None:
                return False
        except (sqlite3.Error, OSError):
            return False
        self._discard()
        return True

    def rebuild(self) -> None:
        """Delete the database and build it again from the logs, in the foreground (for `doctor`)."""
        with self._mutex:
            self._discard()
            self.update(BUILD_WAIT_S, foreground=True)

    def positions(self, name: str) -> dict[str, Position]:
        """Per log, the read position up to which format `name` holds its events (reads, never updates; inside
        `snapshot`, in its transaction)."""
        with self._mutex:
            try:
                found = (
                    self._reads().execute("SELECT path, position FROM positions WHERE format = ?", (name,)).fetchall()
                )
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):
                    return {}
                raise
        return {str(path): position_of(blob) for path, blob in found}

    def paths(self) -> list[Path]:
        """The logs the tables read."""
        return self._paths()

    def bad_lines(self) -> int:
        """Lines of the logs that are not readable events, as far as the tables have read (as they are: the
        caller brought them up to date for its call). Read once per freshness key (`_key`): only a commit
        changes the count, and a commit changes the key."""
        with self._mutex:
            key = self._checked if self._current else None
            if key is not None and self._bad is not None and self._bad[0] == key:
                return self._bad[1]
            try:
                found = self.query("SELECT max(bad) FROM positions GROUP BY path", checked=True)
            except sqlite3.DatabaseError as exc:
                if not damaged(exc) and not busy(exc):
                    raise
                return 0  # (found damaged and deleted, or locked by another process: the tables read no log now)
            count = int(sum(count for (count,) in found))
            self._bad = (key, count) if key is not None else None
            return count

    def _paths(self) -> list[Path]:
        return list(self.store._segment_paths())  # (listed again only when a folder changed: `Store`)

    def _at(self, path: Path) -> Tables:
        return Tables(self.store, list(self.sets.values()), path)

    def oversized(self) -> bool:
        """A ContextFlowMCP file over its size limit is never read: reads that would need it go to the
        store, which refuses them (core/legacy.py) as ContextFlowMCP would."""
        roots, limit = self.store.location.legacy_files, self.store.legacy_max_bytes
        return bool(roots) and any(legacy.oversize(path, roots, limit) for path in legacy.files(roots))


def _damaged_error(path: Path) -> Exception:
    from contextflow.core.errors import DamagedTables

    return DamagedTables(
        f"the derived tables {path} were damaged: they are deleted and being rebuilt from the logs (nothing is "
        "lost); ask again shortly, and run `contextflow doctor` if it persists"
    )


def _same_rows(one: sqlite3.Connection, other: sqlite3.Connection, table: str) -> bool:
    """Whether two databases' `table` hold the same rows (compared in order, a row at a time)."""
    count = len(one.execute(f'SELECT * FROM "{table}" LIMIT 0').description)
    sql = f'SELECT * FROM "{table}" ORDER BY {", ".join(str(n) for n in range(1, count + 1))}'
    left, right = one.execute(sql), other.execute(sql)
    while True:
        a, b = left.fetchmany(1000), right.fetchmany(1000)
        if a != b:
            return False
        if not a:
            return True


def describe(tables: Tables, check: bool = True) -> dict[str, Any]:
    """Where the derived tables are, how big and how current, and (`check`) what SQLite finds damaged in the file
    (`Tables.damage`) (for `doctor`; reads, never updates)."""
    size = sum(p.stat().st_size for p in tables.path.parent.glob(DB_FILE + "*") if p.is_file())
    damage, current, locked = None, False, False
    try:
        damage = tables.damage() if check else None
        current = tables.current() and not damage
    except sqlite3.DatabaseError as exc:
        locked = busy(exc)  # (another process holds the file in rollback-journal mode: neither can be told)
        if check and not locked:
            raise
    return {
        "file": str(tables.path),
        "bytes": size,
        "current": current,
        "locked": locked,
        "damaged": damage,
        "empty": not tables.paths(),  # no log yet: nothing to hold
        "formats": {name: s.format.version for name, s in tables.sets.items()},
        "rebuild": f"delete {tables.path} (the next read rebuilds it from the logs)",
    }


def _wal(db: sqlite3.Connection, wait: float) -> str:
    """Put a new connection in WAL mode: two connections making a new file WAL at once deadlock, and SQLite then
    answers one "locked" at once rather than wait; that one tries again until `wait` s have passed. Still
    locked then (another process holds the file in rollback-journal mode): the call waits no more (`waited_out`)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            return str(db.execute("PRAGMA journal_mode=WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if not busy(exc) or time.monotonic() >= deadline:
                if busy(exc) and wait:
                    waited_out()
                raise
            time.sleep(0.01)


class PerStore(Generic[H]):
    """This process's one handle of a kind per store object (its tables, its search index). Threads asking at
    once get the same one: two handles would race to make a new `views.sqlite3`, and SQLite answers one of
    them "locked" without waiting. The lock is made anew in a forked child (a background build, forked from
    whichever thread caught up): another thread may have held it at the fork."""

    def __init__(self) -> None:
        self._found: weakref.WeakKeyDictionary[Store, H] = weakref.WeakKeyDictionary()
        self.lock = threading.Lock()
        os.register_at_fork(after_in_child=self._unlock)

    def _unlock(self) -> None:
        self.lock = threading.Lock()

    def get(self, store: Store, make: Callable[[], H]) -> H:
        found = self._found.get(store)
        if found is None:
            made = make()  # (outside the lock: it may import the features; one made twice is dropped unused)
            with self.lock:
                found = self._found.setdefault(store, made)
        return found

    def pop(self, store: Store) -> H | None:
        with self.lock:
            return self._found.pop(store, None)


_OPEN: PerStore[Tables] = PerStore()


def tables_for(store: Store, sets: Callable[[], Sequence[Projection]]) -> Tables:
    """This process's handle on the store's derived tables (one per store object)."""
    return _OPEN.get(store, lambda: Tables(store, sets()))


def close_for(store: Store) -> None:
    found = _OPEN.pop(store)
    if found is not None:
        found.close()
