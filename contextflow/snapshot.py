"""The snapshot: the folded views saved in the machine-local state folder (never in the store),
so a new process skips the refold.

File layout: `MAGIC`, the 8-byte big-endian offset of the header, one pickled blob per view
and one for the set of seen event ids, then the pickled header. The header holds the validation key
(format, version, code fingerprint, store folder, view names), the per-log cursors (signature
and a hash of the bytes before the saved offset), the fold's counters and each blob's place.

Loading reads the header only. A view's blob is unpickled the first time that view is read,
and the seen ids the first time a new event arrives, so a process answering one kind of
question never pays for the others. The store then checks every log against its cursor as on
any refresh: unchanged logs are not read, grown ones are read from the saved offset, and
anything else refolds. Unpickling runs with the garbage collector paused (it would rescan
millions of new objects many times over) and events pickle as plain field tuples.

The file is written to a temp file and renamed; a broken or foreign file is ignored (the
store refolds), and a blob that fails to load raises `SnapshotBroken` so the store refolds.
Deleting the snapshot is always safe.
"""

from __future__ import annotations

import contextlib
import copyreg
import gc
import io
import os
import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextflow.events import Event
from contextflow.fold import Fold
from contextflow.log import remove_stale_temps

MAGIC = b"CFSNAP2\n"
_HEADER_OFFSET = 8  # bytes of the big-endian offset of the header, which follows the blobs
_EVENT_SLOTS = tuple(Event.__dict__[name] for name in ("id", "writer", "seq", "hlc", "kind", "data"))


class SnapshotBroken(RuntimeError):
    """A snapshot blob could not be loaded; the store refolds from the logs."""


def _event(event_id: str, writer: str, seq: int, hlc: int, kind: str, data: dict[str, Any]) -> Event:
    """Rebuild an event without going through the frozen dataclass's slow __init__/__setstate__."""
    event = object.__new__(Event)
    for slot, value in zip(_EVENT_SLOTS, (event_id, writer, seq, hlc, kind, data), strict=True):
        slot.__set__(event, value)
    return event


def _reduce_event(event: Event) -> tuple[Any, ...]:
    return (_event, (event.id, event.writer, event.seq, event.hlc, event.kind, event.data))


def dumps(value: Any) -> bytes:
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = {**copyreg.dispatch_table, Event: _reduce_event}
    pickler.dump(value)
    return buffer.getvalue()


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def loads(data: bytes) -> Any:
    with _gc_paused():
        return pickle.loads(data)


@dataclass(frozen=True)
class Header:
    key: tuple[Any, ...]
    segments: dict[Any, Any]
    counters: dict[str, Any]
    blobs: dict[str, tuple[int, int]]  # name -> (offset, length)


class Blobs:
    """Reads blobs from the snapshot file as it was when loaded (the descriptor stays open, so a
    newer snapshot renamed over it by another process does not move anything)."""

    def __init__(self, fd: int, blobs: dict[str, tuple[int, int]]) -> None:
        self._fd: int | None = fd
        self._blobs = blobs

    def raw(self, name: str) -> bytes:
        if self._fd is None:
            raise SnapshotBroken("the snapshot was closed")
        offset, length = self._blobs[name]
        data = os.pread(self._fd, length, offset)
        if len(data) != length:
            raise SnapshotBroken(f"the snapshot blob {name} is truncated")
        return data

    def loader(self, name: str) -> Callable[[], Any]:
        def load() -> Any:
            try:
                return loads(self.raw(name))
            except SnapshotBroken:
                raise
            except Exception as exc:  # any unpickling failure means: refold
                raise SnapshotBroken(f"the snapshot blob {name} does not load: {exc}") from None

        return load

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self.close()


def read(path: Path, key: tuple[Any, ...]) -> tuple[Header, Blobs] | None:
    """The header and a blob reader when `path` is a snapshot made with `key`; else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        start = os.pread(fd, len(MAGIC) + _HEADER_OFFSET, 0)
        if len(start) != len(MAGIC) + _HEADER_OFFSET or not start.startswith(MAGIC):
            raise ValueError("not a snapshot")
        offset = int.from_bytes(start[len(MAGIC) :], "big")
        header = loads(os.pread(fd, os.fstat(fd).st_size - offset, offset))
        if not isinstance(header, Header) or header.key != key:
            raise ValueError("another store, version or code")
    except Exception:
        os.close(fd)
        return None
    return header, Blobs(fd, header.blobs)


def restore(fold: Fold, header: Header, blobs: Blobs) -> None:
    """Make `fold` the snapshot's state, every view (and the seen ids) loading on first use."""
    counters = header.counters
    fold.count, fold.duplicates, fold.max_hlc = counters["count"], counters["duplicates"], counters["max_hlc"]
    fold.last_seq, fold.per_writer = dict(counters["last_seq"]), dict(counters["per_writer"])
    fold.defer_seen(blobs.loader("seen"))
    for view in fold.views:
        fold.defer(view.name, blobs.loader("view:" + view.name))


def write(path: Path, key: tuple[Any, ...], fold: Fold, segments: dict[Any, Any], old: Blobs | None) -> None:
    """Save `fold` atomically. Views still deferred with nothing pending are copied from `old` as bytes."""
    parts: list[tuple[str, bytes]] = []
    if fold.seen_deferred and old is not None:
        parts.append(("seen", old.raw("seen")))
    else:
        parts.append(("seen", dumps(fold.seen)))
    for view in fold.views:
        name = view.name
        if name in fold.deferred and not fold.pending(name) and old is not None:
            parts.append(("view:" + name, old.raw("view:" + name)))
        else:
            parts.append(("view:" + name, dumps(fold.state(name))))
    counters = {
        "count": fold.count, "duplicates": fold.duplicates, "max_hlc": fold.max_hlc,
        "last_seq": fold.last_seq, "per_writer": fold.per_writer,
    }
    remove_stale_temps(path)  # a server killed while saving leaves its temp file behind
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temp, "wb") as handle:
            handle.write(MAGIC + bytes(_HEADER_OFFSET))
            offsets: dict[str, tuple[int, int]] = {}
            position = len(MAGIC) + _HEADER_OFFSET
            for name, data in parts:
                offsets[name] = (position, len(data))
                handle.write(data)
                position += len(data)
            handle.write(dumps(Header(key, segments, counters, offsets)))
            handle.seek(len(MAGIC))
            handle.write(position.to_bytes(_HEADER_OFFSET, "big"))
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
