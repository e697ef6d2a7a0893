"""Per-transcript read positions: read only the bytes a client appended since the last hook call.

A read position is `{"offset", "ino", "check"}`: the byte offset read up to (always just after a
`\\n`), the file's inode, and a hash of the (up to) 4 KB before the offset. When the file was
replaced, truncated or rewritten before the offset, the read position no longer matches and reading
restarts from 0 (identical turns are then recognised by their id and not stored twice).
A call reads at most MAX_READ bytes; a line longer than MAX_LINE is skipped and counted.
Only a regular file is read: a FIFO, a device or a folder (also behind a link) is refused at once
(`NotRegular`), never waited on.
"""

from __future__ import annotations

import os
from typing import IO, Any

from contextflow.core import hashing, regular
from contextflow.core.regular import NotRegular as NotRegular

MAX_READ = 8 << 20
MAX_LINE = 2 << 20
CHECK_BYTES = 4096


def open_regular(path: str) -> IO[bytes]:
    """`path` (a link is followed) opened for reading, only when it is a regular file; never blocks."""
    return os.fdopen(regular.open_regular(path, follow_links=True), "rb")


def read_regular(path: str, limit: int) -> bytes:
    """A small regular file whole (a state file): at most `limit` bytes, else ValueError."""
    return regular.read_regular(path, limit, follow_links=True)


class Chunk:
    """The complete new lines of one read, where the next read starts, and what was skipped.
    `start`: the offset this read began at (0: the first read, or the file was rewritten)."""

    def __init__(self, lines: list[bytes], position: dict[str, Any], skipped: int, restarted: bool, start: int) -> None:
        self.lines, self.position, self.skipped, self.restarted, self.start = lines, position, skipped, restarted, start


def _check(fd: int, offset: int) -> str:
    start = max(0, offset - CHECK_BYTES)
    return hashing.sha256(os.pread(fd, offset - start, start)).hexdigest()[:32]


def read_new(path: str, position: dict[str, Any] | None, max_read: int = MAX_READ) -> Chunk:
    position = position or {}
    from contextflow.core.lines import complete_lines  # the one reader of growing JSONL, without the log module

    with open_regular(path) as handle:
        fd = handle.fileno()
        info = os.fstat(fd)
        offset = position.get("offset", 0)
        offset = offset if isinstance(offset, int) and offset >= 0 else 0
        valid = (
            0 < offset <= info.st_size
            and position.get("ino") == info.st_ino
            and position.get("check") == _check(fd, offset)
        )
        restarted = offset > 0 and not valid
        if not valid:
            offset = 0
        skipping = bool(position.get("skipping")) and valid
        read = complete_lines(fd, offset, most=max_read, block=max_read)
        skipped = 0
        if not read.lines:  # no complete line yet; or one line longer than a whole read: skip it
            if read.unfinished < max_read:
                return Chunk([], position if valid else _position(fd, 0, info.st_ino), 0, restarted, offset)
            new = offset + read.unfinished
            position = {**_position(fd, new, info.st_ino), "skipping": True}
            return Chunk([], position, 0 if skipping else 1, restarted, offset)
        lines = read.lines
        if skipping:  # the rest of a line skipped in the last read
            lines = lines[1:]
        kept = []
        for line in lines:
            if len(line) > MAX_LINE:
                skipped += 1
            elif line.strip():
                kept.append(line)
        return Chunk(kept, _position(fd, read.end, info.st_ino), skipped, restarted, offset)


def _position(fd: int, offset: int, ino: int) -> dict[str, Any]:
    return {"offset": offset, "ino": ino, "check": _check(fd, offset)}
