"""Log I/O: the only module that reads or writes the store's log files.

On-disk contract:

- The store is a folder; writer W appends only to its `events.<W>.jsonl`, so a sync tool never
  sees two machines change one file. Files are created 0600; a store folder made here is 0700.
- An append holds W's machine-local lock (`core/lock.py`, flock) and writes on an `O_APPEND|O_NOFOLLOW`
  descriptor; several lines are framed as a batch (`batches.py`) that readers apply whole or not at
  all. A last line without its `\\n` (a crash mid-write) is copied to `quarantine/` and cut off before
  the next append, never silently dropped; a batch cut short is closed by an abort line (its lines stay).
- Readers take every `events.*.jsonl` (sync-conflict copies included) plus any legacy
  ContextFlowMCP files (a context file and its `.sessions/*.jsonl`, `legacy.py`), and read whole
  lines only. A read position keeps, per file, the offset read, a hash of the bytes just before it and a
  chain of 32 KiB block hashes over the whole prefix. A later read continues when the file only
  grew (also when a sync tool replaced it with a longer copy: a new inode's whole prefix is
  checked against the chain) and reports a reset otherwise.
- Compaction replaces a writer's own log atomically (temp file, fsync, rename, folder fsync)
  under its lock; readers elsewhere see a reset and refold. Sync-conflict copies are removed
  only by `remove_conflict_copy`, after the caller verified their events are kept.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from contextflow.core import batches, hashing, legacy, regexes
from contextflow.core.clock import MAX_HLC
from contextflow.core.errors import StoreError
from contextflow.core.fsutil import atomic_write, fsync_folder, remove_stale_temps, signature
from contextflow.core.lines import complete_lines

if TYPE_CHECKING:
    from contextflow.core.lock import WriterLock

LOG_PREFIX = "events."
LOG_SUFFIX = ".jsonl"
QUARANTINE_DIR = "quarantine"
TAIL_WINDOW = 4096
PREFIX_BLOCK = 32 * 1024
WRITE_BYTES = 4 * 1024 * 1024  # a batch is written in pieces of about this size
LOCK_TIMEOUT_S = 10.0
_LOG_NAME = regexes.compile(r"^events\.(?P<writer>[A-Za-z0-9_.-]+?)(?P<conflict>\.sync-conflict-[^/]*)?\.jsonl$")


def log_path(folder: Path, writer: str) -> Path:
    return folder / f"{LOG_PREFIX}{writer}{LOG_SUFFIX}"


def parse_log_name(name: str) -> tuple[str, bool] | None:
    """(writer, is_conflict_copy) for a log file name, or None when it is not a log."""
    match = _LOG_NAME.match(name)
    return (match["writer"], match["conflict"] is not None) if match else None


def list_segments(folder: Path, legacy_files: tuple[Path, ...] = ()) -> list[Path]:
    """Every log file to read, in a stable order: the store's logs, then each legacy source's files."""
    found: list[Path] = []
    try:
        with os.scandir(folder) as entries:
            found = [Path(e.path) for e in entries if parse_log_name(e.name) and e.is_file(follow_symlinks=False)]
    except FileNotFoundError:
        pass
    except NotADirectoryError:
        raise StoreError(f"the store {folder} is not a folder; point CONTEXTFLOW_STORE at a folder") from None
    except OSError as exc:
        raise StoreError(
            f"cannot read the store folder {folder}: {(exc.strerror or str(exc)).lower()}; "
            "give your user read and write access to it (chmod 700)"
        ) from None
    found.sort()
    return [*found, *legacy.files(legacy_files)]


def unread_logs(folder: Path) -> list[tuple[Path, str]]:
    """Entries named like logs that `list_segments` leaves out, each with why: a symbolic link (never
    followed in the store: it could point anywhere) or not a regular file."""
    found: list[tuple[Path, str]] = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if parse_log_name(entry.name) and not entry.is_file(follow_symlinks=False):
                    why = "a symbolic link" if entry.is_symlink() else "not a regular file"
                    found.append((Path(entry.path), why))
    except OSError:
        return []
    return sorted(found)


class Position(NamedTuple):
    """How far one file has been read, and what it looked like then."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    offset: int
    lines: int
    tail: bytes
    blocks: bytes = b""  # hash chain over the whole PREFIX_BLOCKs before offset
    partial: bytes = b""  # hash of the bytes after them, up to offset

    @property
    def signature(self) -> tuple[int, int, int, int]:
        """The file's signature when read (fsutil.signature's form)."""
        return (self.dev, self.ino, self.size, self.mtime_ns)


class Chunk(NamedTuple):
    lines: list[tuple[int, bytes]]  # (line number, line without newline); only lines of complete batches
    position: Position
    reset: bool  # the file no longer continues what the old read position read
    held: int = 0  # events of a batch whose commit is not on disk yet: not returned, the read position waits before it
    held_at: int | None = None  # that batch's begin line's offset (the read position's offset)
    torn: int = 0  # lines of torn batches dropped (batches.py)


def _tail_hash(fd: int, offset: int) -> bytes:
    start = max(0, offset - TAIL_WINDOW)
    return hashing.blake2b(os.pread(fd, offset - start, start), digest_size=16).digest()


def _prefix_hash(fd: int, blocks: bytes, start: int, end: int) -> tuple[bytes, bytes]:
    """Extend the block chain `blocks` (covering [0, start), start a multiple of PREFIX_BLOCK) to
    `end`: (chain over the whole blocks below end, hash of the rest). Independent of how the
    prefix was read in pieces, so a process can compare a replaced file with what it read."""
    position = start
    while end - position >= PREFIX_BLOCK:
        block = os.pread(fd, PREFIX_BLOCK, position)
        blocks = hashing.blake2b(blocks + block, digest_size=16).digest()
        position += PREFIX_BLOCK
    partial = hashing.blake2b(os.pread(fd, end - position, position), digest_size=16).digest()
    return blocks, partial


def _open_read(path: Path) -> int:
    return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)


def unchanged(path: Path, position: Position | None) -> bool:
    """True when the file's signature still matches the read position (one stat, no read)."""
    return position is not None and signature(path) == position.signature


def read_new(path: Path, position: Position | None, limit: int | None = None) -> Chunk:
    """Whole lines added since `position` (all lines when it is None or no longer valid); with `limit`,
    stop once about that many bytes were read (the read position then ends before the file does)."""
    fd = _open_read(path)
    try:
        st = os.fstat(fd)
        reset, start, line_no = False, 0, 0
        if position is not None:
            continues = st.st_size >= position.offset and _tail_hash(fd, position.offset) == position.tail
            if continues and (st.st_dev, st.st_ino) != (position.dev, position.ino):  # replaced: check all we read
                continues = _prefix_hash(fd, b"", 0, position.offset) == (position.blocks, position.partial)
            reset = not continues
            if continues:
                start, line_no = position.offset, position.lines
        read = complete_lines(fd, start, limit=limit)
        walk = batches.Lines(fd)  # only lines of complete batches; the read position waits before a held one
        lines, offset, line_no = walk.numbered(read.lines, start, line_no, read.end)
        while walk.held_at is None and walk.skip_until > offset:  # a torn batch spans past what was read
            more = complete_lines(fd, offset, limit=walk.skip_until - offset)
            if not more.lines:
                break
            found, offset, line_no = walk.numbered(more.lines, offset, line_no, more.end)
            lines += found
        known = position.blocks if start and position is not None else b""  # the chain below start's block
        blocks, partial = _prefix_hash(fd, known, start - start % PREFIX_BLOCK, offset)
        tail = _tail_hash(fd, offset)
        position = Position(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, offset, line_no, tail, blocks, partial)
        return Chunk(lines, position, reset, walk.held, walk.held_at, walk.torn)
    finally:
        os.close(fd)


def end_position(path: Path) -> Position | None:
    """A read position at the end of a log (taken under its writer's lock, right after a write): `read_new` from it
    returns what is appended later while the file only grows. It keeps no prefix chain, so a copy that
    replaced the file never continues it (the reader is told to reset). None when the log is not there."""
    try:
        fd = _open_read(path)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        tail = _tail_hash(fd, st.st_size)
    finally:
        os.close(fd)
    return Position(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_size, 0, tail)


def ensure_folder(folder: Path) -> None:
    if folder.is_dir():
        return
    try:
        folder.mkdir(parents=True, mode=0o700)
        os.chmod(folder, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise StoreError(
            f"cannot create the store folder {folder}: {exc.strerror}; "
            "point CONTEXTFLOW_STORE at a folder you can write"
        ) from None


def same_but_case(folder: Path, own: str) -> None:
    """Refuse to write `own` (a log's name) when the store holds a log whose writer id differs only in case:
    on a case-insensitive volume (macOS, Windows, most sync folders' peers) the two are one file, and two
    writers would interleave their lines in it. Other logs stay readable; only this write is refused."""
    mine = parse_log_name(own)
    if mine is None:
        return
    try:
        with os.scandir(folder) as entries:
            names = [entry.name for entry in entries]
    except OSError:
        return  # the write itself reports an unreadable folder
    for name in names:
        found = parse_log_name(name)
        if found is not None and not found[1] and found[0] != mine[0] and found[0].casefold() == mine[0].casefold():
            raise StoreError(
                f"the writer id {mine[0]!r} differs only in case from {found[0]!r}, whose log is in the store: on a "
                f"case-insensitive volume they are one file. Set CONTEXTFLOW_WRITER={found[0]} if this is that "
                "machine, else another id; nothing was written"
            )


def _as_left(status: os.stat_result) -> tuple[int, ...]:
    """A log file as a write left it: any later write, truncation or replacement changes one of these."""
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)


class LogWriter:
    """Appends whole lines to one writer's log under that writer's machine-local lock."""

    def __init__(self, folder: Path, writer: str, lock_file: Path, fsync: bool = False) -> None:
        self.folder = folder
        self.writer = writer
        self.path = log_path(folder, writer)
        self.fsync = fsync
        self.lock_file = lock_file
        lock_file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._lock: WriterLock | None = None  # made by the first write, not by readers
        self._case_checked = False
        # the end this process's last write left (`end`), while the file is as that write left it
        self._left: tuple[tuple[int, ...], batches.End] | None = None
        self._written: tuple[int, ...] | None = None  # the file as the last `_write` left it

    def locked(self) -> WriterLock:
        """The writer lock; hold it across read-own-log, stamp, append. A lock file that is a
        symbolic link is refused: taking the lock would create or truncate what it points at."""
        if os.path.islink(self.lock_file):
            raise StoreError(
                f"{self.lock_file} is a symbolic link; contextflow never follows one there. "
                "Remove it (it is machine-local state and is recreated)"
            )
        if self._lock is None:
            from contextflow.core.lock import WriterLock

            self._lock = WriterLock(self.lock_file, LOCK_TIMEOUT_S)
        return self._lock

    def end(self) -> batches.End:
        """What a write needs of this log's end (the caller holds the lock): its last lines only
        (`batches.log_end`), or, when they do not say, the whole log read once (nothing kept)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)  # (never waits)
            try:
                status = os.fstat(fd)
                if not stat.S_ISREG(status.st_mode):
                    raise OSError(errno.EINVAL, "not a regular file")
                if self._left is not None and self._left[0] == _as_left(status):
                    return self._left[1]  # nobody wrote since this process did: its end is known, nothing read
                found = batches.log_end(fd, self.writer)
            finally:
                os.close(fd)
            return found if found is not None else _end_by_reading(self.path, self.writer)
        except FileNotFoundError:
            return batches.End(0, 0, None, 0)
        except OSError as exc:  # (a folder or a link in its place: the append would fail alike)
            raise StoreError(_explain(exc, self.path)) from None

    def append_lines(
        self,
        lines: list[bytes],
        end: batches.End | None = None,
        after: batches.Stated | None = None,
        *,
        framed: bool = False,
    ) -> int:
        """Append whole lines in one write, framed as a batch when there are several (or `framed`), so readers
        apply all of them or none; its begin line states the log's end before it (`end`), its commit line
        `after` it (`batches.Stated`: what the next write reads back). `end.held_at`: a batch a kill cut
        short at the end of this log (the caller holds the lock), closed first."""
        from contextflow.core.ids import new_id

        if len(lines) < 2 and not framed:
            return self._remember(self._write([b"".join(lines)], end), end, after)
        before = batches.Stated(end.seq, end.newest) if end is not None else None
        begin, commit = batches.markers(lines, new_id(), before, after)
        return self._remember(self._write([begin, *lines, commit], end), end, after)

    def _remember(self, written: int, end: batches.End | None, after: batches.Stated | None) -> int:
        """Keep the end a write left (what `batches.log_end` would read back), for the next write of this
        process while the file stays as it left it; a write of unknown lines, or one after a batch a kill cut
        short (whose lines count as read back), keeps nothing."""
        self._left = None
        if end is not None and end.held_at is None and after is not None and self._written is not None:
            self._left = (self._written, batches.End(after.seq, after.newest, None, 0))
        return written

    def append(self, data: bytes) -> int:
        """Append `data` (whole lines) in one write; return the file size before it. Caller holds the lock."""
        return self._write([data], None)

    def append_framed(
        self, events: int, size: int, pieces: Iterable[bytes], end: batches.End, after: batches.Stated
    ) -> int:
        """Append `events` lines of `size` bytes in all, given in pieces (a staged batch: `staged.py`), framed
        as one batch. Caller holds the lock. Pieces that do not add up to `size` are cut off again."""
        from contextflow.core.ids import new_id

        begin, commit = batches.frame(events, size, new_id(), batches.Stated(end.seq, end.newest), after)
        return self._remember(self._write(_counted(begin, pieces, size, commit), end), end, after)

    def _write(self, pieces: Iterable[bytes], end: batches.End | None) -> int:
        self._left = self._written = None
        ensure_folder(self.folder)
        if not self._case_checked:
            same_but_case(self.folder, self.path.name)
            self._case_checked = True
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                before = self._repair_tail(fd, end)  # failing to quarantine leaves the log as it was
                try:
                    for group in _groups(pieces):
                        if os.write(fd, group) != len(group):
                            raise OSError(errno.ENOSPC, "short write")
                    if self.fsync:
                        os.fsync(fd)
                except OSError:
                    os.ftruncate(fd, before)  # leave no torn line behind
                    raise
                self._written = _as_left(os.fstat(fd))
                return before
            finally:
                os.close(fd)
        except OSError as exc:
            raise StoreError(_explain(exc, self.path)) from None

    def _repair_tail(self, fd: int, end: batches.End | None = None) -> int:
        """Before an append (under the lock): a torn last line is moved to quarantine and cut off; a batch a
        kill cut short (`end.held_at`, its begin line) is closed with an abort line, so its complete lines
        stay in the log, never applied, and what is written next is read (batches.py). Returns where the
        append starts."""
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            cut = _last_newline(fd, size) + 1
            self._quarantine(os.pread(fd, size - cut, cut))
            os.ftruncate(fd, cut)
            size = cut
        held_at = end.held_at if end is not None else None
        if end is None or held_at is None or held_at >= size:
            return size
        batch_id = ""  # (UNKNOWN: an abort with no id closes whatever batch is open)
        if held_at >= 0:
            raw = os.pread(fd, batches.COMMIT_LOOKUP, held_at)
            begin = batches.parse(raw[: raw.find(b"\n")]) if b"\n" in raw else None
            if begin is None or begin.kind != "begin":
                return size
            batch_id = begin.id
        closing = batches.abort(batch_id, batches.Stated(end.seq, end.newest))
        if os.write(fd, closing) != len(closing):
            os.ftruncate(fd, size)
            raise OSError(errno.ENOSPC, "short write")
        return size + len(closing)

    def _quarantine(self, fragment: bytes, what: str = "") -> None:
        target_dir = self.folder / QUARANTINE_DIR
        with contextlib.suppress(FileExistsError):
            target_dir.mkdir(mode=0o700)
        try:  # the folder itself, never a symbolic link to somewhere else
            dir_fd = os.open(target_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise StoreError(
                    f"{target_dir} is a symbolic link or not a folder; contextflow never writes through one. "
                    "Remove it so the torn line at the end of your log can be quarantined "
                    "(it stays in the log until then)"
                ) from None
            raise
        name = f"{self.path.name}.{time.time_ns()}.{os.getpid()}{what}.frag"
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dir_fd)
            try:
                if os.write(fd, fragment) != len(fragment):
                    raise OSError(errno.ENOSPC, "short write")
                os.fsync(fd)
            except OSError:
                os.unlink(name, dir_fd=dir_fd)  # no half copy: the fragment stays in the log until it fits
                raise
            finally:
                os.close(fd)
        finally:
            os.close(dir_fd)


def _end_by_reading(path: Path, writer: str) -> batches.End:
    """The end of the log at `path` read whole, a chunk at a time, each line decoded for its seq and stamp
    only (when its last bytes do not say: `batches.log_end`)."""
    from contextflow.core.events import BadLine, decode

    seq, newest, read, position = 0, 0, 0, None
    while True:
        try:
            chunk = read_new(path, position, 8 * 1024 * 1024)
        except FileNotFoundError:
            return batches.End(seq, newest, None, read)
        start = position.offset if position is not None else 0
        read += chunk.position.offset - start
        for _, raw in chunk.lines:
            try:
                event = decode(raw)
            except BadLine:
                continue
            newest = max(newest, event.hlc)
            if event.writer == writer:
                seq = max(seq, event.seq)
        if chunk.held_at is not None or chunk.position.offset == start:
            return batches.End(seq, newest, chunk.held_at, read)
        position = chunk.position


def _counted(begin: bytes, pieces: Iterable[bytes], size: int, commit: bytes) -> Iterator[bytes]:
    yield begin
    written = 0
    for piece in pieces:
        written += len(piece)
        yield piece
    if written != size:
        raise OSError(errno.EIO, f"a staged batch of {written} bytes announced {size}")
    yield commit


def _groups(pieces: Iterable[bytes], size: int = WRITE_BYTES) -> Iterator[bytes]:
    """The pieces joined into writes of about `size` bytes (a large batch is never one buffer)."""
    group: list[bytes] = []
    held = 0
    for piece in pieces:
        group.append(piece)
        held += len(piece)
        if held >= size:
            yield b"".join(group)
            group, held = [], 0
    if group:
        yield b"".join(group)


def replace_log(path: Path, data: bytes, expected: tuple[int, int, int, int] | None) -> None:
    """Atomically replace a writer's log with `data` (the caller holds its lock). When its signature
    is no longer `expected` (a sync tool replaced it), nothing is written and StoreError says so."""
    remove_stale_temps(path)

    def unchanged_since() -> None:
        if signature(path) != expected:
            raise StoreError(f"{path} changed while it was being rewritten; nothing was changed, run it again")

    try:
        atomic_write(path, data, check=unchanged_since)
    except OSError as exc:
        raise StoreError(f"cannot rewrite {path}: {exc.strerror or exc}. Nothing already stored was changed.") from None


def read_whole(path: Path) -> tuple[bytes, list[tuple[int, bytes]], bytes]:
    """A log's bytes, its whole lines (numbered; blank ones left out; batches as `read_new` returns them)
    and the bytes after them: a torn last line, or a batch held back at the end with what follows it."""
    fd = _open_read(path)
    try:
        data = os.pread(fd, os.fstat(fd).st_size, 0)
        cut = data.rfind(b"\n") + 1
        walk = batches.Lines(fd)
        lines = walk.numbered(data[: cut - 1].split(b"\n"), 0, 0, cut)[0] if cut else []
    finally:
        os.close(fd)
    return data, lines, data[cut if walk.held_at is None else walk.held_at :]


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


def read_tail(path: Path, limit: int) -> list[tuple[int, bytes]]:
    """The whole lines of about the last `limit` bytes of a log (from the first line that starts there;
    numbered from that line; markers left out, batches as `read_new` walks them), for an answer from the
    newest events while the rest is not read yet. A batch begun before that point is not known held: its
    lines are returned as any others."""
    fd = _open_read(path)
    try:
        size = os.fstat(fd).st_size
        start = 0
        if size > limit:
            head = os.pread(fd, min(limit, MAX_TAIL_LINE), size - limit)
            cut = head.find(b"\n")
            if cut < 0:
                return []  # one line longer than the tail: nothing whole to read in it
            start = size - limit + cut + 1
        read = complete_lines(fd, start)
        return batches.Lines(fd).numbered(read.lines, start, 0, read.end)[0]
    finally:
        os.close(fd)


MAX_TAIL_LINE = 4 * 1024 * 1024  # events.MAX_LINE_BYTES: a line starts within this many bytes of any offset
_HLC_FIELD = regexes.compile(rb'"hlc":(\d+)')


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
    if not found or len(found[1]) > 20:
        return None
    stamp = int(found[1])
    return stamp if stamp <= MAX_HLC else None  # an out-of-range stamp is a bad line, not a clock


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
    if target.is_dir() and not target.is_symlink():
        yield from sorted(target.iterdir())


__all__ = [
    "Chunk",
    "LogWriter",
    "Position",
    "end_position",
    "ensure_folder",
    "fsync_folder",
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
    "unread_logs",
]
