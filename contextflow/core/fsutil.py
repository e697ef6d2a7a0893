"""Small file-system helpers every module shares: one atomic write, one file signature."""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path

from contextflow.core.regular import open_regular as open_regular  # the one reader of regular files
from contextflow.core.regular import read_regular as read_regular

Signature = tuple[int, int, int, int]  # (device, inode, size, mtime_ns)


def signature(path: Path | str) -> Signature | None:
    """(device, inode, size, mtime_ns) of a file (never following a symlink), or None when absent."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def fsync_folder(folder: Path) -> None:
    """Make a rename or unlink in `folder` durable (a no-op where folders cannot be fsynced)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def atomic_write(
    path: Path,
    data: bytes | Callable[[int], None],
    *,
    mode: int = 0o600,
    fsync: bool = True,
    check: Callable[[], None] | None = None,
) -> None:
    """The one way contextflow replaces a whole file: a temp file beside `path` (O_EXCL|O_NOFOLLOW),
    written fully (`data` may be a function writing to the open fd), optionally fsynced, `check()`
    (raising there leaves the target untouched), renamed over `path`, the folder fsynced. On any
    failure the temp file is removed and the target left as it was; OSError propagates."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.{time.time_ns()}.tmp")  # remove_stale_temps knows its owner
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
        try:
            if callable(data):
                data(fd)
            else:
                write_all(fd, data)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        if check is not None:
            check()
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
    if fsync:
        fsync_folder(path.parent)


def remove_stale_temps(path: Path) -> None:
    """Delete `.<name>.<pid>.*.tmp` files beside `path` left by a process of this machine that died
    mid-write (killed before it could clean up). Temp files of live processes stay."""
    for temp in path.parent.glob(f".{path.name}.*.tmp"):
        parts = temp.name[len(path.name) + 2 :].split(".")
        if not parts[0].isdigit() or int(parts[0]) == os.getpid():
            continue
        try:
            os.kill(int(parts[0]), 0)
        except ProcessLookupError:
            temp.unlink(missing_ok=True)
        except OSError:
            continue


def remove_derived(path: Path) -> None:
    """Delete machine-local derived state at `path`, whatever it has become (a file, a link, a folder where a
    file belongs): the logs rebuild it. A link is removed, never followed."""
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            import shutil  # (only here: its import costs every hook ~6 ms)

            shutil.rmtree(path)
        else:
            path.unlink()
    except FileNotFoundError:
        pass


def derived_folder(path: Path) -> Path:
    """`path` as a private folder of machine-local derived state: created (0700), or, where a file or link
    stands in its place, that removed first (the logs rebuild what the folder held); one this user may not
    read, write or enter is made 0700 again."""
    if os.path.lexists(path) and not stat.S_ISDIR(os.lstat(path).st_mode):
        path.unlink()
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if stat.S_IMODE(os.lstat(path).st_mode) & 0o700 != 0o700:
        os.chmod(path, 0o700)
    return path
