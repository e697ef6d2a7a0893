"""What a feature declares for its derived tables (`Projection`, its rows, clock stamps as stored) and
what the handle (`core/tables.py`) and its updater (`core/catchup.py`) share: the bookkeeping
tables, the read position as stored, the errors told apart, the write transaction, a log's readable events."""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar

from contextflow.core import jsonio
from contextflow.core.events import BadLine, Event, decode
from contextflow.core.fields import conform
from contextflow.core.formats import Format
from contextflow.core.fsutil import signature
from contextflow.core.log import Position
from contextflow.core.scan import Unneeded

if TYPE_CHECKING:
    from contextflow.app import App
    from contextflow.core.store import Store

WAIT_S = 2.0  # a reader waits this long for the writer, then answers from what is there
TAIL_BYTES = 1024 * 1024  # of each log, read by a process answering while the tables are built
TAIL_BUDGET = 8 * TAIL_BYTES  # of all logs together: more of the busiest writer's, whose bytes span the least time
Row = tuple[str, tuple[Any, ...]]  # (table, values in its insert statement's order)
CHUNK = 400  # parameters per `IN (...)` a projection's queries pass (SQLite allows 32,766; smaller lists plan as well)
STAMP_OFFSET = 1 << 63  # clock stamps run to 2**64 (clock.MAX_HLC); SQLite's integers are signed 64-bit


# A call's readings (`core.rest.reading`): whole under `whole_reads` (the tables built first, waited for this many
# seconds at most), and whether one was partial while `never_unbuilt` runs
WHOLE: ContextVar[float | None] = ContextVar("whole", default=None)
PARTIAL_READS: ContextVar[list[bool] | None] = ContextVar("partial_reads", default=None)  # [read partially]
UNBUILT_WAIT_S = 15.0  # a call that found nothing in a partial reading waits this long for the build (clients
# give up on a tool call after 60 s)
# Inside `one_wait` (one call): [waited out another process's lock on the tables]; then no statement waits again
LOCK_SEEN: ContextVar[list[bool] | None] = ContextVar("lock_seen", default=None)
T = TypeVar("T")


@contextlib.contextmanager
def one_wait() -> Iterator[None]:
    """Inside (one call), another process's lock on the tables is waited for once: after one statement waited
    WAIT_S and found it still held, the others try without waiting (`patience`) and the call answers as when
    the tables do not read (from the logs: `core/rest.py`), not after one wait per statement (a lock in
    rollback-journal mode shuts readers out too)."""
    if LOCK_SEEN.get() is not None:
        yield
        return
    token = LOCK_SEEN.set([False])
    try:
        yield
    finally:
        LOCK_SEEN.reset(token)


def patience(wait: float) -> float:
    """How long to wait for SQLite's lock: `wait`, or nothing once this call waited it out (`one_wait`)."""
    seen = LOCK_SEEN.get()
    return 0.0 if seen is not None and seen[0] else wait


def waited_out() -> None:
    """Another process held SQLite's lock past this call's wait: its other statements wait no more."""
    seen = LOCK_SEEN.get()
    if seen is not None:
        seen[0] = True


def whole_reads(run: Callable[[], T], wait: float) -> T:
    """`run()` with every reading whole (the build under way waited for at most `wait` s, else a StoreError
    saying so): for a caller that must not act on a partial answer."""
    token = WHOLE.set(wait)
    try:
        return run()
    finally:
        WHOLE.reset(token)


def never_unbuilt(run: Callable[[], T]) -> T:
    """`run()` (one call: `one_wait`); when it finds something missing (a NotFoundError) after reading only part
    of the logs (a build unfinished), `run()` again on whole readings (within UNBUILT_WAIT_S): "not found" never
    comes from an unfinished build. Whatever else it read partially, its reply says so."""
    from contextflow.core.errors import NotFoundError

    seen = [False]
    token = PARTIAL_READS.set(seen)
    try:
        with one_wait():
            try:
                return run()
            except NotFoundError:
                if not seen[0]:
                    raise
                return whole_reads(run, UNBUILT_WAIT_S)
    finally:
        PARTIAL_READS.reset(token)


def soundly(app: App, run: Callable[[], T], read_only: bool = True) -> T:
    """`run()`, one request to the store (an operation, a hook's answer, an MCP prompt or resource): another
    process's lock is waited for once; "not found" after reading an unfinished build is asked again on the
    whole tables (`never_unbuilt`); a read that met damaged derived tables (deleted then:
    `Tables.found_damaged`) runs again from the logs, while a write says so instead of running twice."""
    with one_wait():  # (its damage check too: one wait for the whole request)
        try:
            return never_unbuilt(run)
        except Exception as exc:
            if not app.tables().found_damaged(exc):
                raise
            if not read_only:
                from contextflow.core.errors import StoreError

                raise StoreError(
                    f"the derived tables {app.tables().path} were damaged: they are deleted and rebuilt from the "
                    "logs (nothing is lost); check what was written (`contextflow read`) before running the "
                    "command again"
                ) from None
            return never_unbuilt(run)


def db_stamp(hlc: int) -> int:
    """A clock stamp as an `hlc` column holds it (shifted into SQLite's range, order kept)."""
    return hlc - STAMP_OFFSET


def stamp_of(value: int) -> int:
    """The clock stamp an `hlc` column holds."""
    return value + STAMP_OFFSET


META = """
CREATE TABLE IF NOT EXISTS formats(name TEXT PRIMARY KEY, version INTEGER NOT NULL, built TEXT) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS positions(
    format TEXT NOT NULL, path TEXT NOT NULL, position BLOB NOT NULL, complete INTEGER NOT NULL,
    bad INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(format, path)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS bounds(id TEXT PRIMARY KEY, cap INTEGER NOT NULL) WITHOUT ROWID;
"""


class Projection(NamedTuple):
    """One derived format's tables (a projection): what a feature declares, the rest is done here. Its rows
    come either from `rows(event)`, each event's own rows (keyed by the event: idempotent, order-free),
    or from `apply(db, events)`, which folds a chunk's events of `kinds` into state kept in its tables
    (reading the rows they touch and writing them back, so the tables end as the view's fold whatever
    the chunks), read beside the logs' rest by `core/rest.py` folding it with `apply` too."""

    format: Format
    schema: tuple[str, ...]  # CREATE TABLE / INDEX / TRIGGER statements, one each
    inserts: Mapping[str, str] = {}  # table -> its INSERT statement (`?` parameters)
    rows: Callable[[Event], Iterable[Row]] = lambda event: ()  # the pure fold
    bounded: tuple[str, ...] = ()  # tables whose `hlc` a clock bound lowers (by their `id` column)
    tables: tuple[str, ...] = ()  # every table it owns (dropped on a rebuild); its insert tables by default
    ahead: bool = True  # rows whose order means nothing: this machine's newest may be added before a build reaches them
    kinds: str = ""  # an `apply` projection: the prefix of the kinds of the events it folds
    apply: Callable[[Writer, list[Event]], None] | None = None
    # read while the tables are not current (core/rest.py): per table, the SQL of the TEMP view showing the
    # tables' rows (`base.{t}`) with those of the logs' remaining bytes (`main.{t}`) in their place (default:
    # by `id`), and `seed(db, rows, seeded)`: copies into `main` the base rows a trigger needs beside `rows`
    merged: tuple[tuple[str, str], ...] = ()
    seed: Callable[[sqlite3.Connection, dict[str, list[tuple[Any, ...]]], set[Any]], None] | None = None
    # read by a store scoped to some projects (`Store.read_projects`: an HTTP grant's): per table, the SQL
    # of the TEMP view it reads in its place, its rows of those projects only (`{projects}`: their names)
    scoped: tuple[tuple[str, str], ...] = ()
    # what compaction may drop of one log's events (core/scan.py `Unneeded`); None: it cannot tell (nothing goes)
    unneeded: Unneeded | None = None
    # caught up only when a reader names it (`CatchUp.update(also=...)`) and by a build, never by another
    # projection's reader (the search index: a commit costs more than a warm read)
    lazy: bool = False
    done: Callable[[], None] | None = None  # called after each update (an `apply` keeping a writer open closes it)
    # (table, summarise(db, after)): after a batch of that table's rows is inserted, its summaries brought up to
    # date from the rows added past rowid `after` (reading and writing `main.`): once a batch, not a trigger a row
    summarise: tuple[str, Callable[[Writer, int], None]] | None = None
    summarise_rest: bool = True  # False: not the rest's rows (its readers check a summary holds every row, else fold)

    @property
    def name(self) -> str:
        return self.format.name


def by_project(*tables: str) -> tuple[tuple[str, str], ...]:
    """`Projection.scoped` of tables with a `project` column: their rows of the reader's projects."""
    return tuple((table, f"SELECT * FROM main.{table} WHERE project IN ({{projects}})") for table in tables)


def merged_by(table: str, *key: str) -> tuple[str, str]:
    """`Projection.merged` of a table keyed by columns `key`: the rest's row of a key in place of the tables'."""
    same = " AND ".join(f"m.{column} = b.{column}" for column in key)
    where = f"NOT EXISTS (SELECT 1 FROM main.{{t}} m WHERE {same})"
    return (table, f"SELECT * FROM base.{{t}} b WHERE {where} UNION ALL SELECT * FROM main.{{t}}")


def scoped_views(sets: Iterable[Projection], projects: Iterable[str], source: str = "main.{}") -> list[str]:
    """The statements making each table `sets` scope a TEMP view of its rows of `projects` (`Projection.scoped`),
    reading the table as `source` names it (the tables, or `core/rest.py`'s views with the logs' rest)."""
    names = ", ".join("'" + name.replace("'", "''") + "'" for name in sorted(projects))
    return [
        f'CREATE TEMP VIEW "{table}" AS '
        + re.sub(r"\bmain\.(\w+)", lambda found: source.format(found[1]), sql).format(projects=names)
        for table_set in sets
        for table, sql in table_set.scoped
    ]


def last_rowid(db: Writer, table: str) -> int:
    """The largest rowid of `main.table` (0 when empty): rows inserted after it have larger ones."""
    return int(db.execute(f'SELECT coalesce(max(rowid), 0) FROM main."{table}"').fetchone()[0])


class Writer(Protocol):
    """What a projection's `apply` may do inside the catch-up transaction."""

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> sqlite3.Cursor: ...
    def executemany(self, sql: str, params: Iterable[Sequence[Any]], /) -> sqlite3.Cursor: ...


def chunks(items: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    """`items` in parts of at most `size` (the values of one `IN (...)`)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def marks(count: int) -> str:
    """`count` parameters, as an `IN (...)` lists them."""
    return ", ".join("?" * count)


def position_blob(position: Position) -> bytes:
    """A log's read position as the `positions` table stores it."""
    hashes = [position.tail.hex(), position.blocks.hex(), position.partial.hex()]
    return jsonio.dumps(
        [position.dev, position.ino, position.size, position.mtime_ns, position.offset, position.lines, *hashes]
    )


def position_of(blob: bytes) -> Position:
    """The read position a `positions` row stores."""
    dev, ino, size, mtime_ns, offset, lines, tail, blocks, partial = jsonio.loads(blob)
    return Position(
        dev, ino, size, mtime_ns, offset, lines, bytes.fromhex(tail), bytes.fromhex(blocks), bytes.fromhex(partial)
    )


def unread_bytes(path: Path, blob: bytes | None) -> int:
    """Bytes of the log at `path` past the stored read position `blob` (all of them without one)."""
    sig = signature(path)
    return max(0, (sig[2] if sig else 0) - (jsonio.loads(blob)[4] if blob else 0))


def damaged(exc: BaseException) -> bool:
    """A database that does not read (not one that is busy, full or read-only: those pass)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    message = str(exc).lower()
    passing = ("locked", "busy", "full", "readonly", "read-only", "interrupt", "no such table")
    return not any(word in message for word in passing)


def busy(exc: BaseException) -> bool:
    """Another process holds SQLite's lock."""
    return "locked" in str(exc).lower() or "busy" in str(exc).lower()


def readable_events(lines: list[tuple[int, bytes]], store: Store, tally: list[int] | None = None) -> Iterator[Event]:
    """The readable events of these lines, each field checked as every reader checks it (`tally`, when
    given, counts [events read, bad lines])."""
    for line_no, raw in lines:
        try:
            event = decode(raw, line_no)
        except BadLine:
            if tally is not None:
                tally[1] += 1
            continue
        if tally is not None:
            tally[0] += 1
        data, dropped = conform(store.fields, event.kind, event.data)
        yield Event(event.id, event.writer, event.seq, event.hlc, event.kind, data) if dropped else event


class Busy(RuntimeError):
    """Another process holds the write lock: answer from what is there."""


class Txn:
    """One write transaction under SQLite's lock, waiting at most `wait` s for it (else `Busy`)."""

    def __init__(self, db: sqlite3.Connection, wait: float) -> None:
        self.db, self.wait = db, wait

    def __enter__(self) -> None:
        self.db.execute(f"PRAGMA busy_timeout = {int(self.wait * 1000)}")
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if busy(exc):
                if self.wait:
                    waited_out()
                raise Busy(str(exc)) from None
            raise

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        if not self.db.in_transaction:
            return
        if kind is None:
            self.db.execute("COMMIT")
        else:
            self.db.execute("ROLLBACK")
