"""A plain-data codec for the snapshot's view states: JSON (orjson) plus raw number arrays.

Reading it can never run code: it builds only JSON values, tuples, sets, arrays, paths,
bytes, events, and dataclasses defined in contextflow's own already-imported modules (through
their generated `__init__`, or field by field); any other class name refuses the blob.

A blob is the 8-byte length of a JSON tagged tree, the tree, then the raw bytes of any number
arrays. JSON scalars stay as they are; containers are `[tag, ...]`; an event is one row whose
`data` stays the JSON it was read as; plain JSON containers and last-writer-wins slots
`{name: ((hlc, writer, seq), value)}` have compact forms (fewer nodes to decode); a shared
object (a search document in two indexes, an event in two lists) is written once, then
referenced by its place in pre-order. Decoding runs with the garbage collector paused.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import sys
from array import array
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

from contextflow.core.events import Event

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
    return (
        type(value) is tuple
        and len(value) == 2
        and type(value[0]) is tuple
        and len(value[0]) == 3
        and all(map(_scalar, value[0]))
        and _plain(value[1])
    )


def _keyed_pairs(flat: list[Any]) -> dict[str, Any]:
    """KVDICT's flat row [name, a, b, c, value, ...] back to {name: ((a, b, c), value)}."""
    if len(flat) % 5:
        raise ValueError("a bad keyed row")
    items = iter(flat)
    return {name: ((a, b, c), value) for name, a, b, c, value in zip(items, items, items, items, items, strict=True)}


# -- encoding ----------------------------------------------------------------------------------


class Encoder:
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
            return [STUPLE, *value] if all(map(_scalar, value)) else [TUPLE, *map(self.encode, value)]
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
            return [JLIST, value] if all(map(_plain, value)) else [LIST, *map(self.encode, value)]
        if kind is dict:
            if all(type(key) is str for key in value):
                if all(map(_plain, value.values())):
                    return [JDICT, value]
                if value and all(map(_keyed_pair, value.values())):
                    return [KVDICT, [part for key, ((a, b, c), item) in value.items() for part in (key, a, b, c, item)]]
                return [SDICT, {key: self.encode(item) for key, item in value.items()}]
            return [DICT, *(part for key, item in value.items() for part in (self.encode(key), self.encode(item)))]
        if kind is set:
            return [SSET, *value] if all(map(_scalar, value)) else [SET, *map(self.encode, value)]
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
    encoder = Encoder()
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
    stores_only = (
        kind.__dataclass_params__.init  # type: ignore[attr-defined]
        and not hasattr(kind, "__post_init__")
        and all(f.init for f in fields)
    )
    return kind, tuple(f.name for f in fields), stores_only


def decode_tree(blob: dict[str, Any], binary: bytes | memoryview = b"") -> Any:
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
            if not (
                type(event_id) is str
                and type(writer) is str
                and type(seq) is int
                and type(hlc) is int
                and type(kind) is str
                and type(data) is dict
            ):
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
            items.extend(
                [
                    (memo[item[1]] if item[0] == REF else decode(item)) if type(item) is list else item
                    for item in node[1:]
                ]
            )
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
def gc_paused() -> Iterator[None]:
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
    with gc_paused():
        blob = orjson.loads(memoryview(data)[8 : 8 + size])
        if not isinstance(blob, dict):
            raise ValueError("not a snapshot blob")
        return decode_tree(blob, memoryview(data)[8 + size :])
