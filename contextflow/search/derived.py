"""The search index as one more projection of the derived store: `core/catchup.py` catches it up with
the logs, as every other projection, from the same chunks.

On-disk contract (machine-local, never synced, always safe to delete):

- `<state folder>/derived/search-<build>/`: the tantivy index (`search/disk.py`) of one build, `<build>`
  being the `built` of format `search-index` in `views.sqlite3`'s `formats` table: a format reset (its
  version raised, a log that no longer continues, damage found) starts a new folder, and readers of the
  one before keep theirs until they look again (older folders are deleted when a new one is made).
- `views.sqlite3` holds what the engine holds for every projection: the version (`formats`) and, per log,
  the read position up to which the index holds its events (`positions`, format `search-index`); and the
  projection's own tables: `search_files`, the files of the segments the last commit's `meta.json` named
  (the damage check, `search/files.py`), and `search_state`, the version key of what the index depends on
  beyond its code (tantivy's version, the stemmer, the weight scale, the extractors' versions), the
  documents it holds and which process handle wrote it last.
- Order of a chunk: its documents are committed to tantivy first (`apply`, inside the engine's SQLite
  transaction), then the transaction commits the read positions and the files. tantivy cannot join a
  SQLite transaction, so a crash between the two replays the chunk next time; folding is last-writer-wins
  by event order key (`search.docs.merge`), so the index then equals a fresh build's
  (tests/test_derived.py simulates that crash).

The projection is `lazy`: a table reader's catch-up leaves it alone (no tantivy commit on a warm read);
a search asks for it (`Tables.update(also=...)`), and a background build builds it with the tables.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from contextflow.core import jsonio
from contextflow.core.formats import Format
from contextflow.core.fsutil import derived_folder, remove_derived, signature
from contextflow.core.projections import Projection, Writer, busy, position_of
from contextflow.core.tables import PerStore
from contextflow.search.files import FilesDamaged, check, committed, sound

if TYPE_CHECKING:
    from contextflow.core.events import Event
    from contextflow.core.store import Store
    from contextflow.core.tables import Tables
    from contextflow.search.disk import DiskIndex
    from contextflow.search.sink import SearchSink

T = TypeVar("T")
NAME = "search-index"
BUILD_EVENTS = 1_000  # a chunk this large is a build's: the writer stays open (merges go on) for the next
FOLDER = "derived"


class IndexDamaged(RuntimeError):
    """The index on disk does not open or read: it is rebuilt from the logs."""


def damage(exc: BaseException) -> bool:
    """Whether `exc` says the index files are damaged: tantivy raises ValueError or, reading a torn
    file, panics (pyo3's PanicException, a BaseException)."""
    damaged = (ValueError, OSError, IndexDamaged, FilesDamaged)
    return isinstance(exc, damaged) or type(exc).__name__ == "PanicException"


# What goes into the index: the fold (sink, view, disk rows), whose version is here, and each feature's
# extractors, whose version is in its declaration (`Feature.search_version`). Raise a version when what
# goes in changes; tests/test_formats.py guards the code each depends on.
INDEX = Format(
    NAME,
    6,  # 6: a document's order keys stored once; 5: a projection of the derived store (read positions in
    # views.sqlite3); 4: no field lengths stored
    ("contextflow.search.sink", "contextflow.search.disk", "contextflow.search.view", "contextflow.search.extractors"),
)


def extractor_formats() -> dict[str, Format]:
    """Each feature's extractors as a format: its version and its own code (beside the index's)."""
    from contextflow.features import features

    return {
        f.name: Format(f"search-index/{f.name}", f.search_version[0], (f.extractors,))
        for f in features()
        if f.extractors
    }


def version_key() -> dict[str, Any]:
    """What the index depends on beyond its code's version (a change rebuilds it, as a version change)."""
    from contextflow.search.disk import ENGINE
    from contextflow.search.ranking import weight_scale
    from contextflow.search.tokens import STEMMER

    return {
        "engine": ENGINE,
        "stemmer": STEMMER,
        "scale": weight_scale(),
        "extractors": {name: found.version for name, found in extractor_formats().items()},
    }


def _key_text() -> str:
    return jsonio.dumps(version_key()).decode()


# -- the projection's apply: one chunk's events folded and committed ----------------------------

_LOCK = threading.Lock()
_INDEXES: dict[Path, DiskIndex] = {}
_SINKS: dict[Path, tuple[str, SearchSink]] = {}  # folder -> (this handle's id, its sink)


def _forget() -> None:
    """A forked child (a background build) opens its own handles: tantivy's threads are not inherited."""
    global _LOCK
    _LOCK = threading.Lock()  # (another thread may have held it at the fork)
    _INDEXES.clear()
    _SINKS.clear()


os.register_at_fork(after_in_child=_forget)


def _state_dir(db: Writer) -> Path:
    """The state folder of the database `db` writes (the index lives beside it)."""
    for _, name, file in db.execute("PRAGMA database_list").fetchall():
        if name == "main" and file:
            return Path(file).parent
    raise IndexDamaged("the derived store has no file: no index beside it")


def folder_of(state_dir: Path, built: str) -> Path:
    return state_dir / FOLDER / f"search-{built}"


def _open(folder: Path) -> DiskIndex:
    """This process's handle on the index in `folder` (made when missing)."""
    from contextflow.search.disk import DiskIndex

    with _LOCK:
        found = _INDEXES.get(folder)
        if found is not None and not folder.is_dir():  # deleted under this process: made again
            found = None
            _SINKS.pop(folder, None)
        if found is None:
            mask = os.umask(0o077)  # tantivy creates its files with the process's umask: keep them private
            try:
                found = _INDEXES[folder] = DiskIndex(folder)
            except (ValueError, OSError) as exc:
                raise IndexDamaged(str(exc)) from exc
            finally:
                os.umask(mask)
        return found


def _new_build(folder: Path) -> None:
    """A format reset made `folder`: the folders of earlier builds go (a reader elsewhere may still map one),
    and whatever stands there in place of a folder (a FIFO, a file: removed, never followed or opened)."""
    derived_folder(folder.parent)
    for old in folder.parent.glob("search*"):
        if old == folder:
            try:
                sound(folder)
                continue
            except FilesDamaged:
                pass
        _INDEXES.pop(old, None)
        _SINKS.pop(old, None)
        with contextlib.suppress(OSError):
            remove_derived(old)


def _apply(db: Writer, events: list[Event]) -> None:
    """Fold a chunk's events into the index and commit it (tantivy first: the engine then commits the read
    positions); record the files the commit names and the version key."""
    from contextflow.search.sink import SearchSink

    built = db.execute("SELECT built FROM formats WHERE name = ?", (NAME,)).fetchone()[0]
    folder = folder_of(_state_dir(db), str(built))
    state = db.execute("SELECT writer FROM search_state").fetchone()
    if state is None:  # the first chunk of a build: a new folder
        _new_build(folder)
    else:  # what the last commit wrote must be there to add to (else the search restarts the format)
        check(folder, dict(db.execute("SELECT name, size FROM search_files").fetchall()))
    index = _open(folder)
    mine = _SINKS.get(folder)
    if mine is None or state is None or state[0] != mine[0]:  # another handle wrote since: look documents up
        fresh = state is None and index.count() == 0
        mine = _SINKS[folder] = (os.urandom(8).hex(), SearchSink(index, fresh))
    sink = mine[1]
    mask = os.umask(0o077)
    try:
        for event in events:
            sink.apply(event)
        sink.commit(last=len(events) < BUILD_EVENTS)  # (a build's writer stays open: `_done` closes it)
    except BaseException:
        sink.discard()
        _SINKS.pop(folder, None)
        raise
    finally:
        os.umask(mask)
    db.execute("DELETE FROM search_files")
    db.executemany("INSERT INTO search_files(name, size) VALUES (?, ?)", sorted(committed(folder).items()))
    db.execute("DELETE FROM search_state")
    db.execute(
        "INSERT INTO search_state(key, documents, writer) VALUES (?, ?, ?)", (_key_text(), index.count(), mine[0])
    )


def _unneeded(events: Sequence[Event]) -> dict[str, tuple[str, ...]]:
    from contextflow.search.view import unneeded

    return unneeded(events)


def _done() -> None:
    """After an update: a writer a build kept open is committed and closed (tantivy's lock let go)."""
    with _LOCK:
        indexes = list(_INDEXES.values())
    for index in indexes:
        try:
            index.commit()
        except BaseException as exc:  # (a folder deleted meanwhile: what was committed stays as it is)
            if not damage(exc):
                raise
            index.rollback()


PROJECTION = Projection(
    INDEX,
    schema=(
        "CREATE TABLE search_files(name TEXT PRIMARY KEY, size INTEGER NOT NULL) WITHOUT ROWID",
        "CREATE TABLE search_state(key TEXT NOT NULL, documents INTEGER NOT NULL, writer TEXT NOT NULL)",
    ),
    tables=("search_files", "search_state"),
    ahead=False,
    apply=_apply,
    lazy=True,
    unneeded=_unneeded,
    done=_done,
)


# -- reading -------------------------------------------------------------------------------


class Committed:
    """What the derived store says of the index: its build, files, version key, documents, how far it read."""

    def __init__(self, tables: Tables) -> None:
        self.built: str | None = None
        self.files: dict[str, int] = {}
        self.key: str | None = None
        self.documents = 0
        self.read = 0
        self.total = 0
        self.locked = False  # another process held the database (not in WAL mode): how far the index is, not known
        try:
            positions = self._read(tables)
        except sqlite3.OperationalError as exc:
            if not busy(exc):
                raise
            positions, self.locked = [], True
        held: dict[str, int] = {str(path): position_of(blob).offset for path, blob in positions} if self.built else {}
        for path in tables.paths():
            sig = signature(path)
            size = sig[2] if sig else 0
            self.total += size
            self.read += min(size, held.get(str(path), 0))

    def _read(self, tables: Tables) -> list[tuple[Any, Any]]:
        """Fill in what the derived store says of the index; the index's read positions."""
        with tables.snapshot() as db:
            try:
                found = db.execute("SELECT version, built FROM formats WHERE name = ?", (NAME,)).fetchone()
                if found is not None and found[0] == INDEX.version:
                    self.built = str(found[1])
                    self.files = dict(db.execute("SELECT name, size FROM search_files").fetchall())
                    state = db.execute("SELECT key, documents FROM search_state").fetchone()
                    self.key, self.documents = (str(state[0]), int(state[1])) if state else (None, 0)
                positions = db.execute("SELECT path, position FROM positions WHERE format = ?", (NAME,)).fetchall()
            except Exception as exc:
                if "no such table" not in str(exc):
                    raise
                positions = []
        return positions

    def progress(self) -> str:
        if self.locked:
            return f"how much of {self.total / 1e6:.1f} MB it holds could not be read: views.sqlite3 is locked"
        percent = 100 * self.read // self.total if self.total else 100
        return f"{percent}% of {self.total / 1e6:.1f} MB indexed"


BUSY_NOTE = (
    "PARTIAL: another process holds the derived store's write lock; these results come from what the search "
    "index held ({progress}); newer records may be missing. If it stays so, run `contextflow doctor`."
)
SHUT_OUT_NOTE = (
    "PARTIAL: another process holds views.sqlite3 locked, so the search index could not be opened and nothing "
    "was searched. Ask again in a moment; if it stays so, run `contextflow doctor`."
)
BUILDING_NOTE = (
    "PARTIAL: the search index is being built on this machine ({progress}); these results come from what is "
    "indexed so far. Ask again in a moment for the rest."
)


class DerivedSearch:
    """The shared on-disk search index of one store, as seen by this process."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._mutex = threading.RLock()  # the HTTP bridge's threads share one handle
        self._seen: dict[str, int] | None = None  # the files this process's reader last saw committed

    def tables(self) -> Tables:
        from contextflow import features
        from contextflow.core.tables import tables_for

        return tables_for(self.store, features.all_projections)

    def index_folder(self) -> Path:
        """The folder of the index's current build."""
        built = Committed(self.tables()).built
        return folder_of(self.store.state_dir, built or "none")

    def rebuild(self) -> None:
        """Start the index over (a damaged index, `doctor --rebuild`) and build it now."""
        self.update(rebuild=True)

    def update(self, rebuild: bool = False) -> int:
        """Bring the index up to date now (in this process); returns how many events were read."""
        if rebuild:
            self.tables().restart(NAME)
        return self._catch_up(self.tables(), foreground=True)

    def catch_up(self) -> int:
        """Bring a built index up to date as a search would (a large backlog: in the background); one not
        built yet is left to the first search."""
        with self._mutex:
            tables = self.tables()
            try:
                built = bool(tables.peek("SELECT 1 FROM search_state LIMIT 1"))
            except sqlite3.OperationalError:  # (no such table: nothing built on this machine yet)
                built = False
            read = self._catch_up(tables) if built else 0
            if read > 0:  # (the idle work) the next search finds the commit's files checked and a searcher open
                index, _ = self._current(tables, repair=False)
                if index is not None:
                    index.open_searcher()
            return read

    def _catch_up(self, tables: Tables, foreground: bool = False) -> int:
        """The engine's update with the index (-1: answered as it is, see `CatchUp.update`); an index found
        damaged while writing to it starts over."""
        try:
            return tables.update(foreground=foreground, also=(NAME,))
        except BaseException as exc:
            if not damage(exc):
                raise
            self._seen = None
            tables.restart(NAME)
            return tables.update(foreground=foreground, also=(NAME,))

    def index(self) -> DiskIndex:
        """The index with every event of the logs in it (built here, now, when it is not)."""
        with self._mutex:
            self.update()
            found, _ = self._current(self.tables(), repair=True)
            if found is None:
                raise IndexDamaged("the search index was not built")
            return found

    def _current(self, tables: Tables, repair: bool) -> tuple[DiskIndex | None, Committed]:
        """The index as last committed (None before a build's first commit) and what the store says of it;
        damage or another version key starts it over (and, when `repair`, builds it again now)."""
        from contextflow.search.disk import DiskIndex

        for attempt in range(2):
            known = Committed(tables)
            if known.built is None or known.key is None:
                return None, known
            folder = folder_of(self.store.state_dir, known.built)
            try:
                if known.key != _key_text():
                    raise IndexDamaged("built for another version")
                check(folder, known.files)
                if not DiskIndex.exists(folder):
                    raise IndexDamaged(f"{folder} holds no index")
                index = _open(folder)
                if known.files != self._seen:
                    index.reload()
                    check(folder, known.files)  # (a file truncated under an open index)
                    self._seen = known.files
                return index, known
            except (FilesDamaged, IndexDamaged, ValueError, OSError):
                _INDEXES.pop(folder, None)
                self._seen = None
                if attempt or not repair:
                    return None, known
                tables.restart(NAME)
                self._catch_up(tables, foreground=True)
        raise AssertionError("unreachable")

    def search(self, run: Callable[[DiskIndex], T], empty: T) -> tuple[T, str]:
        """`run(index)` on the index brought up to date, and "" or why its answer may be partial (a build in
        the background, another process holding the write lock); an index that fails to read is rebuilt
        and `run` tried again."""
        with self._mutex:
            tables = self.tables()
            read = self._catch_up(tables)
            for attempt in range(2):
                index, known = self._current(tables, repair=read >= 0)
                note = "" if read >= 0 and tables.serves([NAME]) else BUILDING_NOTE if tables.backlog() else BUSY_NOTE
                if index is None:
                    return empty, SHUT_OUT_NOTE if known.locked else note.format(progress=known.progress())
                try:
                    return run(index), note.format(progress=known.progress())
                except BaseException as exc:
                    if attempt or not damage(exc):
                        raise
                    tables.restart(NAME)
                    read = self._catch_up(tables, foreground=True)
            raise AssertionError("unreachable")


def describe(store: Store) -> dict[str, Any]:
    """Where the index is, how big, how current and how to rebuild it (for `doctor`; reads, never updates)."""
    handle = search_for(store)
    folder = store.state_dir / FOLDER
    try:
        known = Committed(handle.tables())
    except Exception:
        known = None
    current = known is not None and known.built is not None and known.key == _key_text()
    damaged = None
    if current and known is not None and known.built is not None:
        try:
            check(folder_of(store.state_dir, known.built), known.files)
        except FilesDamaged as exc:
            damaged = str(exc)
    behind = (known.total - known.read) if known is not None else 0
    size = _size(folder)
    updated = None
    if current and known is not None:
        stamp = signature(store.state_dir / "views.sqlite3")
        updated = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamp[3] / 1e9)) if stamp else None
    return {
        "damaged": damaged,  # the index's files are not those its last commit wrote: the next search rebuilds it
        "folder": str(folder),
        "bytes": size,
        "documents": known.documents if current and known is not None else None,
        "updated": updated,
        "current": current and behind == 0 and damaged is None,
        "log_bytes_behind": behind if current else None,
        "version_matches": current,
        "locked": known is not None and known.locked,  # (another process holds views.sqlite3: none of it is known)
        "rebuild": f"run `contextflow doctor --rebuild` (or delete {folder}: the next search rebuilds it)",
    }


def _size(folder: Path) -> int:
    """The bytes of the files under `folder` (links and what they point to not counted, nor followed)."""
    size = 0
    for at, _, names in os.walk(folder):
        for name in names:
            with contextlib.suppress(OSError):  # (a merge's clean-up deleted it meanwhile)
                size += os.lstat(os.path.join(at, name)).st_size
    return size


_OPEN: PerStore[DerivedSearch] = PerStore()


def search_for(store: Store) -> DerivedSearch:
    """This process's handle on the store's derived search index (one per store object)."""
    return _OPEN.get(store, lambda: DerivedSearch(store))
