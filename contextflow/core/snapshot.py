"""The snapshot: the folded views saved in the machine-local state folder (never in the store),
so a new process skips the refold. Deleting it is always safe.

Plain data only (`plaindata.py`: JSON plus raw number arrays; only contextflow's own dataclasses
are rebuilt), so reading it can never run code. A pickle, or any file planted under the old
name `snapshot.pickle`, is never opened.

Layout: `MAGIC`, the 8-byte big-endian offset of the header, one blob per view and one for the
seen event ids, then the JSON header: the validation key (format, version, code fingerprint,
store folder, view names), the per-log segments with their cursors, the fold's counters and
each blob's place.

Loading reads and checks the header only; a view's blob is decoded when that view is first
read, the seen ids when a new event first arrives, and the store checks every log against its
cursor as on any refresh. The file is written to a temp file (0600) and renamed. A broken or
foreign file is ignored and a blob that fails to decode raises `SnapshotBroken`: the store refolds.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from contextflow.core.fold import Fold, View
from contextflow.core.formats import Format
from contextflow.core.fsutil import atomic_write, open_regular, remove_stale_temps, write_all
from contextflow.core.plaindata import OBJECT, Encoder, decode_tree, dumps, gc_paused, loads

__all__ = ["OBJECT", "Blobs", "Header", "SnapshotBroken", "dumps", "in_background", "loads", "read", "restore", "write"]
# the snapshot's own format (what the store folds and how it is written), beside each view's (features.py)
SNAPSHOT = Format("snapshot", 2, ("contextflow.core.store", "contextflow.core.snapshot"))

FILE_NAME = "snapshot.cfsnap"
MAGIC = b"CFSNAP3\n"
_HEADER_OFFSET = 8  # bytes of the big-endian offset of the header, which follows the blobs


class SnapshotBroken(RuntimeError):
    """A snapshot blob could not be loaded; the store refolds from the logs."""


@dataclass(frozen=True)
class Header:
    segments: dict[Any, Any]
    counters: dict[str, Any]
    blobs: dict[str, tuple[int, int]]  # name -> (offset, length)
    versions: dict[str, str]  # view name -> the view's `version` when its blob was made


class Blobs:
    """Reads blobs from the snapshot file as it was when loaded (the descriptor stays open, so a
    newer snapshot renamed over it by another process does not move anything)."""

    def __init__(self, fd: int, header: Header) -> None:
        self._fd: int | None = fd
        self._blobs = header.blobs
        self.versions = header.versions

    def raw(self, name: str) -> bytes:
        if self._fd is None:
            raise SnapshotBroken("the snapshot was closed")
        offset, length = self._blobs[name]
        data = os.pread(self._fd, length, offset)
        if len(data) != length:
            raise SnapshotBroken(f"the snapshot blob {name} is truncated")
        return data

    def load(self, name: str) -> Any:
        data = self.raw(name)
        try:
            return loads(data)
        except Exception as exc:  # any decoding failure means: refold
            raise SnapshotBroken(f"the snapshot blob {name} does not load: {exc}") from None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self.close()


def _counters(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError("bad counters")
    for name in ("count", "duplicates", "max_hlc"):
        if type(value.get(name)) is not int:
            raise ValueError(f"bad counter {name}")
    for name in ("last_seq", "per_writer", "caps", "bounded"):
        table = value.get(name)
        if not isinstance(table, dict) or not all(type(v) is int for v in table.values()):
            raise ValueError(f"bad counter {name}")
    return value


def _blob_places(value: Any, end: int) -> dict[str, tuple[int, int]]:
    if not isinstance(value, dict):
        raise ValueError("bad blob table")
    places: dict[str, tuple[int, int]] = {}
    for name, place in value.items():
        if not (isinstance(place, list) and len(place) == 2 and all(type(n) is int and n >= 0 for n in place)):
            raise ValueError("bad blob place")
        if place[0] + place[1] > end:
            raise ValueError("a blob lies past the header")
        places[name] = (place[0], place[1])
    return places


def read(path: Path, key: tuple[Any, ...]) -> tuple[Header, Blobs] | None:
    """The header and a blob reader when `path` is a snapshot made with `key`; else None."""
    try:
        fd = open_regular(path)
    except OSError:
        return None
    try:
        start = os.pread(fd, len(MAGIC) + _HEADER_OFFSET, 0)
        if len(start) != len(MAGIC) + _HEADER_OFFSET or not start.startswith(MAGIC):
            raise ValueError("not a snapshot")
        offset = int.from_bytes(start[len(MAGIC) :], "big")
        raw = orjson.loads(os.pread(fd, os.fstat(fd).st_size - offset, offset))
        if not isinstance(raw, dict) or raw.get("key") != orjson.loads(orjson.dumps(key)):
            raise ValueError("another store, version or code")
        with gc_paused():
            segments = decode_tree(raw["segments"])
        if not isinstance(segments, dict):
            raise ValueError("bad segments")
        versions = raw["versions"]
        if not isinstance(versions, dict) or not all(isinstance(v, str) for v in versions.values()):
            raise ValueError("bad view versions")
        header = Header(segments, _counters(raw["counters"]), _blob_places(raw["blobs"], offset), versions)
    except Exception:
        os.close(fd)
        return None
    return header, Blobs(fd, header)


def _view_loader(view: View, blobs: Blobs) -> Callable[[], Any]:
    def load() -> Any:  # a view whose `version` changed since (say, its stemmer's) is refolded
        if getattr(view, "version", "") != blobs.versions.get(view.name):
            raise SnapshotBroken(f"the snapshot's {view.name} view was made by another version")
        return blobs.load("view:" + view.name)

    return load


def restore(views: Sequence[View], header: Header, blobs: Blobs) -> Fold:
    """A fold in the snapshot's state, every view (and the seen ids) loading on first use."""
    fold = Fold(views, {view.name: _view_loader(view, blobs) for view in views})
    counters = header.counters
    fold.count, fold.duplicates, fold.max_hlc = counters["count"], counters["duplicates"], counters["max_hlc"]
    fold.last_seq, fold.per_writer = dict(counters["last_seq"]), dict(counters["per_writer"])
    fold.caps, fold.bound_caps, fold.bounded = dict(counters["caps"]), dict(counters["caps"]), dict(counters["bounded"])
    fold.defer_seen(functools.partial(blobs.load, "seen"))
    return fold


def write(path: Path, key: tuple[Any, ...], fold: Fold, segments: dict[Any, Any], old: Blobs | None) -> None:
    """Save `fold` atomically. Views still deferred with nothing pending are copied from `old` as bytes."""
    parts = [("seen", old.raw("seen") if fold.seen_deferred and old is not None else dumps(fold.seen))]
    versions: dict[str, str] = {}
    for view in fold.views:
        name = "view:" + view.name
        unread = view.name in fold.deferred and not fold.pending(view.name)  # its bytes are copied as they are
        if unread and old is not None:
            parts.append((name, old.raw(name)))
            versions[view.name] = old.versions.get(view.name, "")
        else:
            parts.append((name, dumps(fold.state(view.name))))
            versions[view.name] = getattr(view, "version", "")
    if not fold.exact:
        raise ValueError("the fold awaits a refold with its bounds known")
    names = ("count", "duplicates", "max_hlc", "last_seq", "per_writer", "caps", "bounded")
    counters = {name: getattr(fold, name) for name in names}
    offsets: dict[str, tuple[int, int]] = {}
    position = len(MAGIC) + _HEADER_OFFSET
    for name, data in parts:
        offsets[name] = (position, len(data))
        position += len(data)
    encoder = Encoder()
    header = orjson.dumps(
        {
            "key": key,
            "counters": counters,
            "blobs": offsets,
            "versions": versions,
            "segments": {"value": encoder.encode(segments), "classes": encoder.class_names},
        }
    )

    def fill(fd: int) -> None:
        write_all(fd, MAGIC + position.to_bytes(_HEADER_OFFSET, "big"))
        for _, data in parts:
            write_all(fd, data)
        write_all(fd, header)

    remove_stale_temps(path)  # a server killed while saving leaves its temp file behind
    atomic_write(path, fill, fsync=False)
    (path.parent / "snapshot.pickle").unlink(missing_ok=True)  # an older version's file: never read, so gone


def in_background(work: Callable[[], object]) -> None:
    """Run `work` (a save) in a forked grandchild, so the caller neither waits for it nor has a child to
    reap; its standard streams point at the null device, so a client reading the caller's output to its
    end never waits for it either. POSIX only: the caller checks `os.fork` exists."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # threads exist; the child only writes a file
        child = os.fork()
    if child == 0:
        try:
            if os.fork() == 0:
                try:
                    null = os.open(os.devnull, os.O_RDWR)
                    for fd in (0, 1, 2):
                        os.dup2(null, fd)
                    work()
                finally:
                    os._exit(0)  # never flush the parent's buffered output a second time
        finally:
            os._exit(0)
    os.waitpid(child, 0)
