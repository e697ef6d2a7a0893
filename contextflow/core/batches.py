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
  killed mid-write): nothing of it is returned, and the read position stops at its begin line, so a later read
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

from contextflow.core import jsonio

PREFIX = b'{"batch":'
COMMIT_LOOKUP = 512  # bytes read where a commit line should be (a commit line is about 80)
COMPLETE, HELD, TORN = "complete", "held", "torn"
SCAN_BYTES = 1024 * 1024  # read at a time while looking for a batch's commit past where it was claimed
_SCANNED: dict[tuple[int, int, int, str], int] = {}  # (device, inode, body start, batch id) -> scanned, no marker
_SCANNED_MAX = 64


class Stated(NamedTuple):
    """What a marker line states of its log where it stands: its writer's last seq, the newest stamp."""

    seq: int
    newest: int


class Marker(NamedTuple):
    kind: str  # begin | commit | abort
    id: str
    events: int
    bytes: int  # begin: the length of the event lines it frames
    stated: Stated | None = None  # the log's end where it stands (markers written before it said: None)


def markers(lines: list[bytes], batch_id: str, before: Stated | None, after: Stated | None) -> tuple[bytes, bytes]:
    """The begin and commit lines that frame `lines` (each ending in a newline) as one batch."""
    return frame(len(lines), sum(map(len, lines)), batch_id, before, after)


def frame(events: int, size: int, batch_id: str, before: Stated | None, after: Stated | None) -> tuple[bytes, bytes]:
    """The begin and commit lines of a batch of `events` lines that hold `size` bytes in all. Each states
    its writer's last seq and the log's newest stamp where it stands (`before` the batch, `after` it), so a
    write learns them from its log's last lines (`log_end`)."""
    begin = {"batch": "begin", "id": batch_id, "events": events, "bytes": size, **(before._asdict() if before else {})}
    commit = {"batch": "commit", "id": batch_id, "events": events, **(after._asdict() if after else {})}
    return jsonio.dumps(begin) + b"\n", jsonio.dumps(commit) + b"\n"


def abort(batch_id: str, stated: Stated) -> bytes:
    """The line that closes a batch a kill cut short (`batch_id`; "" when its begin line lies further back
    than a write looks): its lines are never applied, what follows is read."""
    return jsonio.dumps({"batch": "abort", "id": batch_id, "events": 0, **stated._asdict()}) + b"\n"


def parse(raw: bytes) -> Marker | None:
    """The marker a line is, or None (not a marker, or a malformed one: then it is an ordinary bad line)."""
    if not raw.startswith(PREFIX) or len(raw) > COMMIT_LOOKUP:
        return None
    try:
        record = jsonio.loads(raw)
    except jsonio.DecodeError:
        return None
    if not isinstance(record, dict):
        return None
    kind, batch_id, events, size = record.get("batch"), record.get("id"), record.get("events"), record.get("bytes", 0)
    if kind not in ("begin", "commit", "abort") or not isinstance(batch_id, str) or type(events) is not int:
        return None
    if type(size) is not int or size < 0 or events < 0:
        return None
    seq, newest = record.get("seq"), record.get("newest")
    stated = Stated(seq, newest) if type(seq) is int and type(newest) is int and seq >= 0 and newest >= 0 else None
    return Marker(kind, batch_id, events, size, stated)


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
    marker = _next_marker(fd, body_start, size, begin.id)
    if marker is not None:
        start, found_marker = marker
        return (COMPLETE, start) if _is_commit(found_marker, begin) else (TORN, start)
    return (TORN, at) if at < size else (HELD, body_start)


def _is_commit(found: Marker | None, begin: Marker) -> bool:
    return found is not None and found.kind == "commit" and found.id == begin.id


def _next_marker(fd: int, body_start: int, size: int, batch_id: str) -> tuple[int, Marker] | None:
    """The first whole marker line starting at or after `body_start` (its offset and what it says), or None.
    What was scanned with none found is remembered per batch of a file, so a batch being written is scanned
    once (the batch's random id in the key: a new file that reuses an inode is never taken for the old one)."""
    info = os.fstat(fd)
    key = (info.st_dev, info.st_ino, body_start, batch_id)
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


END_FIRST = 64 * 1024  # a log's end is looked for in its last bytes, twice as far back each time, up to
END_WINDOW = 1024 * 1024  # this: O(1) in the log's size
UNKNOWN = -1  # `End.held_at` when a batch may be open further back than the window (closed before a write)


class End(NamedTuple):
    """What a write needs of its writer's own log: the last seq it holds, its newest stamp and where a
    batch a kill cut short begins (None: none; UNKNOWN: maybe one, further back: close it anyway)."""

    seq: int
    newest: int
    held_at: int | None
    read: int  # bytes read to learn it


def log_end(fd: int, writer: str) -> End | None:
    """The end of the log open at `fd` (under its writer's lock) from its last bytes only: the last event
    line of `writer` (its seq; its stamp, the newest of a write that took no stamps given) and the last
    marker line, whose stated end covers what a batch's stamps were; a begin line with no commit or abort
    after it is a batch a kill cut short, whose lines count too (no seq the log holds is given again).
    With no marker in the window, a batch may be open further back (`UNKNOWN`). None when the window holds
    neither an event of `writer` nor a stated end (one line longer than the window, a log of another
    writer's lines): the caller reads the log whole."""
    size = os.fstat(fd).st_size
    want = END_FIRST
    while True:
        begin_at = max(0, size - want)
        data = os.pread(fd, size - begin_at, begin_at)
        first = 0 if begin_at == 0 else data.find(b"\n") + 1  # (a line the window cuts is not whole)
        body = data[first : data.rfind(b"\n") + 1]  # (a torn last line is quarantined by the write)
        found = _last_marker(body)
        if found is not None or begin_at == 0 or want >= END_WINDOW:
            break
        want *= 2
    last = _own_events(body, writer, 1)
    seq, newest = (last[0][0], last[0][1]) if last else (0, 0)
    held_at: int | None = None if found is not None or begin_at == 0 else UNKNOWN
    if found is not None:
        at, marker = found
        if marker.stated is not None:
            seq, newest = max(seq, marker.stated.seq), max(newest, marker.stated.newest)
        if marker.kind == "begin":  # a batch cut short: every stamp of its lines (given stamps are in any order)
            held_at = begin_at + first + at
            for event_seq, stamp in _own_events(body[at:], writer, None):
                seq, newest = max(seq, event_seq), max(newest, stamp)
    if not last and (found is None or found[1].stated is None) and begin_at > 0:
        return None
    return End(seq, newest, held_at, len(data))


def _last_marker(body: bytes) -> tuple[int, Marker] | None:
    """The last marker line of `body` (whole lines) and its offset in it."""
    end = len(body)
    while end > 0:
        at = body.rfind(b"\n" + PREFIX, 0, end) + 1
        if at == 0 and not body.startswith(PREFIX):
            return None
        line_end = body.find(b"\n", at)
        marker = parse(body[at:line_end])
        if marker is not None:
            return at, marker
        end = at - 1
    return None


def _own_events(body: bytes, writer: str, count: int | None) -> list[tuple[int, int]]:
    """(seq, stamp) of `writer`'s readable event lines in `body`, from its last line back (`count` at most)."""
    from contextflow.core.events import BadLine, decode

    found: list[tuple[int, int]] = []
    for raw in reversed(body.split(b"\n")):
        if not raw.strip() or raw.startswith(PREFIX):
            continue
        try:
            event = decode(raw)
        except BadLine:
            continue
        if event.writer == writer:
            found.append((event.seq, event.hlc))
            if count is not None and len(found) >= count:
                break
    return found
