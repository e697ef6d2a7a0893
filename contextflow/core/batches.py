"""Batches: a write of more than one line is all-or-nothing for every reader, even when cut short.

`log.LogWriter.append_lines` frames such a write (written in pieces: the framing, not one system
call, is what makes it all-or-nothing, so nothing joins a large batch into one buffer):

    {"batch":"begin","id":"<random>","events":N,"bytes":L}
    ... N event lines, L bytes ...
    {"batch":"commit","id":"<random>","events":N}

and `log.read_new` (the one reader of logs, so every consumer gets this) returns a batch's lines only
once its commit line is on disk. The begin line's sizes are a claim, not a fact: the commit is looked
for where the begin line says (one small read), and else found by scanning the lines after it for the
first marker line (remembered per file, so a batch being written is scanned once as it grows):

- complete: its commit line arrives (where claimed or later, whatever the header says); its event lines
  are returned like any others (a reader with a byte limit may take them in pieces: the batch is known to
  be whole), the markers never;
- held: the file ends before its commit, with no other marker after it (a write in progress, or a writer
  killed mid-write): nothing of it is returned, and the cursor stops at its begin line, so a later read
  starts there (`Chunk.held`: its lines). Only what lies between a begin and its commit is ever held;
- torn: another marker comes first (another batch, or the `abort` line the writer's next write adds after
  a batch a kill cut short), or the file runs past where the begin line put its commit and no commit
  follows (an older writer that appended after a cut, or a forged line): the lines from the begin up to
  that marker (or up to where it said it ends) are dropped and counted (`Chunk.torn`), and what follows
  is read. So a forged begin line hides nothing past its writer's next write.

The next write from a machine whose own log ends in a held batch (under the writer lock: a kill is the
only way to leave one) closes it with an abort line instead of cutting it off: its complete lines stay in
the log, never applied, and no complete line is ever moved to `quarantine/` (a torn last line still is).

A log without markers (written before batches existed) reads exactly as before. A marker line is
not an event: contextflow versions before batches count one as a bad line.
"""

from __future__ import annotations

import os
from typing import NamedTuple

import orjson

PREFIX = b'{"batch":'
COMMIT_LOOKUP = 512  # bytes read where a commit line should be (a commit line is about 80)
COMPLETE, HELD, TORN = "complete", "held", "torn"
SCAN_BYTES = 1024 * 1024  # read at a time while looking for a batch's commit past where it was claimed
_SCANNED: dict[tuple[int, int, int], int] = {}  # (device, inode, body start) -> bytes scanned with no marker
_SCANNED_MAX = 64


class Marker(NamedTuple):
    kind: str  # begin | commit | abort
    id: str
    events: int
    bytes: int  # begin: the length of the event lines it frames


def markers(lines: list[bytes], batch_id: str) -> tuple[bytes, bytes]:
    """The begin and commit lines that frame `lines` (each ending in a newline) as one batch."""
    return frame(len(lines), sum(map(len, lines)), batch_id)


def frame(events: int, size: int, batch_id: str) -> tuple[bytes, bytes]:
    """The begin and commit lines of a batch of `events` lines that hold `size` bytes in all."""
    begin = orjson.dumps({"batch": "begin", "id": batch_id, "events": events, "bytes": size})
    commit = orjson.dumps({"batch": "commit", "id": batch_id, "events": events})
    return begin + b"\n", commit + b"\n"


def abort(batch_id: str) -> bytes:
    """The line that closes a batch a kill cut short: its lines are never applied, what follows is read."""
    return orjson.dumps({"batch": "abort", "id": batch_id, "events": 0}) + b"\n"


def parse(raw: bytes) -> Marker | None:
    """The marker a line is, or None (not a marker, or a malformed one: then it is an ordinary bad line)."""
    if not raw.startswith(PREFIX) or len(raw) > COMMIT_LOOKUP:
        return None
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(record, dict):
        return None
    kind, batch_id, events, size = record.get("batch"), record.get("id"), record.get("events"), record.get("bytes", 0)
    if kind not in ("begin", "commit", "abort") or not isinstance(batch_id, str) or type(events) is not int:
        return None
    if type(size) is not int or size < 0 or events < 0:
        return None
    return Marker(kind, batch_id, events, size)


def state(fd: int, body_start: int, begin: Marker) -> tuple[str, int]:
    """Whether the batch whose begin line ends at `body_start` is complete, held or torn in the file; with,
    for a torn one, the offset its dropped lines end before (lines starting before it are dropped)."""
    size = os.fstat(fd).st_size
    at = body_start + begin.bytes  # where the begin line says its commit is
    if at < size and (not begin.bytes or os.pread(fd, 1, at - 1) == b"\n"):
        found = os.pread(fd, COMMIT_LOOKUP, at)
        end = found.find(b"\n")
        if end >= 0 and _is_commit(parse(found[:end]), begin):
            return COMPLETE, at
        if end < 0 and len(found) < COMMIT_LOOKUP:
            return HELD, body_start  # the commit line is not (wholly) written yet
    marker = _next_marker(fd, body_start, size)
    if marker is not None:
        start, found_marker = marker
        return (COMPLETE, start) if _is_commit(found_marker, begin) else (TORN, start)
    return (TORN, at) if at < size else (HELD, body_start)


def _is_commit(found: Marker | None, begin: Marker) -> bool:
    return found is not None and found.kind == "commit" and found.id == begin.id


def _next_marker(fd: int, body_start: int, size: int) -> tuple[int, Marker] | None:
    """The first whole marker line starting at or after `body_start` (its offset and what it says), or None.
    What was scanned with none found is remembered per file, so a batch being written is scanned once."""
    info = os.fstat(fd)
    key = (info.st_dev, info.st_ino, body_start)
    position = _SCANNED.get(key, body_start)
    if not body_start <= position <= size:  # (a file cut and written again)
        position = body_start
    probe = b"\n" + PREFIX  # a marker line, with the newline that ends the line before it
    while position < size:
        chunk = os.pread(fd, SCAN_BYTES + len(probe), position - 1)  # (body_start - 1: the begin line's newline)
        at = chunk.find(probe)
        while 0 <= at < SCAN_BYTES:
            start = position + at
            raw = os.pread(fd, COMMIT_LOOKUP + 1, start)
            end = raw.find(b"\n")
            marker = parse(raw[:end]) if end >= 0 else None
            if marker is not None:
                return start, marker
            at = chunk.find(probe, at + 1)
        position += SCAN_BYTES
    if len(_SCANNED) >= _SCANNED_MAX:
        _SCANNED.clear()
    _SCANNED[key] = max(body_start, size - 2 * COMMIT_LOOKUP)  # (a marker line still being written: seen again)
    return None


class Lines:
    """The batch-aware walk over a log's whole lines, from one offset on (`log.read_new`, `log.read_whole`)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.skip_until = 0  # lines starting before this offset belong to a torn batch
        self.torn = 0  # lines dropped as parts of torn batches (their begin lines included)
        self.held_at: int | None = None  # offset of a held batch's begin line (the walk stops there)
        self.held = 0  # the held batch's events

    def numbered(
        self, raws: list[bytes], offset: int, line_no: int, end: int
    ) -> tuple[list[tuple[int, bytes]], int, int]:
        """The whole lines `raws` (read from `offset` to `end`, after line `line_no`), numbered, blank ones and
        markers left out, only those of complete batches; with the offset and line number reached (before
        a held batch's begin line, where the walk stops: `held_at`)."""
        if self.skip_until <= offset and not any(raw.startswith(PREFIX) for raw in raws):  # the common case
            return [(n, raw) for n, raw in enumerate(raws, start=line_no + 1) if raw.strip()], end, line_no + len(raws)
        out: list[tuple[int, bytes]] = []
        position = offset
        for raw in raws:
            start, position = position, position + len(raw) + 1
            line_no += 1
            if start < self.skip_until:
                self.torn += bool(raw.strip())
                continue
            marker = parse(raw) if raw.startswith(PREFIX) else None
            if marker is None:
                if raw.strip():
                    out.append((line_no, raw))
                continue
            if marker.kind != "begin":
                continue  # a batch's end (its lines were returned), an abort, or a stray one: nothing to apply
            found, stop = state(self.fd, position, marker)
            if found == HELD:
                self.held_at, self.held = start, marker.events
                return out, start, line_no - 1
            if found == TORN:
                self.torn += 1
                self.skip_until = stop
        return out, end, line_no
