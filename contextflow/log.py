"""Log I/O: the only module that reads or writes the store's log files.

On-disk contract:

- The store is a folder. Writer W appends only to `events.<W>.jsonl` in it; nothing else
  ever writes that file, so a sync tool never sees two machines change one file.
- Appends hold W's machine-local lock (`filelock`), then write each batch of lines with a
  single `os.write` on an `O_APPEND|O_NOFOLLOW` descriptor. Files are created 0600; a store
  folder contextflow creates is 0700.
- A last line without its `\\n` (a crash mid-write) is copied to `quarantine/` and cut off
  before the next append, so the log ends in `\\n` again and nothing is silently dropped.
- Readers take every `events.*.jsonl` (sync-conflict copies included) plus any legacy
  ContextFlowMCP files, and read only whole lines. A cursor remembers, per file, how far
  it read and a hash of the bytes just before that point; a later read continues from there
  when the file only grew (also when a sync tool replaced it with a longer copy), and
  reports a reset otherwise.
- Compaction replaces a writer's own log atomically (temp file, fsync, rename, folder fsync),
  under that writer's lock; readers elsewhere see a reset and refold. Sync-conflict copies are
  removed only by `remove_conflict_copy`, after the caller verified their events are kept.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from contextflow.errors import StoreError

LOG_PREFIX = "events."
LOG_SUFFIX = ".jsonl"
QUARANTINE_DIR = "quarantine"
TAIL_WINDOW = 4096
READ_CHUNK = 8 * 1024 * 1024
LOCK_TIMEOUT_S = 10.0
_LOG_NAME = re.compile(r"^events\.(?P<writer>[A-Za-z0-9_.-]+?)(?P<conflict>\.sync-conflict-[^/]*)?\.jsonl$")


def log_path(folder: Path, writer: str) -> Path:
    return folder / f"{LOG_PREFIX}{writer}{LOG_SUFFIX}"


def parse_log_name(name: str) -> tuple[str, bool] | None:
    """(writer, is_conflict_copy) for a log file name, or None when it is not a log."""
    match = _LOG_NAME.match(name)
    if not match:
        return None
    return match["writer"], match["conflict"] is not None


def list_segments(folder: Path, legacy_files: tuple[Path, ...] = ()) -> list[Path]:
    """Every log file to read, in a stable order."""
    found: list[Path] = []
    try:
        with os.scandir(folder) as entries:
            found = [Path(e.path) for e in entries if parse_log_name(e.name) and e.is_file(follow_symlinks=False)]
    except FileNotFoundError:
        pass
    found.sort()
    return [*found, *(p for p in legacy_files if p.is_file())]


@dataclass(frozen=True, slots=True)
class Cursor:
    """How far one file has been read, and what it looked like then."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    offset: int
    lines: int
    tail: bytes


@dataclass(frozen=True, slots=True)
class Chunk:
    lines: list[tuple[int, bytes]]  # (line number, line without newline)
    cursor: Cursor
    reset: bool  # the file no longer continues what the old cursor read


def _tail_hash(fd: int, offset: int) -> bytes:
    start = max(0, offset - TAIL_WINDOW)
    return hashlib.blake2b(os.pread(fd, offset - start, start), digest_size=16).digest()


def _open_read(path: Path) -> int:
    return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)


def unchanged(path: Path, cursor: Cursor | None) -> bool:
    """True when the file's signature still matches the cursor (one stat, no read)."""
    if cursor is None:
        return False
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) == (
        cursor.dev,
        cursor.ino,
        cursor.size,
        cursor.mtime_ns,
    )


def read_new(path: Path, cursor: Cursor | None) -> Chunk:
    """Whole lines added since `cursor` (all lines when it is None or no longer valid)."""
    fd = _open_read(path)
    try:
        st = os.fstat(fd)
        reset = False
        start, line_no = 0, 0
        if cursor is not None:
            continues = st.st_size >= cursor.offset and _tail_hash(fd, cursor.offset) == cursor.tail
            if continues:
                start, line_no = cursor.offset, cursor.lines
            else:
                reset = True
        lines: list[tuple[int, bytes]] = []
        offset = start
        pending = b""
        while True:
            block = os.pread(fd, READ_CHUNK, offset + len(pending))
            if not block:
                break
            data = pending + block
            cut = data.rfind(b"\n")
            if cut < 0:
                pending = data
                continue
            for raw in data[:cut].split(b"\n"):
                line_no += 1
                if raw.strip():
                    lines.append((line_no, raw))
            offset += cut + 1
            pending = data[cut + 1 :]
        cursor = Cursor(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, offset, line_no, _tail_hash(fd, offset))
        return Chunk(lines, cursor, reset)
    finally:
        os.close(fd)


def ensure_folder(folder: Path) -> None:
    if folder.is_dir():
        return
    try:
        folder.mkdir(parents=True, mode=0o700)
        os.chmod(folder, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise StoreError(f"cannot create the store folder {folder}: {exc.strerror}") from None


class LogWriter:
    """Appends whole lines to one writer's log under that writer's machine-local lock."""

    def __init__(self, folder: Path, writer: str, lock_file: Path, fsync: bool = False) -> None:
        self.folder = folder
        self.path = log_path(folder, writer)
        self.fsync = fsync
        lock_file.parent.mkdir(parents=True, exist_ok=True)
        self._lock = FileLock(lock_file, timeout=LOCK_TIMEOUT_S)

    def locked(self) -> FileLock:
        """The writer lock; hold it across read-own-log, stamp, append."""
        return self._lock

    def append(self, data: bytes) -> int:
        """Append `data` (whole lines) in one write; return the file size before it. Caller holds the lock."""
        ensure_folder(self.folder)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise StoreError(_explain(exc, self.path)) from None
        try:
            try:
                before = self._repair_tail(fd)
            except OSError as exc:  # no room (or no right) to quarantine a torn tail: the log stays as it was
                raise StoreError(_explain(exc, self.path)) from None
            try:
                written = os.write(fd, data)
                if written != len(data):
                    raise OSError(errno.ENOSPC, "short write")
                if self.fsync:
                    os.fsync(fd)
            except OSError as exc:
                os.ftruncate(fd, before)  # leave no torn line behind
                raise StoreError(_explain(exc, self.path)) from None
            return before
        finally:
            os.close(fd)

    def _repair_tail(self, fd: int) -> int:
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return size
        cut = _last_newline(fd, size) + 1
        fragment = os.pread(fd, size - cut, cut)
        self._quarantine(fragment)
        os.ftruncate(fd, cut)
        return cut

    def _quarantine(self, fragment: bytes) -> Path:
        target_dir = self.folder / QUARANTINE_DIR
        target_dir.mkdir(mode=0o700, exist_ok=True)
        target = target_dir / f"{self.path.name}.{time.time_ns()}.{os.getpid()}.frag"
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            if os.write(fd, fragment) != len(fragment):
                raise OSError(errno.ENOSPC, "short write")
            os.fsync(fd)
        except OSError:
            target.unlink(missing_ok=True)  # no half copy: the fragment stays in the log until it fits
            raise
        finally:
            os.close(fd)
        return target


def signature(path: Path) -> tuple[int, int, int, int] | None:
    """(device, inode, size, mtime_ns) of a file, or None when it does not exist."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def fsync_folder(folder: Path) -> None:
    """Make a rename or unlink in `folder` durable (a no-op where folders cannot be fsynced)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def remove_stale_temps(path: Path) -> None:
    """Delete `.<name>.<pid>.*.tmp` files beside `path` left by a process of this machine that died
    mid-rewrite (killed before it could clean up). Temp files of live processes stay."""
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


def replace_log(path: Path, data: bytes, expected: tuple[int, int, int, int] | None) -> None:
    """Atomically replace a writer's log with `data`: temp file, fsync, rename, folder fsync.

    The caller holds that writer's lock. `expected` is the signature the caller read; when the
    file changed since (a sync tool replaced it), nothing is written and StoreError says so.
    """
    remove_stale_temps(path)
    temp = path.with_name(f".{path.name}.{os.getpid()}.{time.time_ns()}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        if signature(path) != expected:
            raise StoreError(f"{path} changed while it was being rewritten; nothing was changed, run it again")
        os.replace(temp, path)
    except OSError as exc:
        raise StoreError(f"cannot rewrite {path}: {exc.strerror or exc}. Nothing already stored was changed.") from None
    finally:
        temp.unlink(missing_ok=True)
    fsync_folder(path.parent)


def read_whole(path: Path) -> tuple[bytes, list[tuple[int, bytes]], bytes]:
    """A log's bytes, its whole lines (numbered; blank ones left out) and a torn last line's bytes."""
    fd = _open_read(path)
    try:
        size = os.fstat(fd).st_size
        data = os.pread(fd, size, 0)
    finally:
        os.close(fd)
    cut = data.rfind(b"\n") + 1
    lines = [(n, raw) for n, raw in enumerate(data[:cut].split(b"\n")[:-1], start=1) if raw.strip()]
    return data, lines, data[cut:]


def remove_conflict_copy(path: Path) -> None:
    """Delete a `*.sync-conflict-*` log copy whose events the caller verified are kept elsewhere."""
    parsed = parse_log_name(path.name)
    if parsed is None or not parsed[1]:
        raise StoreError(f"{path} is not a sync-conflict copy of a log; refusing to remove it")
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"cannot remove {path}: {exc.strerror}") from None
    fsync_folder(path.parent)


_HLC_FIELD = re.compile(rb'"hlc":(\d+)')


def last_stamp(path: Path) -> int | None:
    """The clock stamp of a log's last whole line (its newest event), read from its tail only."""
    try:
        fd = _open_read(path)
    except OSError:
        return None
    try:
        end = _last_newline(fd, os.fstat(fd).st_size)
        if end < 0:
            return None
        start = _last_newline(fd, end) + 1
        head = os.pread(fd, min(end - start, 256), start)  # "hlc" comes before the payload
    finally:
        os.close(fd)
    found = _HLC_FIELD.search(head)
    return int(found[1]) if found else None


def _last_newline(fd: int, size: int) -> int:
    """Offset of the last b'\\n' before `size`, or -1."""
    end = size
    while end > 0:
        start = max(0, end - 65536)
        block = os.pread(fd, end - start, start)
        found = block.rfind(b"\n")
        if found >= 0:
            return start + found
        end = start
    return -1


def _explain(exc: OSError, path: Path) -> str:
    reasons = {
        errno.ENOSPC: "the disk is full",
        errno.EDQUOT: "the disk quota is exhausted",
        errno.EROFS: "the file system is read-only",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.ELOOP: "it is a symbolic link, which contextflow never writes through",
    }
    reason = reasons.get(exc.errno or 0, exc.strerror or str(exc))
    return f"cannot append to {path}: {reason}. Nothing already stored was changed."


def iter_quarantine(folder: Path) -> Iterator[Path]:
    target = folder / QUARANTINE_DIR
    if target.is_dir():
        yield from sorted(target.iterdir())


__all__ = [
    "Chunk",
    "Cursor",
    "LogWriter",
    "Timeout",
    "ensure_folder",
    "iter_quarantine",
    "last_stamp",
    "list_segments",
    "log_path",
    "parse_log_name",
    "read_new",
    "read_whole",
    "remove_conflict_copy",
    "remove_stale_temps",
    "replace_log",
    "signature",
    "unchanged",
]
