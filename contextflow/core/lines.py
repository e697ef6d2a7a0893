"""The one reader of a growing JSONL file (the store's logs, the clients' transcripts): the complete
lines from an offset. Stdlib only, apart from `core/log.py`: a hook reading a transcript pays for
this module's import, not the log module's."""

from __future__ import annotations

import os
from typing import NamedTuple

READ_CHUNK = 8 * 1024 * 1024


class Lines(NamedTuple):
    lines: list[bytes]  # every complete line read (blank ones too), without its newline
    end: int  # the offset just after the last newline read
    unfinished: int  # bytes read after it: a line not ended yet (or cut by `most`)


def complete_lines(
    fd: int, start: int, *, limit: int | None = None, most: int | None = None, block: int = READ_CHUNK
) -> Lines:
    """The one reader of a growing JSONL file: the complete lines from `start`, read `block` bytes at a
    time to the end of the file; with `limit`, stop once that many bytes of whole lines were read; with
    `most`, once that many bytes were read at all (a line longer than that is left unfinished)."""
    lines: list[bytes] = []
    offset, pending = start, b""
    while True:
        chunk = os.pread(fd, block, offset + len(pending))
        if not chunk:
            break
        data = pending + chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            pending = data
        else:
            lines += data[:cut].split(b"\n")
            offset += cut + 1
            pending = data[cut + 1 :]
            if limit is not None and offset - start >= limit:
                break
        if most is not None and offset + len(pending) - start >= most:
            break
    return Lines(lines, offset, len(pending))
