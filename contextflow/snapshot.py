"""The snapshot: the folded views saved in the machine-local state folder (never in the store),
so a new process skips the refold.

It holds plain data only (JSON, via orjson): reading it can never run code. A pickle, or any
file planted under the old name `snapshot.pickle`, is never opened.

File layout: `MAGIC`, the 8-byte big-endian offset of the header, one JSON blob per view and one
for the set of seen event ids, then the JSON header. The header holds the validation key
(format, version, code fingerprint, store folder, view names), the per-log segments with their
cursors (signature, a hash of the bytes before the saved offset and a hash chain over the whole
prefix), the fold's counters and each blob's place.

A blob is a tagged tree (`_Encoder` / `_decode`): JSON scalars as they are, containers as
`[tag, ...]`, an event as one row whose `data` stays the JSON it was read as, and a shared
object (a search document in two indexes, an event in two lists) once, then by reference.
Objects are rebuilt only as dataclasses defined in contextflow's own already-imported
modules, field by field, without calling any of their methods.

Loading reads and checks the header only. A view's blob is decoded the first time that view
is read, and the seen ids the first time a new event arrives. The store then checks every log
against its cursor as on any refresh: unchanged logs are not read, grown ones are read from
the saved offset, and anything else refolds. Decoding runs with the garbage collector paused.

The file is written to a temp file (0600) and renamed; a broken or foreign file is ignored
(the store refolds), and a blob that fails to decode raises `SnapshotBroken` so the store
refolds. Deleting the snapshot is always safe.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
import sys
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

from contextflow.events import Event
from contextflow.fold import Fold
from contextflow.fsutil import atomic_write, remove_stale_temps, write_all

FILE_NAME = "snapshot.cfsnap"
MAGIC = b"CFSNAP3\n"
_HEADER_OFFSET = 8  # bytes of the big-endian offset of the header, which follows the blobs
_EVENT_SLOTS = tuple(Event.__dict__[name] for name in ("id", "writer", "seq", "hlc", "kind", "data"))
_ARRAY_TYPES = frozenset("bBhHiIlLqQfd")
LIST, TUPLE, DICT, SET, REF, OBJECT, EVENT, ARRAY, FROZENSET, PATH, BYTES = range(11)
STUPLE, JLIST, JDICT, SDICT, KVDICT, SSET = range(11, 17)  # compact forms: fewer nodes to decode
_SCALARS = (str, int, float, bool, type(None))


def _scalar(value: Any) -> bool:
    return type(value) in _SCALARS


def _plain(value: Any) -> bool:
    """JSON as orjson reads it back unchanged: scalars, str-keyed dicts and lists of plain values."""
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind is dict:
        return all(type(key) is str and _plain(item) for key, item in value.items())
    if kind is list:
        return all(map(_plain, value))
    return False


def _keyed_pair(value: Any) -> bool:
    """((a, b, c), plain value): a last-writer-wins slot (order key, value)."""
    return (type(value) is tuple and len(value) == 2 and type(value[0]) is tuple and len(value[0]) == 3
            and all(map(_scalar, value[0])) and _plain(value[1]))


def _keyed_pairs(flat: list[Any]) -> dict[str, Any]:
    """KVDICT's flat row [name, a, b, c, value, ...] back to {name: ((a, b, c), value)}."""
    if len(flat) % 5:
        raise ValueError("a bad keyed row")
    items = iter(flat)
    return {name: ((a, b, c), value) for name, a, b, c, value in zip(items, items, items, items, items, strict=True)}


class SnapshotBroken(RuntimeError):
    """A snapshot blob could not be loaded; the store refolds from the logs."""


# -- encoding ----------------------------------------------------------------------------------


class _Encoder:
    def __init__(self) -> None:
        self.memo: dict[int, int] = {}
        self.classes: dict[type, int] = {}
        self.class_names: list[str] = []
        self.binary = bytearray()  # arrays' bytes, after the JSON: never parsed as text

    def encode(self, value: Any) -> Any:
        kind = type(value)
        if kind is str or kind is int or kind is float or kind is bool or value is None:
            return value
        if kind is tuple:
            if all(map(_scalar, value)):
                return [STUPLE, *value]
            return [TUPLE, *map(self.encode, value)]
        if kind is frozenset:
            return [FROZENSET, *map(self.encode, value)]
        if kind is bytes:
            return [BYTES, value.hex()]
        if kind is PurePosixPath or isinstance(value, Path):
            return [PATH, str(value)]
        found = self.memo.get(id(value))
        if found is not None:
            return [REF, found]
        self.memo[id(value)] = len(self.memo)
        if kind is list:
            if all(map(_plain, value)):
                return [JLIST, value]
            return [LIST, *map(self.encode, value)]
        if kind is dict:
            if all(type(key) is str for key in value):
                if all(map(_plain, value.values())):
                    return [JDICT, value]
                if value and all(map(_keyed_pair, value.values())):
                    return [KVDICT, [part for key, ((a, b, c), item) in value.items() for part in (key, a, b, c, item)]]
                return [SDICT, {key: self.encode(item) for key, item in value.items()}]
            out: list[Any] = [DICT]
            for key, item in value.items():
                out.append(self.encode(key))
                out.append(self.encode(item))
            return out
        if kind is set:
            if all(map(_scalar, value)):
                return [SSET, *value]
            return [SET, *map(self.encode, value)]
        if kind is Event:
            return [EVENT, value.id, value.writer, value.seq, value.hlc, value.kind, value.data]
        if kind is array:
            start = len(self.binary)
            self.binary += value.tobytes()
            return [ARRAY, value.typecode, start, len(self.binary) - start]
        if dataclasses.is_dataclass(value) and kind.__module__.startswith("contextflow."):
            names = [f.name for f in dataclasses.fields(value)]
            extra = set(getattr(value, "__dict__", {})) - set(names)
            if extra:
                raise TypeError(f"{kind.__qualname__} has attributes outside its fields: {sorted(extra)}")
            return [OBJECT, self._class(kind), *(self.encode(getattr(value, name)) for name in names)]
        raise TypeError(f"the snapshot cannot hold a {kind.__module__}.{kind.__qualname__}")

    def _class(self, kind: type) -> int:
        index = self.classes.get(kind)
        if index is None:
            index = self.classes[kind] = len(self.class_names)
            self.class_names.append(f"{kind.__module__}:{kind.__qualname__}")
        return index


def dumps(value: Any) -> bytes:
    """8-byte length of the JSON, the JSON tree, then the arrays' raw bytes."""
    encoder = _Encoder()
    tree = encoder.encode(value)
    text = orjson.dumps({"classes": encoder.class_names, "value": tree})
    return len(text).to_bytes(8, "big") + text + encoder.binary


# -- decoding ----------------------------------------------------------------------------------


def _resolve(name: Any) -> tuple[type, tuple[str, ...], bool]:
    """A dataclass named `module:qualname`, only from contextflow modules already imported."""
    if not isinstance(name, str) or name.count(":") != 1:
        raise ValueError(f"bad class name {name!r}")
    module_name, qualname = name.split(":")
    module = sys.modules.get(module_name)
    if not module_name.startswith("contextflow.") or module is None or not qualname.isidentifier():
        raise ValueError(f"class {name!r} is not one of contextflow's")
    kind = getattr(module, qualname, None)
    if not (isinstance(kind, type) and dataclasses.is_dataclass(kind) and kind.__module__ == module_name):
        raise ValueError(f"{name!r} is not a contextflow dataclass")
    fields = dataclasses.fields(kind)
    # the dataclass's generated __init__ only stores its arguments: the fast way to rebuild one
    stores_only = (kind.__dataclass_params__.init and not hasattr(kind, "__post_init__")  # type: ignore[attr-defined]
                   and all(f.init for f in fields))
    return kind, tuple(f.name for f in fields), stores_only


def _decode(blob: dict[str, Any], binary: bytes | memoryview = b"") -> Any:
    classes = [_resolve(name) for name in blob["classes"]]
    memo: list[Any] = []
    remember = memo.append
    new_object = object.__new__
    set_attribute = object.__setattr__
    id_slot, writer_slot, seq_slot, hlc_slot, kind_slot, data_slot = _EVENT_SLOTS

    def decode(node: Any) -> Any:
        if type(node) is not list:
            return node
        tag = node[0]
        if tag == EVENT:
            _, event_id, writer, seq, hlc, kind, data = node
            if not (type(event_id) is str and type(writer) is str and type(seq) is int and type(hlc) is int
                    and type(kind) is str and type(data) is dict):
                raise ValueError("a bad event row")
            event = new_object(Event)
            id_slot.__set__(event, event_id)
            writer_slot.__set__(event, writer)
            seq_slot.__set__(event, seq)
            hlc_slot.__set__(event, hlc)
            kind_slot.__set__(event, kind)
            data_slot.__set__(event, data)
            remember(event)
            return event
        if tag == STUPLE:
            return tuple(node[1:])
        if tag == REF:
            return memo[node[1]]
        if tag == KVDICT:
            remember(pairs := _keyed_pairs(node[1]))
            return pairs
        if tag in (JDICT, JLIST):
            if type(node[1]) is not (dict if tag == JDICT else list):
                raise ValueError("a bad plain container")
            remember(node[1])
            return node[1]
        if tag == SDICT:
            named: dict[str, Any] = {}
            remember(named)
            for key, item in node[1].items():
                named[key] = decode(item) if type(item) is list else item
            return named
        if tag == SSET:
            remember(scalars := set(node[1:]))
            return scalars
        if tag == TUPLE:
            return tuple([decode(item) for item in node[1:]])
        if tag == LIST:
            items: list[Any] = []
            remember(items)
            items.extend([
                (memo[item[1]] if item[0] == REF else decode(item)) if type(item) is list else item
                for item in node[1:]
            ])
            return items
        if tag == DICT:
            mapping: dict[Any, Any] = {}
            remember(mapping)
            for index in range(1, len(node), 2):
                key = decode(node[index])
                mapping[key] = decode(node[index + 1])
            return mapping
        if tag == OBJECT:
            kind, names, stores_only = classes[node[1]]
            if len(node) != len(names) + 2:
                raise ValueError(f"{kind.__qualname__} has {len(names)} fields, the snapshot {len(node) - 2}")
            place = len(memo)
            remember(None)  # its place in pre-order; filled once built (states hold no cycles)
            values = []
            for item in node[2:]:
                if type(item) is list:
                    inner = item[0]
                    if inner == STUPLE:
                        item = tuple(item[1:])
                    elif inner == KVDICT:
                        item = _keyed_pairs(item[1])
                        remember(item)
                    else:
                        item = decode(item)
                values.append(item)
            if stores_only:
                made: Any = kind(*values)
            else:
                made = new_object(kind)
                for name, value in zip(names, values, strict=True):
                    set_attribute(made, name, value)
            memo[place] = made
            return made
        if tag == SET:
            members: set[Any] = set()
            remember(members)
            members.update([decode(item) for item in node[1:]])
            return members
        if tag == FROZENSET:
            return frozenset([decode(item) for item in node[1:]])
        if tag == ARRAY:
            _, typecode, start, length = node
            if typecode not in _ARRAY_TYPES or type(start) is not int or type(length) is not int:
                raise ValueError("a bad array")
            if start < 0 or length < 0 or start + length > len(binary):
                raise ValueError("an array past the end of the blob")
            packed = array(typecode)
            packed.frombytes(binary[start : start + length])
            remember(packed)
            return packed
        if tag == PATH and type(node[1]) is str:
            return Path(node[1])
        if tag == BYTES and type(node[1]) is str:
            return bytes.fromhex(node[1])
        raise ValueError(f"unknown tag {tag!r}")

    return decode(blob["value"])


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
    size = int.from_bytes(data[:8], "big")
    if len(data) < 8 + size:
        raise ValueError("a truncated snapshot blob")
    with _gc_paused():
        blob = orjson.loads(memoryview(data)[8 : 8 + size])
        if not isinstance(blob, dict):
            raise ValueError("not a snapshot blob")
        return _decode(blob, memoryview(data)[8 + size :])


# -- the file ----------------------------------------------------------------------------------


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
            except Exception as exc:  # any decoding failure means: refold
                raise SnapshotBroken(f"the snapshot blob {name} does not load: {exc}") from None

        return load

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self.close()


def _plain_key(key: tuple[Any, ...]) -> Any:
    return orjson.loads(orjson.dumps(key))


def _counters(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError("bad counters")
    for name in ("count", "duplicates", "max_hlc"):
        if type(value.get(name)) is not int:
            raise ValueError(f"bad counter {name}")
    for name in ("last_seq", "per_writer"):
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
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        start = os.pread(fd, len(MAGIC) + _HEADER_OFFSET, 0)
        if len(start) != len(MAGIC) + _HEADER_OFFSET or not start.startswith(MAGIC):
            raise ValueError("not a snapshot")
        offset = int.from_bytes(start[len(MAGIC) :], "big")
        raw = orjson.loads(os.pread(fd, os.fstat(fd).st_size - offset, offset))
        if not isinstance(raw, dict) or raw.get("key") != _plain_key(key):
            raise ValueError("another store, version or code")
        with _gc_paused():
            segments = _decode(raw["segments"])
        if not isinstance(segments, dict):
            raise ValueError("bad segments")
        header = Header(key, segments, _counters(raw["counters"]), _blob_places(raw["blobs"], offset))
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
    offsets: dict[str, tuple[int, int]] = {}
    position = len(MAGIC) + _HEADER_OFFSET
    for name, data in parts:
        offsets[name] = (position, len(data))
        position += len(data)
    encoder = _Encoder()
    header = orjson.dumps({
        "key": key, "counters": counters, "blobs": offsets,
        "segments": {"value": encoder.encode(segments), "classes": encoder.class_names},
    })

    def fill(fd: int) -> None:
        write_all(fd, MAGIC + position.to_bytes(_HEADER_OFFSET, "big"))
        for _, data in parts:
            write_all(fd, data)
        write_all(fd, header)

    remove_stale_temps(path)  # a server killed while saving leaves its temp file behind
    atomic_write(path, fill, fsync=False)
