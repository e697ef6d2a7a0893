"""Derived state on disk, once per machine: the search index every process of this machine shares.

On-disk contract (`<state folder>/derived/`, machine-local, never synced, always safe to delete):

- `search-<instance>/`: the tantivy index (`search/disk.py`), a new folder for each build; readers
  map it, so processes share it through the page cache instead of each decoding its own copy.
- `state.json`: the version key (format, index engine, stemmer, a hash of the search code, the
  store folder) and, per log, the read position up to which its events are in the index (`log.Position`:
  offset, signature, a hash of the bytes before the offset). Written atomically after each commit.
  Each read position is under the key "cursor" (its name when first stored).
- `update.lock`: held by the one process bringing the index up to date.

A call compares every log's signature with `state.json` (one stat each). When a log grew, the
process that sees it first takes the lock, reads only the new bytes, folds their events into the
documents they touch and commits; the others wait for the lock, then find the index current.
Folding is last-writer-wins by event order key (`search.docs.merge`), so replaying events after a
crash between a commit and the `state.json` after it changes nothing. A log that changed any other
way (rewritten by compaction, a conflict copy removed), a version change, or an index that fails
to open or read (a torn or damaged file) means a rebuild from the logs, which stay the only truth.
"""

from __future__ import annotations

import contextlib
import gc
import os
import stat
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from contextflow.core import jsonio
from contextflow.core.errors import StoreError
from contextflow.core.formats import Format
from contextflow.core.fsutil import atomic_write, derived_folder, read_regular, remove_derived, signature
from contextflow.core.log import Chunk, Position, list_segments, read_new
from contextflow.core.progress import Progress
from contextflow.search.files import FilesDamaged, check, committed

if TYPE_CHECKING:  # the process pool and shutil are imported by a build only: a search skips their 0.1 s
    from concurrent.futures import Future, ProcessPoolExecutor

    from contextflow.core.store import Store
    from contextflow.search.disk import DiskIndex

T = TypeVar("T")
FORMAT = 1  # this module's state file and folder layout
FOLDER = "derived"
STATE_FILE = "state.json"
LOCK_FILE = "update.lock"
READ_BYTES = 2 * 1024 * 1024  # new bytes read from a log at a time (a build worker folds one: ~60 MB of rows)
PARALLEL_BYTES = 64 * 1024 * 1024  # a build reading more folds its chunks in worker processes
WORKERS = 2
BACKGROUND_BYTES = 8 * 1024 * 1024  # a search further behind answers from what is built while a detached process builds
COMMIT_EVENTS = 15_000  # events folded between commits while catching up (pending rows: about 6 KB each)
LOCK_TIMEOUT_S = 600.0
BUSY_AFTER_S = 2.0  # a lock holder showing no sign of life this long: a reader answers without the index
HEARTBEAT_S = 0.5  # how often the holder touches the lock file (its sign of life)


class IndexDamaged(RuntimeError):
    """The index on disk does not open or read: it is rebuilt from the logs."""


class IndexBusy(StoreError):
    """Another process holds the update lock and shows no sign of life (stuck, stopped, or a lock planted
    by something else): a reader answers from the logs instead of waiting for it."""


def damage(exc: BaseException) -> bool:
    """Whether `exc` says the index files are damaged: tantivy raises ValueError or, reading a torn
    file, panics (pyo3's PanicException, a BaseException)."""
    return isinstance(exc, ValueError | OSError | IndexDamaged) or type(exc).__name__ == "PanicException"


# What goes into the index: the fold (sink, view, disk rows), whose version is here, and each feature's
# extractors, whose version is in its declaration (`Feature.search_version`). Raise a version when what
# goes in changes; tests/test_formats.py guards the code each depends on.
INDEX = Format(
    "search-index",
    4,  # 4: no body and near lengths as fast fields (they served a re-implemented scoring, gone)
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


def version_key(store_folder: Path) -> dict[str, Any]:
    from contextflow.search.disk import ENGINE
    from contextflow.search.ranking import weight_scale
    from contextflow.search.tokens import STEMMER

    return {
        "format": FORMAT,
        "engine": ENGINE,
        "stemmer": STEMMER,
        "index": INDEX.version,
        "extractors": {name: found.version for name, found in extractor_formats().items()},
        "scale": weight_scale(),
        "store": str(store_folder),
    }


def _position_json(position: Position) -> list[Any]:
    return [
        position.dev,
        position.ino,
        position.size,
        position.mtime_ns,
        position.offset,
        position.lines,
        position.tail.hex(),
        position.blocks.hex(),
        position.partial.hex(),
    ]


def _position(raw: list[Any]) -> Position:
    dev, ino, size, mtime_ns, offset, lines, tail, blocks, partial = raw
    return Position(
        int(dev),
        int(ino),
        int(size),
        int(mtime_ns),
        int(offset),
        int(lines),
        bytes.fromhex(tail),
        bytes.fromhex(blocks),
        bytes.fromhex(partial),
    )


def _unread(path: Path, entry: dict[str, Any] | None) -> int:
    sig = signature(path)
    return max(0, (sig[2] if sig else 0) - (entry["cursor"][4] if entry else 0))


class DerivedSearch:
    """The shared on-disk search index of one store, as seen by this process."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.folder = store.state_dir / FOLDER
        self.key = version_key(store.folder)
        self._index: DiskIndex | None = None
        self._seen: tuple[Any, ...] | None = None  # state.json's signature when this process last read it
        self._state: dict[str, Any] = {}
        self._mutex = threading.RLock()  # the HTTP bridge's threads share one handle

    # -- state.json --------------------------------------------------------------------------

    def _read_state(self) -> dict[str, Any]:
        path = self.folder / STATE_FILE
        try:
            sig = signature(path)
        except PermissionError:  # its folder made unusable to this user (damage): made usable again
            derived_folder(self.folder)
            sig = signature(path)
        if sig is not None and sig == self._seen:
            return self._state
        try:
            state = jsonio.loads(read_regular(path))
        except (OSError, jsonio.DecodeError):
            state = {}
        if not isinstance(state, dict) or state.get("key") != self.key or not isinstance(state.get("segments"), dict):
            state = {}
        if sig != self._seen and self._index is not None:
            if state.get("instance") != self._state.get("instance"):
                self._index = None  # rebuilt by another process: open the new index
            else:
                self._state = state
                try:
                    self._index.reload()
                    self._check_files()
                except BaseException as exc:
                    if not damage(exc):
                        raise
                    self._index = None  # opened again (and found damaged) when next used
        self._seen, self._state = sig, state
        return state

    def _write_state(self, state: dict[str, Any]) -> None:
        state = {**state, "files": committed(self.folder / f"search-{state['instance']}")}
        if os.path.isdir(self.folder / STATE_FILE) and not os.path.islink(self.folder / STATE_FILE):
            remove_derived(self.folder / STATE_FILE)  # (a folder in its place: the file is rewritten)
        atomic_write(self.folder / STATE_FILE, jsonio.dumps(state), fsync=False)
        self._seen, self._state = signature(self.folder / STATE_FILE), state

    def _fresh(self, state: dict[str, Any], paths: list[Path]) -> bool:
        segments = state.get("segments")
        if not state or not isinstance(segments, dict) or set(segments) != {str(p) for p in paths}:
            return False
        for path in paths:
            entry = segments[str(path)]
            if not entry.get("complete") or signature(path) != tuple(entry["cursor"][:4]):
                return False
        return True

    # -- the index -------------------------------------------------------------------------

    def _open(self) -> DiskIndex:
        from contextflow.search.disk import DiskIndex

        if self._index is None:
            self._check_files()  # before tantivy opens it: a folder without `meta.json` is made a new, empty index
            mask = os.umask(0o077)
            try:
                self._index = DiskIndex(self.index_folder())
            except (ValueError, OSError) as exc:
                raise IndexDamaged(str(exc)) from exc
            finally:
                os.umask(mask)
            self._check_files()
        return self._index

    def _check_files(self) -> None:
        """A file the last commit recorded that is gone or has another size: torn, truncated or deleted."""
        try:
            check(self.index_folder(), self._state.get("files") or {})
        except FilesDamaged as exc:
            self._index = None
            raise IndexDamaged(str(exc)) from None

    def index_folder(self) -> Path:
        """Each build gets its own folder (`search-<instance>`): readers of the one before keep theirs."""
        return self.folder / f"search-{self._state.get('instance', 'none')}"

    def _paths(self) -> list[Path]:
        return list_segments(self.store.folder, self.store.location.legacy_files)

    def behind(self) -> tuple[int, int]:
        """Bytes of the logs the index does not hold yet (all of them without an index), and the logs' bytes."""
        with self._mutex:
            segments, paths = self._read_state().get("segments") or {}, self._paths()
            total = sum(sig[2] for path in paths if (sig := signature(path)) is not None)
            return sum(_unread(path, segments.get(str(path))) for path in paths), total

    def as_committed(self) -> tuple[DiskIndex | None, str]:
        """The index as its last commit left it, without catching up (None before a build's first commit),
        and how much of the logs it holds (`12.0 of 42.0 MB indexed`)."""
        from contextflow.search.disk import DiskIndex

        with self._mutex:
            unread, total = self.behind()
            progress = f"{(total - unread) / 1e6:.1f} of {total / 1e6:.1f} MB indexed"
            if not self._state or not DiskIndex.exists(self.index_folder()):  # a build not committed yet
                return None, progress
            try:
                return self._open(), progress
            except IndexDamaged:
                return None, progress

    def build_in_background(self) -> str | None:
        """Bring the index up to date in a detached process (`catchup.in_background`) unless one holds
        the update lock already: "started", "building" (a live holder), "stuck" (a holder silent for
        BUSY_AFTER_S); None where a process cannot be detached (no `os.fork`)."""
        from filelock import FileLock, Timeout

        if not hasattr(os, "fork"):
            return None
        derived_folder(self.folder)
        path = self.folder / LOCK_FILE
        lock = FileLock(path, mode=0o600)
        try:
            lock.acquire(timeout=0)
        except Timeout:
            return "stuck" if _silent_for(path) >= BUSY_AFTER_S else "building"
        lock.release()
        self._start_build()
        return "started"

    def _start_build(self) -> None:
        from contextflow.core.catchup import in_background

        in_background(lambda: DerivedSearch(self.store).update())

    def index(self) -> DiskIndex:
        """The index with every event of the logs in it (brought up to date first when a log changed)."""
        with self._mutex:
            return self._current()

    def _current(self) -> DiskIndex:
        try:
            if not self._fresh(self._read_state(), self._paths()):
                self.update()
            opened = self._index is not None
            index = self._open()
            if opened:
                self._check_files()  # (one scan of its folder) a file truncated under an open index
            return index
        except IndexDamaged:
            self.update(rebuild=True)
            return self._open()

    @contextmanager
    def locked(self) -> Iterator[None]:
        """The update lock. A holder touches the lock file every HEARTBEAT_S; a waiter gives up with
        `IndexBusy` once the holder has shown no sign of life for BUSY_AFTER_S (a live builder keeps it
        waiting, up to LOCK_TIMEOUT_S)."""
        from filelock import FileLock, Timeout

        derived_folder(self.folder)
        path = self.folder / LOCK_FILE
        if (sig := os.lstat(path) if os.path.lexists(path) else None) is not None and not stat.S_ISREG(sig.st_mode):
            remove_derived(path)  # (a folder or link in its place: machine-local, made again)
        lock = FileLock(path, mode=0o600)
        started = time.monotonic()
        while True:
            try:
                lock.acquire(timeout=HEARTBEAT_S)
                break
            except Timeout:
                waited = time.monotonic() - started
                if waited >= LOCK_TIMEOUT_S:
                    raise StoreError(
                        f"another contextflow process has been updating the search index in {self.folder} for "
                        f"over {LOCK_TIMEOUT_S:.0f} s; try again, or run `contextflow doctor`"
                    ) from None
                if waited >= BUSY_AFTER_S and _silent_for(path) >= BUSY_AFTER_S:
                    raise IndexBusy(
                        f"the search index in {self.folder} is locked by a process that shows no sign of life "
                        f"({path}); answering from the logs. If it stays so, end that process or delete the file"
                    ) from None
        mask = os.umask(0o077)  # tantivy creates its files with the process's umask: keep them private
        try:
            with _heartbeat(path):
                yield
        finally:
            os.umask(mask)
            lock.release()

    def update(self, rebuild: bool = False) -> int:
        """Fold the logs' new events into the index under the lock; returns how many were read.
        `rebuild` (or a damaged index, a version change, a log that no longer continues) starts over."""
        with self._mutex, self.locked():
            self._seen = None  # another process may have written it while this one waited
            state = self._read_state()
            if rebuild or not state:
                return self._rebuild()
            try:
                return self._catch_up(state, self._paths())
            except BaseException as exc:
                if not damage(exc):
                    raise
                return self._rebuild()

    def _rebuild(self) -> int:
        import shutil

        self._index = None
        for old in self.folder.glob("search*"):  # earlier builds (a reader elsewhere may still map one)
            shutil.rmtree(old, ignore_errors=True)
        self._write_state({"key": self.key, "instance": os.urandom(8).hex(), "segments": {}, "documents": 0})
        return self._catch_up(self._state, self._paths(), fresh=True)

    def search(self, run: Callable[[DiskIndex], T]) -> T:
        """`run(index)` on the current index (new events committed first); an index that fails to read is
        rebuilt and `run` tried again."""
        with self._mutex:
            try:
                return run(self.index())
            except BaseException as exc:
                if not damage(exc):
                    raise
                self.update(rebuild=True)
                return run(self.index())

    def _catch_up(self, state: dict[str, Any], paths: list[Path], fresh: bool = False) -> int:
        segments: dict[str, Any] = dict(state["segments"])
        if any(name not in {str(p) for p in paths} for name in segments):
            return self._rebuild() if not fresh else 0  # a log went away: its events may be gone
        todo = [path for path in paths if _stale(path, segments.get(str(path)))]
        if not todo:
            return 0
        total = sum(_unread(path, segments.get(str(path))) for path in todo)
        jsonio.fast(total)
        from contextflow.search.sink import SearchSink, fold_chunk, readable

        sink = SearchSink(self._open(), fresh)
        progress = Progress(total if fresh or total > READ_BYTES else 0)
        pool = _pool() if fresh and total >= PARALLEL_BYTES else None
        waiting: deque[tuple[Future[Any] | None, Path, Chunk, int]] = deque()
        counts = [0, 0]  # events read, bytes done

        def settle() -> None:  # a chunk's events are in the sink: record its read position, commit now and then
            work, path, chunk, start = waiting.popleft()
            if work is not None:
                sink.absorb(work.result())
            counts[0] += len(chunk.lines)
            counts[1] += chunk.position.offset - start
            complete = chunk.position.offset - start < READ_BYTES
            segments[str(path)] = {"cursor": _position_json(chunk.position), "complete": complete}
            if sink.pending_events >= COMMIT_EVENTS:
                sink.commit(last=False)
                self._write_state({**state, "segments": dict(segments), "documents": sink.count()})
            progress.update(counts[1], counts[0])

        enabled = gc.isenabled()
        gc.disable()  # the fold makes millions of small objects and keeps few: no collector passes meanwhile
        try:
            for path, chunk, start in _chunks(todo, segments):
                if chunk.reset:
                    sink.discard()
                    waiting.clear()
                    return self._rebuild() if not fresh else counts[0]
                work = pool.submit(fold_chunk, chunk.lines, sink.index.scale) if pool is not None else None
                if pool is None:
                    for line_no, raw in chunk.lines:
                        event = readable(raw, line_no, self.store.fields)
                        if event is not None:
                            sink.apply(event)
                waiting.append((work, path, chunk, start))
                while waiting and (len(waiting) > WORKERS or _done(waiting[0][0])):
                    settle()
            while waiting:
                settle()
            sink.commit()
            self._write_state({**state, "segments": dict(segments), "documents": sink.count()})
        except BaseException:
            sink.discard()
            raise
        finally:
            progress.close()
            if pool is not None:
                pool.shutdown(cancel_futures=True)
            if enabled:
                gc.enable()
        progress.finish(counts[0])
        return counts[0]


def _silent_for(path: Path) -> float:
    """Seconds since the lock file was last touched (its holder's sign of life)."""
    try:
        return time.time() - os.stat(path, follow_symlinks=False).st_mtime
    except OSError:
        return 0.0


@contextmanager
def _heartbeat(path: Path) -> Iterator[None]:
    """Touch `path` every HEARTBEAT_S while the block runs (a thread: a long commit still shows life)."""
    stop = threading.Event()

    def beat() -> None:
        while True:
            with contextlib.suppress(OSError):
                os.utime(path, follow_symlinks=False)
            if stop.wait(HEARTBEAT_S):
                return

    beater = threading.Thread(target=beat, name="derived-heartbeat", daemon=True)
    beater.start()
    try:
        yield
    finally:
        stop.set()
        beater.join()


def _done(work: Future[Any] | None) -> bool:
    return work is None or work.done()


def _stale(path: Path, entry: dict[str, Any] | None) -> bool:
    return entry is None or not entry.get("complete") or signature(path) != tuple(entry["cursor"][:4])


def _chunks(todo: list[Path], segments: dict[str, Any]) -> Iterator[tuple[Path, Chunk, int]]:
    """(log, its next chunk of new lines, the offset it starts at), log after log; stops after a reset."""
    for path in todo:
        entry = segments.get(str(path))
        position = _position(entry["cursor"]) if entry else None
        while True:
            start = position.offset if position else 0
            chunk = read_new(path, position, READ_BYTES)
            yield path, chunk, start
            if chunk.reset:
                return
            position = chunk.position
            if position.offset - start < READ_BYTES:
                break


def _pool() -> ProcessPoolExecutor | None:
    """Worker processes for a large build (fresh interpreters: no state or threads are inherited)."""
    if (os.cpu_count() or 1) < 2:
        return None
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(WORKERS, mp_context=multiprocessing.get_context("spawn"))


def describe(store: Store) -> dict[str, Any]:
    """Where the derived state is, how big, how current and how to rebuild it (for `doctor`; reads, never updates)."""
    folder = store.state_dir / FOLDER
    try:
        state = jsonio.loads(read_regular(folder / STATE_FILE))
        updated = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime((folder / STATE_FILE).stat().st_mtime))
    except (OSError, jsonio.DecodeError):
        state, updated = {}, None
    current = isinstance(state, dict) and state.get("key") == version_key(store.folder)
    segments = state.get("segments", {}) if current else {}
    behind = sum(
        _unread(path, segments.get(str(path))) for path in list_segments(store.folder, store.location.legacy_files)
    )
    size = sum(entry.stat().st_size for entry in folder.rglob("*") if entry.is_file()) if folder.is_dir() else 0
    damaged = None
    if current and isinstance(state.get("files"), dict):
        try:
            check(folder / f"search-{state.get('instance', 'none')}", state["files"])
        except FilesDamaged as exc:
            damaged = str(exc)
    return {
        "damaged": damaged,  # the index's files are not those its last commit wrote: the next search rebuilds it
        "folder": str(folder),
        "bytes": size,
        "documents": state.get("documents") if current else None,
        "updated": updated,
        "current": current and behind == 0,
        "log_bytes_behind": behind if current else None,
        "version_matches": current,
        "rebuild": f"delete {folder} (the next search rebuilds it from the logs) or run `contextflow doctor --rebuild`",
    }


_OPEN: weakref.WeakKeyDictionary[Store, DerivedSearch] = weakref.WeakKeyDictionary()


def search_for(store: Store) -> DerivedSearch:
    """This process's handle on the store's derived search index (one per store object)."""
    found = _OPEN.get(store)
    if found is None:
        found = _OPEN[store] = DerivedSearch(store)
    return found
