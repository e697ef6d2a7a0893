"""Batches: a write of more than one line is all-or-nothing for every reader, even when cut short.

`log.LogWriter.append_lines` frames such a write (written in pieces: the framing, not one system
call, is what makes it all-or-nothing, so nothing joins a large batch into one buffer):

    {"batch":"begin","id":"<random>","events":N,"bytes":L}
    ... N event lines, L bytes ...
    {"batch":"commit","id":"<random>","events":N}

and `log.read_new` (the one reader of logs, so every consumer gets this) returns a batch's lines only
once its commit line is on disk, found where the begin line says (one small read, no buffering):

- complete: its event lines are returned like any others (a reader with a byte limit may take them
  in pieces: the batch is known to be whole), the markers never;
- held: the file ends before the commit (a write in progress, or a writer killed mid-write): nothing
  of it is returned, and the cursor stops at its begin line, so a later read starts there
  (`Chunk.held`: its lines). The next write from that machine, under the writer lock, moves a held
  batch at the end of its own log to `quarantine/` and cuts it off (a kill is the only way to leave
  one there), then appends: readers waiting at the begin line continue as if it never was;
- torn: something else than its commit stands where the commit should (a log from an older writer
  that appended after a cut, or a forged line): the lines it spans are dropped and counted
  (`Chunk.torn`).

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


class Marker(NamedTuple):
    kind: str  # begin | commit
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
    if kind not in ("begin", "commit") or not isinstance(batch_id, str) or type(events) is not int:
        return None
    if type(size) is not int or size < 0 or events < 0:
        return None
    return Marker(kind, batch_id, events, size)


def state(fd: int, body_start: int, begin: Marker) -> str:
    """Whether the batch whose begin line ends at `body_start` is complete, held or torn in the file."""
    at = body_start + begin.bytes
    if begin.bytes and os.pread(fd, 1, at - 1) != b"\n":
        return HELD if os.fstat(fd).st_size < at else TORN
    found = os.pread(fd, COMMIT_LOOKUP, at)
    end = found.find(b"\n")
    if end < 0:
        return HELD if len(found) < COMMIT_LOOKUP else TORN  # the commit line is not (wholly) written yet
    commit = parse(found[:end])
    if commit is not None and commit.kind == "commit" and (commit.id, commit.events) == (begin.id, begin.events):
        return COMPLETE
    return TORN


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
            if marker.kind == "commit":
                continue  # a batch's end (its lines were returned), or a stray one: nothing to apply
            found = state(self.fd, position, marker)
            if found == HELD:
                self.held_at, self.held = start, marker.events
                return out, start, line_no - 1
            if found == TORN:
                self.torn += 1
                self.skip_until = position + marker.bytes
        return out, end, line_no
