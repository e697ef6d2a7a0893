"""What a write needs of this writer's own log when the fold lags far behind it, without folding it.

An append continues its own log: the next seq, a clock after every stamp the log holds, and where a
batch a kill cut short begins (`Store._locked_write`). The fold knows these up to its cursor; after a
large write the fold did not take in (an import: `Store.append_staged`, `append_many(fold=False)`), a
process whose snapshot predates it would otherwise read and fold the whole import before its first
write. Instead each write the fold does not cover leaves a mark in the state folder (`MARK_FILE`): a
cursor at the log's end and the highest seq and stamp before it. A later write reads the mark and only
the bytes after it (the lines of any write made since), decoding them for those facts and folding
nothing; the fold catches up when something reads it (`Store.refresh`).

The mark is never wrong while the log only grows: its cursor checks the bytes before it as `read_new`
checks any cursor, and a log rewritten (compaction) or replaced (a sync tool) does not continue it,
so the store reads the log as before. A missing or damaged mark costs a read, never a wrong write.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import NamedTuple

import orjson

from contextflow.core.clock import MAX_HLC
from contextflow.core.events import BadLine, decode
from contextflow.core.fsutil import atomic_write, read_regular, remove_stale_temps
from contextflow.core.log import Cursor, end_cursor, read_new

MARK_FILE = "own-log.mark"
MARK_MAX_BYTES = 4096
READ_BYTES = 8 * 1024 * 1024  # the bytes after a mark are read this many at a time (never held whole)
_MAX_SEQ = 2**53 - 1  # events.decode's range for a seq


class Mark(NamedTuple):
    cursor: Cursor  # the log's end when the mark was made
    seq: int  # the highest seq of this writer in the log before it
    newest: int  # the highest stamp in the log before it


class End(NamedTuple):
    """The end of this writer's log as a write needs it."""

    seq: int
    newest: int
    held_at: int | None  # a batch at the end a kill cut short (quarantined by the next write)
    read: int  # bytes read to learn it


def read_mark(state_dir: Path, log: Path) -> Mark | None:
    """The mark the last write this fold does not cover left, or None (none, damaged, another log's)."""
    try:
        record = orjson.loads(read_regular(state_dir / MARK_FILE, MARK_MAX_BYTES))
        cursor = record["cursor"]
        fields = [cursor[name] for name in ("dev", "ino", "size", "mtime_ns", "offset")]
        seq, newest, tail = record["seq"], record["newest"], bytes.fromhex(cursor["tail"])
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if record.get("log") != log.name or not all(type(n) is int and n >= 0 for n in [*fields, seq, newest]):
        return None
    if seq > _MAX_SEQ or newest > MAX_HLC or fields[4] != fields[2]:
        return None
    dev, ino, size, mtime_ns, offset = fields
    return Mark(Cursor(dev, ino, size, mtime_ns, offset, 0, tail), seq, newest)


def write_mark(state_dir: Path, log: Path, seq: int, newest: int) -> None:
    """Mark the log's end (the caller holds the writer lock and has just written). Failing to is harmless:
    the next write reads from an older mark, or the fold's cursor."""
    cursor = end_cursor(log)
    if cursor is None:
        return
    place = {"dev": cursor.dev, "ino": cursor.ino, "size": cursor.size, "mtime_ns": cursor.mtime_ns}
    record = {"log": log.name, "cursor": {**place, "offset": cursor.offset, "tail": cursor.tail.hex()}}
    with contextlib.suppress(OSError):
        remove_stale_temps(state_dir / MARK_FILE)  # a writer killed while marking leaves its temp file behind
        atomic_write(state_dir / MARK_FILE, orjson.dumps({**record, "seq": seq, "newest": newest}), fsync=False)


def read_end(log: Path, cursor: Cursor | None, writer: str, seq: int, newest: int) -> End | None:
    """The end of `log` from `cursor` (None: its start), knowing `seq` and `newest` before it: the lines
    after it decoded for their seq and stamp, READ_BYTES at a time, nothing kept. None when the log no
    longer continues the cursor."""
    held_at, read = None, 0
    while True:
        try:
            chunk = read_new(log, cursor, READ_BYTES)
        except FileNotFoundError:
            return End(seq, newest, None, read) if cursor is None else None
        if chunk.reset:
            return None
        start = cursor.offset if cursor is not None else 0
        read += chunk.cursor.offset - start
        for _, raw in chunk.lines:
            try:
                event = decode(raw)
            except BadLine:
                continue  # counted and reported when the fold reads it
            newest = max(newest, event.hlc)
            if event.writer == writer and event.seq > seq:
                seq = event.seq
        held_at = chunk.held_at
        if held_at is not None or chunk.cursor.offset == start:
            return End(seq, newest, held_at, read)
        cursor = chunk.cursor
