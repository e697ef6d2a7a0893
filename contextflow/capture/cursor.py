"""Per-transcript cursors: read only the bytes a client appended since the last hook call.

A cursor is `{"offset", "ino", "check"}`: the byte offset read up to (always just after a
`\\n`), the file's inode, and a hash of the (up to) 4 KB before the offset. When the file was
replaced, truncated or rewritten before the offset, the cursor no longer matches and reading
restarts from 0 (identical turns are then recognised by their id and not stored twice).
A call reads at most MAX_READ bytes; a line longer than MAX_LINE is skipped and counted.
Only a regular file is read: a FIFO, a device or a folder (also behind a link) is refused at once
(`NotRegular`), never waited on.
"""

from __future__ import annotations

import hashlib
import os
from typing import IO, Any

from contextflow.core import regular
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

    def __init__(self, lines: list[bytes], cursor: dict[str, Any], skipped: int, restarted: bool, start: int) -> None:
        self.lines, self.cursor, self.skipped, self.restarted, self.start = lines, cursor, skipped, restarted, start


def _check(fd: int, offset: int) -> str:
    start = max(0, offset - CHECK_BYTES)
    return hashlib.sha256(os.pread(fd, offset - start, start)).hexdigest()[:32]


def read_new(path: str, cursor: dict[str, Any] | None, max_read: int = MAX_READ) -> Chunk:
    cursor = cursor or {}
    from contextflow.core.lines import complete_lines  # the one reader of growing JSONL, without the log module

    with open_regular(path) as handle:
        fd = handle.fileno()
        info = os.fstat(fd)
        offset = cursor.get("offset", 0)
        offset = offset if isinstance(offset, int) and offset >= 0 else 0
        valid = (
            0 < offset <= info.st_size
            and cursor.get("ino") == info.st_ino
            and cursor.get("check") == _check(fd, offset)
        )
        restarted = offset > 0 and not valid
        if not valid:
            offset = 0
        skipping = bool(cursor.get("skipping")) and valid
        read = complete_lines(fd, offset, most=max_read, block=max_read)
        skipped = 0
        if not read.lines:  # no complete line yet; or one line longer than a whole read: skip it
            if read.unfinished < max_read:
                return Chunk([], cursor if valid else _cursor(fd, 0, info.st_ino), 0, restarted, offset)
            new = offset + read.unfinished
            cursor = {**_cursor(fd, new, info.st_ino), "skipping": True}
            return Chunk([], cursor, 0 if skipping else 1, restarted, offset)
        lines = read.lines
        if skipping:  # the rest of a line skipped in the last read
            lines = lines[1:]
        kept = []
        for line in lines:
            if len(line) > MAX_LINE:
                skipped += 1
            elif line.strip():
                kept.append(line)
        return Chunk(kept, _cursor(fd, read.end, info.st_ino), skipped, restarted, offset)


def _cursor(fd: int, offset: int, ino: int) -> dict[str, Any]:
    return {"offset": offset, "ino": ino, "check": _check(fd, offset)}
