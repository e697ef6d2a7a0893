"""Reading a regular file only, never blocking: one helper for the store's state files and the hooks'
read positions (stdlib `os` and `stat` only, so a hook pays nothing to import it).

A FIFO, device, socket or folder planted where a file is expected is opened non-blocking and refused
(`NotRegular`), never waited on; a symbolic link is refused too unless the caller follows links (a
client's transcript may be one).
"""

from __future__ import annotations

import errno
import os
import stat


class NotRegular(OSError):
    """The path names a FIFO, a device, a socket or a folder: refused without reading."""


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    return "a folder" if stat.S_ISDIR(mode) else "a device or socket"


def open_regular(path: str | os.PathLike[str], follow_links: bool = False) -> int:
    """A blocking read-only descriptor on `path` when it is a regular file, else NotRegular (or OSError:
    missing, or a symbolic link when `follow_links` is False)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC | (0 if follow_links else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegular(errno.EINVAL, f"{os.fspath(path)} is {_kind(mode)}, not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str | os.PathLike[str], limit: int | None = None, follow_links: bool = False) -> bytes:
    """A regular file's bytes (`open_regular`'s refusals apply); with `limit`, ValueError past that many."""
    fd = open_regular(path, follow_links)
    try:
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read() if limit is None else handle.read(limit + 1)
    finally:
        os.close(fd)
    if limit is not None and len(data) > limit:
        raise ValueError(f"{os.fspath(path)} is over {limit:,} bytes")
    return data
