"""Write-once, content-addressed blob files beside the logs (e.g. full conversation transcripts).

On-disk contract:

- A blob is `<store>/blobs/<sha[:2]>/<sha>`, `sha` the SHA-256 (hex) of its bytes: machines that
  write the same bytes write the same file, so a sync tool never sees two versions of one blob.
- Blobs are never changed or removed. A write goes to a temporary file in the same folder
  (created 0600, folders 0700), is flushed, then renamed into place.
- A reader checks the hash, so a half-synced or damaged copy is reported, never returned. It
  opens without blocking and reads only a regular file of at most MAX_BLOB_BYTES, in
  READ_CHUNK pieces: a planted FIFO, device or huge (sparse) file is refused before any read.
- `blobs/` and its sub-folders are never followed when they are symbolic links (a synced
  link could point anywhere): reads and writes through one are refused with a clear error.

This and contextflow/core/log.py are the only modules that touch files in the store.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from contextflow.core import hashing, regexes
from contextflow.core.errors import NotFoundError, StoreError
from contextflow.core.fsutil import atomic_write
from contextflow.core.log import ensure_folder

BLOB_DIR = "blobs"
MAX_BLOB_BYTES = 64 * 1024 * 1024  # a 16M-character transcript in UTF-8 (conversations.core.MAX_TRANSCRIPT_CHARS)
READ_CHUNK = 1024 * 1024
_SHA = regexes.compile(r"^[0-9a-f]{64}$")


def blob_path(folder: Path, sha: str) -> Path:
    if not _SHA.match(sha):
        raise NotFoundError(f"{sha!r} is not a blob reference: expected 64 lowercase hex characters (a SHA-256)")
    return folder / BLOB_DIR / sha[:2] / sha


def _real_folders(path: Path, create: bool) -> None:
    """Check (and with `create` make) `blobs/` and its sub-folder: real folders, never links."""
    for part in (path.parent.parent, path.parent):
        if create:
            with contextlib.suppress(FileExistsError):
                part.mkdir(mode=0o700)
        try:
            mode = os.lstat(part).st_mode
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(mode):
            raise StoreError(
                f"{part} is a symbolic link or not a folder; contextflow never follows one there. "
                "Remove it (blobs are written again by the machine that has them)"
            )


def write_blob(folder: Path, data: bytes, *, fsync: bool = True) -> str:
    """Store `data` once and return its SHA-256; bytes already stored are not written again.
    Flushed before the rename by default: the event that refers to a blob is appended after this returns."""
    if len(data) > MAX_BLOB_BYTES:
        raise StoreError(f"a blob of {len(data)} bytes is over the limit of {MAX_BLOB_BYTES}; store less")
    sha = hashing.sha256(data).hexdigest()
    target = blob_path(folder, sha)
    _real_folders(target, create=False)
    if target.is_file() and not target.is_symlink() and target.stat().st_size == len(data):
        return sha
    ensure_folder(folder)
    try:
        _real_folders(target, create=True)
        atomic_write(target, data, fsync=fsync)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise StoreError(f"cannot write blob {target}: {reason}. Nothing already stored was changed.") from None
    return sha


def read_blob(folder: Path, sha: str) -> bytes:
    """The bytes of a blob, checked against its hash: only a regular file, at most MAX_BLOB_BYTES."""
    path = blob_path(folder, sha)
    _real_folders(path, create=False)
    try:  # O_NONBLOCK: opening a planted FIFO must not wait for a writer that never comes
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise NotFoundError(
            f"blob {sha[:12]}... is not in {folder / BLOB_DIR} yet; if another machine wrote it, "
            "wait for the sync to bring it over and ask again"
        ) from None
    except OSError as exc:
        raise StoreError(f"cannot read blob {path}: {exc.strerror or exc}") from None
    try:
        return _read_checked(fd, path, sha)
    finally:
        os.close(fd)


def _read_checked(fd: int, path: Path, sha: str) -> bytes:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise StoreError(f"blob {path} is not a regular file; contextflow never reads one. Remove it")
    if st.st_size > MAX_BLOB_BYTES:
        raise StoreError(
            f"blob {path} is {st.st_size} bytes, over the limit of {MAX_BLOB_BYTES}; contextflow never writes "
            "one that big, so it was planted or damaged: remove it"
        )
    digest = hashing.sha256()
    parts: list[bytes] = []
    total = 0
    try:
        while total <= MAX_BLOB_BYTES and (part := os.read(fd, READ_CHUNK)):
            digest.update(part)
            parts.append(part)
            total += len(part)
    except OSError as exc:
        raise StoreError(f"cannot read blob {path}: {exc.strerror or exc}") from None
    if total > MAX_BLOB_BYTES or digest.hexdigest() != sha:
        raise StoreError(f"blob {path} does not match its hash (damaged or still syncing); ask again after the sync")
    return b"".join(parts)


def bad_blobs(folder: Path, limit: int = 10_000) -> list[tuple[Path, str]]:
    """Blob files a read would refuse (not a regular file, over MAX_BLOB_BYTES), looking at `limit`
    entries at most; nothing is read or followed."""
    found: list[tuple[Path, str]] = []
    root = folder / BLOB_DIR
    try:
        if not stat.S_ISDIR(os.lstat(root).st_mode):
            return [(root, "a symbolic link or not a folder")]
        with os.scandir(root) as listing:
            subs = sorted(listing, key=lambda e: e.name)
        seen = 0
        for sub in subs:
            if not sub.is_dir(follow_symlinks=False):
                found.append((Path(sub.path), "a symbolic link or not a folder"))
                continue
            with os.scandir(sub.path) as entries:
                for entry in entries:
                    seen += 1
                    if seen > limit:
                        return found
                    st = entry.stat(follow_symlinks=False)
                    if not stat.S_ISREG(st.st_mode):
                        found.append((Path(entry.path), "not a regular file"))
                    elif st.st_size > MAX_BLOB_BYTES:
                        found.append((Path(entry.path), f"{st.st_size} bytes, over the {MAX_BLOB_BYTES}-byte limit"))
    except OSError:
        pass
    return found
