"""Answers while the derived tables do not hold every log (a build on a new machine, a format rebuilt, a
large sync, another process holding their lock): the tables as built plus the rows of the logs'
remaining bytes, read through one connection so that every reader's SQL is unchanged.

A `Rest` is an in-memory SQLite database (`main`) holding, for the projections asked, the rows of every
log's events past that set's read positions (its triggers run on them), with the tables on disk attached read
only as `base`. TEMP views named as the tables show base's rows with the rest's in their place (each
set's `Projection.merged` SQL; by default a row of the rest replaces base's row of the same `id`), so a
query of `sessions_entries` or `feed` reads both. A set whose triggers summarise rows (sessions) first
copies base's rows of what the new rows touch (`Projection.seed`), so its triggers compute whole summaries.
A set folding chunks (`Projection.apply`: the graph, records, conversations) folds the rest's events with its own
`apply`: its queries read the merged views (made first), its inserts go to `main` (`_Into`); a scoped
store folds only its projects' events (each one's rows are of its own project).
The read positions are read before the rows, so a chunk a build commits meanwhile is in both (the merge keeps it
once), never in neither.

Bounded: at most REST_BYTES past the read positions are read into memory. More (a new machine, a format
rebuilt): only the logs' newest bytes are (about TAIL_BYTES of each, then more of the busiest writer's
within TAIL_BUDGET; every event since the oldest stamp all those tails reach is there) and the answer is
partial: `Reading.partial` says how far the build is, and the caller says so ("62% of 42 MB indexed").
Clock bounds are not applied to the rest (a bound within the unread bytes is rare).
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple
from weakref import WeakKeyDictionary

from contextflow.core import jsonio
from contextflow.core.fsutil import Signature, signature
from contextflow.core.log import Position, read_new, read_tail
from contextflow.core.project import project_of
from contextflow.core.projections import (
    PARTIAL_READS,
    TAIL_BUDGET,
    TAIL_BYTES,
    WAIT_S,
    WHOLE,
    Projection,
    busy,
    damaged,
    last_rowid,
    patience,
    position_of,
    readable_events,
    scoped_views,
    waited_out,
)

if TYPE_CHECKING:
    from contextflow.core.store import Store
    from contextflow.core.tables import Tables

REST_BYTES = 16 * 1024 * 1024  # past the read positions, read into memory (about 5x that held); more: the tails only
MIN_TAIL = 16 * 1024  # of each log at least, however many logs share TAIL_BUDGET
CHUNK_BYTES = 1024 * 1024  # read and inserted at a time: the rest's memory is its rows, not a chunk's events


class Progress(NamedTuple):
    """How far the derived tables are, when an answer may miss what they do not hold yet."""

    built_bytes: int  # bytes of the logs every format holds
    log_bytes: int  # bytes of the logs

    def text(self) -> str:
        """E.g. `62% of 42 MB indexed`."""
        share = 100 * self.built_bytes // self.log_bytes if self.log_bytes else 0
        size = self.log_bytes / 1_000_000
        return f"{share}% of {size:.{0 if size >= 10 else 1}f} MB indexed"


class Rest:
    """The rows of the logs' remaining bytes over the tables as built (see the module's docstring)."""

    def __init__(
        self,
        db: sqlite3.Connection,
        sets: Sequence[Projection],
        key: object,
        built: set[str],
        projects: frozenset[str] | None = None,
    ) -> None:
        self.db, self.sets, self.key, self.built, self.projects = db, list(sets), key, built, projects
        self.read: dict[tuple[str, str], Position | None] = {}  # (format, log) -> how far the rest holds its rows
        self.seen: dict[str, Signature | None] = {}  # per log, its signature when read
        self.partial: Progress | None = None  # set when only the logs' tails are read
        self._seeded: set[Any] = set()
        self._lock = threading.Lock()

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self.db.execute(sql, params).fetchall()

    def fresh(self, tables: Tables) -> bool:
        """Whether the rest holds every log as it is now (one stat per log)."""
        paths = tables.paths()
        return len(paths) == len(self.seen) and all(self.seen.get(str(p), 0) == signature(p) for p in paths)

    def add(self, tables: Tables) -> None:
        """Add the rows of every log's bytes past what the rest holds, a chunk at a time."""
        with self._lock:
            for path in tables.paths():
                self.seen[str(path)] = signature(path)
                groups: dict[Position | None, list[Projection]] = {}
                for table_set in self.sets:
                    groups.setdefault(self.read.get((table_set.name, str(path))), []).append(table_set)
                for position, sets in groups.items():
                    for lines, after in _chunks(path, position):
                        self._insert(sets, readable_events(lines, tables.store))
                        for table_set in sets:
                            self.read[(table_set.name, str(path))] = after

    def _insert(self, sets: Sequence[Projection], events: Iterable[Any]) -> None:
        found: dict[str, dict[str, dict[tuple[Any, ...], None]]] = {s.name: {} for s in sets}
        folded: dict[str, list[Any]] = {s.name: [] for s in sets if s.apply is not None}
        for event in events:
            for name, kinds in ((s.name, s.kinds) for s in sets if s.apply is not None):
                if event.kind.startswith(kinds) and (self.projects is None or project_of(event) in self.projects):
                    folded[name].append(event)
            for table_set in sets:
                for table, values in table_set.rows(event):
                    found[table_set.name].setdefault(table, {})[values] = None
        self.db.execute("BEGIN")
        try:
            for table_set in sets:
                rows = {table: list(values) for table, values in found[table_set.name].items()}
                summarise = table_set.summarise if table_set.summarise_rest else None
                after = last_rowid(self.db, summarise[0]) if summarise is not None else 0
                if table_set.seed is not None and table_set.name in self.built:
                    table_set.seed(self.db, rows, self._seeded)
                for table, found_rows in rows.items():
                    self.db.executemany(table_set.inserts[table].replace(" INTO ", " INTO main.", 1), found_rows)
                if summarise is not None:  # (the seeded rows too: a summary is made whole)
                    summarise[1](self.db, after)
                if table_set.apply is not None and folded[table_set.name]:
                    table_set.apply(_Into(self.db), folded[table_set.name])
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise


class _Into:
    """The rest's database as a folding projection's `apply` writes it: its queries read the merged views,
    its inserts go to the rest's own tables (`main`)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self.db.execute(_main(sql), params)

    def executemany(self, sql: str, params: Iterable[Sequence[Any]]) -> sqlite3.Cursor:
        return self.db.executemany(_main(sql), params)


def _main(sql: str) -> str:
    return re.sub(r"^(\s*INSERT(?: OR \w+)? INTO )", r"\1main.", sql, flags=re.IGNORECASE)


def _chunks(path: Path, position: Position | None) -> Iterable[tuple[list[tuple[int, bytes]], Position]]:
    """The lines of the log at `path` past `position`, about CHUNK_BYTES at a time, each with the read position
    after it (a log that is gone gives none)."""
    while True:
        start = position.offset if position else 0
        try:
            chunk = read_new(path, position, CHUNK_BYTES)
        except FileNotFoundError:
            return
        position = chunk.position
        yield chunk.lines, position
        if chunk.position.offset - start < CHUNK_BYTES:
            return


class Reading:
    """What one call reads: the tables themselves when they serve it, else a `Rest` over them (of formats `names`)."""

    def __init__(self, tables: Tables, rest: Rest | None = None, names: Iterable[str] = ()) -> None:
        self.tables, self.rest, self.names = tables, rest, frozenset(names)

    @property
    def partial(self) -> Progress | None:
        return self.rest.partial if self.rest is not None else None

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of `sql` as `reading` found them: the tables (current when it looked: not checked again, so
        a call's queries check the logs once), else the rest. Tables found damaged meanwhile are deleted and
        the call goes on reading as a new machine's first call does (`reading`: the tables built in the foreground
        for a small store, else the rest over a build in the background, partial over REST_BYTES)."""
        try:
            if self.rest is None:
                return self.tables.query(sql, params, checked=True)
            return self.rest.query(sql, params)
        except sqlite3.DatabaseError as exc:
            if not damaged(exc) or (self.rest is not None and not self.rest.built):
                raise
            if self.rest is not None:  # (its base read damaged pages)
                self.tables._discard()
        _RESTS.pop(self.tables.store, None)
        self.rest = reading(self.tables, self.names).rest
        return self.rest.query(sql, params) if self.rest is not None else self.tables.query(sql, params, checked=True)


_RESTS: WeakKeyDictionary[Store, Rest] = WeakKeyDictionary()  # the rest this store's reads use
_BUILDING = threading.Lock()


def reading(tables: Tables, names: Iterable[str], wait: float = WAIT_S) -> Reading:
    """How to read formats `names` now: the tables when they hold every log's events, else the tables as
    built with the rows of the logs' remaining bytes (kept per store: extended by new bytes while the
    tables' read positions stay, built again when they move). A database that does not read gives the rest
    alone (the logs' rows, or their tails when over REST_BYTES: partial). Under `whole_reads`, never partial:
    the tables are built first (a StoreError when they cannot be within its wait)."""
    names = tuple(names)
    found = _reading(tables, names, wait)
    if found.partial is not None and (most := WHOLE.get()) is not None:
        found = _whole(tables, names, wait, most)
    if found.partial is not None and (seen := PARTIAL_READS.get()) is not None:
        seen[0] = True
    return found


def _whole(tables: Tables, names: tuple[str, ...], wait: float, most: float) -> Reading:
    """The reading of `names` once the tables are built (a build under way elsewhere waited for at most `most`
    s, else built here); a StoreError when they stay unbuilt."""
    from contextflow.core.catchup import BUILD_LOCK
    from contextflow.core.errors import StoreError
    from contextflow.core.lock import LockTimeout, WriterLock

    with contextlib.suppress(LockTimeout, OSError), WriterLock(tables.path.with_name(BUILD_LOCK), most):
        tables.update(most, foreground=True)
    found = _reading(tables, names, wait)
    if found.partial is None:
        return found
    raise StoreError(
        f"this machine is still building its derived tables from the store's logs ({found.partial.text()}), and "
        "this answer must come from all of them (an item looked up or changed by its id or key, an export, an "
        "import): "
        f"it could not within {most:g} s. Ask again shortly (nothing is lost: every write is in the logs); "
        "if it persists, run `contextflow doctor`"
    )


def _reading(tables: Tables, names: Iterable[str], wait: float) -> Reading:
    """`reading` as found now (a `--stdin` batch's earlier items the tables do not hold, `Store.held_back`, on
    top)."""
    wanted = set(names)
    if held := tables.store.held_back:  # a batch's earlier items, where the tables do not hold them: never kept
        found = build(tables, [s for s in tables.sets.values() if s.name in wanted])
        found._insert(found.sets, held)
        return Reading(tables, found, wanted)
    if tables.serves(wanted, wait):
        _RESTS.pop(tables.store, None)  # (not closed: another thread may still read it; freed with it)
        return Reading(tables, None, wanted)
    with _BUILDING:
        key = _base_key(tables)
        old = _RESTS.get(tables.store)
        if old is not None and old.key == key and wanted <= {s.name for s in old.sets}:
            if not old.fresh(tables):
                if old.partial is None:
                    old.add(tables)  # the logs grew, the tables did not move: their new bytes only
                else:
                    old = None  # (the tails again)
            if old is not None:
                return Reading(tables, old, wanted)
        wanted |= {s.name for s in old.sets} if old is not None else set()
        found = _RESTS[tables.store] = build(tables, [s for s in tables.sets.values() if s.name in wanted], key)
        return Reading(tables, found, wanted)


def _base_key(tables: Tables) -> object:
    """The tables' read positions: while they stay, a rest is extended, else built again."""
    try:
        found = tables.peek("SELECT format, path, position FROM positions")
    except sqlite3.DatabaseError:
        return None
    return tuple(sorted((str(name), str(path), bytes(blob)) for name, path, blob in found))


def build(tables: Tables, sets: Sequence[Projection], key: object = None, most: int | None = None) -> Rest:
    """The rest of `sets` over the tables now: every log's bytes past their read positions, or the logs' tails
    (partial, with the build's progress) when more than `most` (REST_BYTES) bytes remain. A lazy projection
    (the search index, outside SQLite) has no rest: a search says how far it is instead."""
    sets = [table_set for table_set in sets if not table_set.lazy]
    wait = patience(WAIT_S)  # (none once this call waited out another process's lock: then the rest alone)
    db = sqlite3.connect(":memory:", timeout=wait, isolation_level=None, check_same_thread=False)
    try:
        positions, built = _attach(db, tables, sets, wait)
        db.execute(f"PRAGMA busy_timeout = {int(WAIT_S * 1000)}")
        for table_set in sets:
            for statement in table_set.schema:
                db.execute(statement)
        projects = tables.store.read_projects  # (a scoped store: the views of its projects' rows over these)
        rest = Rest(db, sets, key, built, None if projects is None else frozenset(projects))
        for table_set in sets:  # (first: a folding projection's `apply` reads them)
            scoped = {table for table, _ in table_set.scoped} if projects is not None else set()
            for table in table_set.tables or tuple(table_set.inserts):
                merge = (
                    dict(table_set.merged).get(table, _BY_ID) if table_set.name in built else "SELECT * FROM main.{t}"
                )
                db.execute(f'CREATE TEMP VIEW "{table}{"_all" if table in scoped else ""}" AS {merge.format(t=table)}')
        for statement in scoped_views(sets, projects, '"{}_all"') if projects is not None else ():
            db.execute(statement)
        rest.read = {(name, path): position for (name, path), position in positions.items()}
        left = sum(_unread(path, positions, sets) for path in tables.paths())
        jsonio.fast(left)
        if left > (REST_BYTES if most is None else most):
            rest.partial = _progress(tables)
            rest._insert(sets, _tail_events(tables))
            rest.seen = {str(path): signature(path) for path in tables.paths()}
        else:
            rest.add(tables)
    except BaseException:
        db.close()
        raise
    return rest


_BY_ID = "SELECT * FROM base.{t} WHERE id NOT IN (SELECT id FROM main.{t}) UNION ALL SELECT * FROM main.{t}"


def _attach(
    db: sqlite3.Connection, tables: Tables, sets: Sequence[Projection], wait: float
) -> tuple[dict[tuple[str, str], Position], set[str]]:
    """Attach the tables as `base` (read only); the read positions of `sets` there and the names of those built
    (none when another process holds them past `wait` s: the call waits no more, `waited_out`)."""
    positions: dict[tuple[str, str], Position] = {}
    built: set[str] = set()
    try:
        if not tables.path.is_file():
            return positions, built
        db.execute("ATTACH ? AS base", (f"{tables.path.absolute().as_uri()}?mode=ro",))
        names = {name for (name,) in db.execute("SELECT name FROM base.sqlite_master WHERE type = 'table'")}
        versions = dict(db.execute("SELECT name, version FROM base.formats").fetchall())
        for table_set in sets:
            owned = set(table_set.tables or tuple(table_set.inserts))
            if versions.get(table_set.name) == table_set.format.version and owned <= names and "cursors" not in names:
                built.add(table_set.name)
        found = db.execute("SELECT format, path, position FROM base.positions").fetchall()
        positions = {(str(name), str(path)): position_of(blob) for name, path, blob in found if name in built}
    except sqlite3.DatabaseError as exc:  # (a damaged or locked database: the rest alone, base never read)
        if busy(exc) and wait:
            waited_out()
        return {}, set()
    return positions, built


def _unread(path: Path, positions: dict[tuple[str, str], Position], sets: Sequence[Projection]) -> int:
    found = signature(path)
    size = found[2] if found else 0
    return max((size - (c.offset if (c := positions.get((s.name, str(path)))) else 0) for s in sets), default=0)


def _progress(tables: Tables) -> Progress:
    try:
        return Progress(*tables.built())
    except sqlite3.DatabaseError:
        return Progress(0, sum(sig[2] for sig in map(signature, tables.paths()) if sig is not None))


def _tail_events(tables: Tables) -> list[Any]:
    """The events of the logs' tails at or after their horizon (`tails`)."""
    found, horizon = tails(tables.paths(), tables.store, TAIL_BYTES, TAIL_BUDGET)
    return [event for lines in found for event in readable_events(lines, tables.store) if event.hlc >= horizon]


class _Tail(NamedTuple):
    asked: int  # bytes
    lines: list[tuple[int, bytes]]
    first: int | None  # the stamp of its first event when the log holds more before it, else None


def tails(paths: Iterable[Path], store: Store, limit: int, budget: int) -> tuple[list[list[tuple[int, bytes]]], int]:
    """Each log's newest lines, and the horizon (the newest first stamp of a log not read whole): about
    `limit` bytes of each (less for many logs: `budget` shared, MIN_TAIL at least), then the log that sets the
    horizon (a busy writer's, whose bytes span the least time) read twice as far back, and again, while all of
    them together stay within `budget` bytes."""

    def read(path: Path, asked: int) -> _Tail:
        lines = read_tail(path, asked)
        first = next((event.hlc for event in readable_events(lines[:50], store)), None)
        return _Tail(asked, lines, first if path.stat().st_size > asked else None)

    paths = list(paths)
    each = min(limit, max(MIN_TAIL, budget // max(1, len(paths))))  # many logs: within the budget too
    found: dict[Path, _Tail] = {}
    for path in paths:
        with contextlib.suppress(OSError):
            found[path] = read(path, each)
    while cut := [(tail.first, path) for path, tail in found.items() if tail.first is not None]:
        _, narrowest = max(cut)
        asked = found[narrowest].asked
        if sum(tail.asked for tail in found.values()) + asked > budget:
            break
        try:
            found[narrowest] = read(narrowest, 2 * asked)
        except OSError:
            break
    horizon = max((tail.first for tail in found.values() if tail.first is not None), default=0)
    return [tail.lines for tail in found.values()], horizon
