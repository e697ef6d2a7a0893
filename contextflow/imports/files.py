"""What an import may read: regular files inside the folder it is given, opened without blocking.

The path given is the user's choice: it may be a link, but it must be a regular file or a folder (a
FIFO would block the import, a device never end). Under a folder only what lies inside it is read: a
link whose target is outside (a file or a folder) is refused and named, never followed, and a special
file is refused too. Every file is opened `O_NONBLOCK` and checked to be regular before a byte is read.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from contextflow.core.errors import InputError, NotFoundError
from contextflow.imports.model import SourceError

EXPECTED_KIND = "pass a regular file or a folder"


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def check_given(path: Path) -> None:
    """The import path: a regular file or a folder (a stat, which never blocks), else InputError."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        missing = NotFoundError if isinstance(exc, FileNotFoundError) else InputError  # exit 3: not found
        raise missing(f"cannot read {path}: {(exc.strerror or str(exc)).lower()}; {EXPECTED_KIND}") from None
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise InputError(f"{path} is {_kind(mode)}, which an import never reads; {EXPECTED_KIND}")


def _inside(target: str, root: str) -> bool:
    return target == root or target.startswith(root.rstrip(os.sep) + os.sep)


def refusal(path: Path, root: Path) -> str | None:
    """Why `path` (found under `root`) is not read, or None when it is a regular file inside `root`."""
    real, base = os.path.realpath(path), os.path.realpath(root)
    if not _inside(real, base):
        return f"a link to {real}, outside the folder imported ({base}); only what lies inside it is read"
    try:
        mode = os.stat(real).st_mode
    except OSError as exc:
        return f"cannot be read: {(exc.strerror or str(exc)).lower()}"
    return None if stat.S_ISREG(mode) else f"{_kind(mode)}, which an import never reads"


def walk(root: Path, pattern: str, hidden: bool = True) -> tuple[list[Path], list[SourceError]]:
    """The files under `root` whose name matches `pattern` (hidden folders and files left out unless
    `hidden`), in order, and a SourceError for each one refused (a link out, a special file). Links to
    folders are never descended into; one leading outside is named."""
    found: list[Path] = []
    refused: list[SourceError] = []
    base = os.path.realpath(root)
    for folder, dirs, names in os.walk(root, followlinks=False):
        keep = []
        for name in sorted(dirs):
            if not hidden and name.startswith("."):
                continue
            path = Path(folder, name)
            if path.is_symlink():
                if not _inside(os.path.realpath(path), base):
                    refused.append(SourceError(path, refusal(path, root) or "a link out of the folder"))
                continue  # a link to a folder inside is read where it really is
            keep.append(name)
        dirs[:] = keep
        for name in names:
            if (not hidden and name.startswith(".")) or not fnmatch.fnmatch(name, pattern):
                continue
            path = Path(folder, name)
            why = refusal(path, root)
            if why is None:
                found.append(path)
            else:
                refused.append(SourceError(path, why))
    return sorted(found), refused


@contextmanager
def opened(path: Path) -> Iterator[BinaryIO]:
    """`path` open for reading, never blocking: a FIFO or device in its place is a SourceError."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise SourceError(path, f"cannot be read: {(exc.strerror or str(exc)).lower()}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise SourceError(path, f"{_kind(mode)}, which an import never reads; {EXPECTED_KIND}")
    with os.fdopen(fd, "rb") as handle:
        yield handle


def read(path: Path) -> bytes:
    with opened(path) as handle:
        return handle.read()
