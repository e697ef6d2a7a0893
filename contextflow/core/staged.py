"""A batch too large to hold in memory (an import of a million items), prepared outside the writer lock.

`StagedBatch.add` checks and encodes each event as `events.encode` does, but with its writer, seq and
clock stamp left out, and appends it to a file in the state folder (redacted first, like every write: the
file holds nothing `append_many` would not store). `Store.append_staged` then takes the writer lock,
stamps each line (`head`) and writes them all as ONE framed batch (`log.LogWriter.append_framed`): only
the seq and stamp of each event are made under the lock, so the lock is held for the copy alone. The
file is removed when the batch is closed; one left by a killed process is removed by the next batch.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from array import array
from collections.abc import Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from contextflow.core import jsonio
from contextflow.core.clock import MAX_HLC
from contextflow.core.errors import InputError
from contextflow.core.events import MAX_DEPTH, MAX_LINE_BYTES, SCHEMA_VERSION, Event, encode

FOLDER = "staged"
READ_BYTES = 1024 * 1024
_PROBE_SEQ = 10**15  # a seq no log reaches: a line checked with it fits with any real one


def head(event_id: bytes, writer: bytes, seq: int, hlc: int) -> bytes:
    """The start of `encode`'s line for an event (ids and writer JSON-encoded), up to its stamp."""
    return b'{"v":%d,"id":%b,"w":%b,"seq":%d,"hlc":%d' % (SCHEMA_VERSION, event_id, writer, seq, hlc)


@lru_cache(maxsize=256)
def _kind(kind: str) -> bytes:
    return jsonio.dumps(kind)


def _remove_stale(folder: Path) -> None:
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            pid = entry.name.split(".", 1)[0]
            if pid.isdigit() and int(pid) != os.getpid():
                try:
                    os.kill(int(pid), 0)
                except ProcessLookupError:
                    with contextlib.suppress(OSError):
                        os.unlink(entry.path)
                except OSError:
                    pass


class StagedBatch:
    def __init__(self, state_dir: Path, writer: str) -> None:
        folder = state_dir / FOLDER
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        _remove_stale(folder)
        self.path = folder / f"{os.getpid()}.{secrets.token_hex(6)}.lines"
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        self.writer = writer
        self._writer = jsonio.dumps(writer)
        self._probe_rest = len(head(b"", self._writer, _PROBE_SEQ, MAX_HLC))  # a probe line's head but its id
        self._id_sizes = array("H")  # per line: its JSON-encoded id's length, then the rest's
        self._tail_sizes = array("I")
        self._buffer: list[bytes] = []
        self._buffered = 0

    def __len__(self) -> int:
        return len(self._tail_sizes)

    def add_many(
        self,
        items: Sequence[tuple[str, str, dict[str, Any]]],
        scrubbed: bool = False,
        encoded: Sequence[bytes | None] | None = None,
    ) -> None:
        """Events (id, kind, data) redacted (unless `scrubbed` already), checked and staged, in order.
        `encoded`: per event, its data's JSON (`jsonio.dumps`) when the caller has it and it holds no
        `<private>` text (`private.stripped_encoded` said so), else None."""
        from contextflow.core.private import stripped_encoded
        from contextflow.core.secrets import scrub_items

        given = encoded if encoded is not None else [None] * len(items)
        encoded_all = [
            (data, body) if body is not None else stripped_encoded(data)  # `<private>` text is never stored
            for (_, _, data), body in zip(items, given, strict=True)
        ]
        pairs = [(kind, data) for (_, kind, _), (data, _) in zip(items, encoded_all, strict=True)]
        if not scrubbed:
            pairs = scrub_items(pairs)  # (data it changes is another object: encoded again)
        for (event_id, _, _), (kind, data), (seen, body) in zip(items, pairs, encoded_all, strict=True):
            self._add(event_id, kind, data, body if data is seen else None)

    def _add(self, event_id: str, kind: str, data: dict[str, Any], body: bytes | None = None) -> None:
        """`body`: `data` as JSON already, when the caller encoded it (the line is then put together around it:
        `encode` writes a record's fields each as it writes them alone)."""
        identity = jsonio.dumps(event_id)
        tail = b""
        if body is not None:
            tail = b',"kind":%b,"data":%b}\n' % (_kind(kind), body)
            brackets = tail.count(b"[") + tail.count(b"{") + identity.count(b"[") + identity.count(b"{")
            if len(identity) + self._probe_rest + len(tail) > MAX_LINE_BYTES or brackets > MAX_DEPTH:
                tail = b""  # (refused, or to be walked for its depth: by `encode`, with its own words)
        if not tail:
            probe = head(identity, self._writer, _PROBE_SEQ, MAX_HLC)
            line = encode(Event(event_id, self.writer, _PROBE_SEQ, MAX_HLC, kind, data))  # checks shape and size
            if not line.startswith(probe) or len(line) > MAX_LINE_BYTES:
                raise InputError(f"this {kind} cannot be stored: its line is not as expected")
            tail = line[len(probe) :]
        self._id_sizes.append(len(identity))
        self._tail_sizes.append(len(tail))
        self._buffer += [identity, tail]
        self._buffered += len(identity) + len(tail)
        if self._buffered >= READ_BYTES:
            self._flush()

    def _flush(self) -> None:
        data = b"".join(self._buffer)
        self._buffer, self._buffered = [], 0
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def lines(self, first_seq: int, stamps: array[int]) -> tuple[int, Iterator[bytes]]:
        """(the bytes of every line, the lines in pieces): line n carries seq `first_seq + n` and `stamps[n]`."""
        self._flush()
        count = len(self._tail_sizes)
        size = sum(self._id_sizes) + sum(self._tail_sizes)
        # each line's head: the same bytes but its seq's and stamp's digits (counted without making the heads)
        size += count * (len(head(b"", self._writer, 0, 0)) - 2)
        size += sum(map(len, map(str, range(first_seq, first_seq + count)))) + sum(map(len, map(str, stamps)))
        return size, self._pieces(first_seq, stamps)

    def _pieces(self, first_seq: int, stamps: array[int]) -> Iterator[bytes]:
        position, data, at = 0, b"", 0
        out: list[bytes] = []
        for n, (id_size, tail_size) in enumerate(zip(self._id_sizes, self._tail_sizes, strict=True)):
            need = id_size + tail_size
            if at + need > len(data):
                more = os.pread(self._fd, max(READ_BYTES, need), position)
                position += len(more)
                data, at = data[at:] + more, 0
            identity, tail = data[at : at + id_size], data[at + id_size : at + need]
            at += need
            out += [head(identity, self._writer, first_seq + n, stamps[n]), tail]
            if len(out) >= 4096:
                yield b"".join(out)
                out = []
        if out:
            yield b"".join(out)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)
        with contextlib.suppress(OSError):
            os.unlink(self.path)

    def __enter__(self) -> StagedBatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
