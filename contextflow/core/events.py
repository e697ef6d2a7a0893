"""Event lines: the one record format of every log.

A line is one JSON object, UTF-8, ending in `\\n`:

    {"v": 1, "id": "<16 base32>", "w": "<writer>", "seq": 7, "hlc": <int>, "kind": "note", "data": {...}}

`id` is globally unique; `w` is the writer (machine) that appended it; `seq` counts that
writer's events from 1; `hlc` is a hybrid logical clock stamp (clock.py). Events order by
`(hlc, w, seq)`, the same on every machine. Every field is checked on read: a stamp past year
9999, a seq outside 0..2^53-1, an id or writer that is too long or holds control or path
characters, a line over MAX_LINE_BYTES, or arrays and objects nested more than MAX_DEPTH levels
is a `BadLine` (skipped, counted, reported).
Legacy ContextFlowMCP lines (`{"id","ts","kind":"note"|"handoff","project",...}`) decode into
events of writer `legacy` whose clock comes from their `ts` and whose seq is a hash of their id.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from contextflow.core import hashing, jsonio, regexes
from contextflow.core.clock import MAX_HLC, MAX_MS, stamp_from_ms, stamp_iso
from contextflow.core.errors import InputError
from contextflow.core.timeutil import iso_ms

SCHEMA_VERSION = 1
LEGACY_WRITER = "legacy"
MAX_LINE_BYTES = 4 * 1024 * 1024
# Arrays and objects in one line, the line's own object included. Tool arguments take 64 levels; every
# reader of a view (the JSON printers, orjson's 255-level limit) copes with this.
MAX_DEPTH = 100

MAX_SEQ = 2**53 - 1  # exact in every JSON reader
OrderKey = tuple[int, str, int]
_ID = regexes.compile(r"^[^\x00-\x1f\x7f-\x9f\u2028\u2029]{1,128}$")  # no control characters or line breaks
_WRITER = regexes.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$")
_KIND = regexes.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


class BadLine(ValueError):
    """A line that is not a readable event."""


class Event(NamedTuple):  # (a tuple, not a dataclass: cheap to define on every hook call, and immutable)
    id: str
    writer: str
    seq: int
    hlc: int
    kind: str
    data: dict[str, Any]

    @property
    def key(self) -> OrderKey:
        return (self.hlc, self.writer, self.seq)

    @property
    def ts(self) -> str:
        return stamp_iso(self.hlc)


def encode(event: Event) -> bytes:
    record = {
        "v": SCHEMA_VERSION,
        "id": event.id,
        "w": event.writer,
        "seq": event.seq,
        "hlc": event.hlc,
        "kind": event.kind,
        "data": event.data,
    }
    try:
        line = jsonio.dumps(record) + b"\n"
    except TypeError as exc:
        raise InputError(
            f"this {event.kind} cannot be stored as JSON ({exc}); pass plain, shallow JSON values"
        ) from None
    if len(line) > MAX_LINE_BYTES:
        raise InputError(f"this {event.kind} is {len(line)} bytes once encoded; the limit is {MAX_LINE_BYTES}")
    if too_deep(line, record):
        raise InputError(f"this {event.kind} has arrays and objects nested over {MAX_DEPTH} levels deep; flatten it")
    return line


def nested_deeper(value: Any, limit: int) -> bool:
    """Whether `value` (parsed JSON) nests arrays and objects more than `limit` levels: the one depth
    walk (log lines, tool arguments, JSON-RPC bodies), level by level, so hostile nesting cannot
    exhaust the stack."""
    level = [value]  # the arrays and objects one level down, level by level
    for _ in range(limit):
        level = [
            child
            for item in level
            if isinstance(item, dict | list)
            for child in (item.values() if isinstance(item, dict) else item)
        ]
        if not level:
            return False
    return any(isinstance(item, dict | list) for item in level)


def too_deep(line: bytes, record: Any) -> bool:
    """Whether `record` (parsed from `line`) nests arrays and objects more than MAX_DEPTH levels.
    A line with fewer brackets than that cannot (counting is cheap); only the others are walked."""
    return line.count(b"[") + line.count(b"{") > MAX_DEPTH and nested_deeper(record, MAX_DEPTH)


def decode(line: bytes, position: int = 0) -> Event:
    """Parse one line (without its newline). `position`, its line number, no longer changes the result:
    a legacy line's id and order come from its content, whichever file and line holds it."""
    if len(line) >= MAX_LINE_BYTES:
        raise BadLine(f"oversized line: {len(line)} bytes, over the size limit of {MAX_LINE_BYTES}")
    try:
        record = jsonio.loads(line)
    except jsonio.DecodeError as exc:
        if "recursion" in str(exc).lower():
            raise BadLine(f"nested too deeply: arrays and objects more than {MAX_DEPTH} levels") from None
        raise BadLine(f"not JSON: {exc}") from None
    if not isinstance(record, dict):
        raise BadLine("not a JSON object")
    if too_deep(line, record):
        raise BadLine(f"nested too deeply: arrays and objects more than {MAX_DEPTH} levels")
    if "v" not in record:
        return _decode_legacy(record)
    try:
        event = Event(record["id"], record["w"], record["seq"], record["hlc"], record["kind"], record["data"])
    except KeyError as exc:
        raise BadLine(f"missing field {exc.args[0]!r}") from None
    if not (
        isinstance(event.id, str)
        and isinstance(event.writer, str)
        and type(event.seq) is int
        and type(event.hlc) is int
        and isinstance(event.kind, str)
        and isinstance(event.data, dict)
    ):
        raise BadLine("a field has the wrong type")
    if not 0 <= event.hlc <= MAX_HLC:
        raise BadLine(f"clock stamp out of range ({event.hlc}): past year 9999 or negative")
    if not 0 <= event.seq <= MAX_SEQ:
        raise BadLine(f"seq out of range ({event.seq})")
    if not _ID.fullmatch(event.id):
        raise BadLine("id out of range: 1-128 characters without control characters expected")
    if not _WRITER.fullmatch(event.writer):
        raise BadLine("writer id out of range: 1-64 letters, digits, '-', '_' or '.' expected")
    if not _KIND.fullmatch(event.kind):
        raise BadLine("kind out of range")
    return event


def decode_lines(numbered: list[tuple[int, bytes]]) -> list[tuple[bytes, Event | None]]:
    """Each numbered line with its event, or None for a bad line."""
    lines: list[tuple[bytes, Event | None]] = []
    for line_no, raw in numbered:
        try:
            lines.append((raw, decode(raw, line_no)))
        except BadLine:
            lines.append((raw, None))
    return lines


LEGACY_FIELDS = (
    "project",
    "agent",
    "session_id",
    "task",
    "text",
    "summary",
    "tags",
    "next_steps",
    "open_questions",
    "files",
)


def _decode_legacy(record: dict[str, Any]) -> Event:
    kind = record.get("kind")
    if kind not in ("note", "handoff"):
        raise BadLine("neither an event nor a ContextFlowMCP note/handoff")
    ts = record.get("ts")
    ms = iso_ms(ts)  # UTC when it names no zone, as ContextFlowMCP meant
    if ms is None:
        raise BadLine(f"legacy line has an unreadable ts {str(ts)[:40]!r}")
    if not 0 <= ms <= MAX_MS:
        raise BadLine(f"clock stamp out of range: legacy ts {str(ts)[:40]!r}")
    data = {name: record[name] for name in LEGACY_FIELDS if record.get(name) is not None}
    event_id = record.get("id")
    if not isinstance(event_id, str) or not _ID.fullmatch(event_id):  # the same entry has the same id in any file
        event_id = "legacy-" + hashing.sha256(jsonio.dumps(record)).hexdigest()[:16]
    # the order key comes from the entry alone: ContextFlowMCP copies entries between its files (its
    # migration to session files), and every copy must sort the same whatever file is read first
    seq = int.from_bytes(hashing.blake2b(event_id.encode(), digest_size=6).digest(), "big")
    return Event(id=event_id, writer=LEGACY_WRITER, seq=seq, hlc=stamp_from_ms(ms), kind=kind, data=data)


def as_dict(event: Event) -> dict[str, Any]:
    """The event as a flat JSON-able dict for output: provenance first, then its data."""
    return {"id": event.id, "ts": event.ts, "kind": event.kind, "writer": event.writer, **event.data}
