"""The index's files as its last commit left them: recorded in `state.json`, checked on each read.

A truncated term dictionary answers "no match" without an error, so a reader compares the files with
the names and sizes the last commit recorded. Only the files of the segments `meta.json` names are
recorded and checked: merges go on in the background after a commit (`disk.DiskIndex.commit`), writing
new segments, rewriting `meta.json` and deleting the segments they merged. A merged-away segment is
not checked (its files go), a segment a merge wrote is checked from the next commit on, and `meta.json`
itself must parse (it is replaced atomically, so a torn one is damage).

Before anything opens a file there (tantivy, in Rust, or this module), `sound` checks with `lstat` that the
folder is a real folder and each file tantivy opens is a regular file: a FIFO would block an open forever.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from contextflow.core import jsonio

META = "meta.json"
MAX_META_BYTES = 16 << 20  # an index's meta file names its segments: kilobytes, never this much
OPENED = (META, ".managed.json", ".tantivy-meta.lock", ".tantivy-writer.lock")  # beside the segments' files


class FilesDamaged(RuntimeError):
    """The index's files are not those its last commit wrote."""


def _live(folder: Path) -> dict[str, str] | None:
    """Each segment `meta.json` names (its id as in file names) -> the opstamp of its deletes file ('' for
    none); None when there is no `meta.json`. Raises FilesDamaged when it does not parse."""
    try:
        raw = _read_regular(folder / META)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise FilesDamaged(f"{folder / META} does not read: {exc}") from exc
    try:
        segments = jsonio.loads(raw)["segments"]
        return {
            str(s["segment_id"]).replace("-", ""): str((s.get("deletes") or {}).get("opstamp", "")) for s in segments
        }
    except (jsonio.DecodeError, KeyError, TypeError, AttributeError) as exc:
        raise FilesDamaged(f"{folder / META} is not an index's meta file") from exc


def _read_regular(path: Path) -> bytes:
    """The bytes of a regular file of at most MAX_META_BYTES, opened without following a link or waiting on a
    FIFO (OSError else)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as file:
            raw = file.read(MAX_META_BYTES + 1)
        if len(raw) > MAX_META_BYTES:
            raise OSError(f"{path} is over {MAX_META_BYTES} bytes")
        return raw
    finally:
        os.close(fd)


_KINDS = (
    (stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"),
)  # fmt: skip


def kind(mode: int) -> str:
    """What a file system entry is, in words (for a message)."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "an unknown kind of file"


def _mode(path: Path) -> int | None:
    """`path`'s mode by `lstat` (None when it is not there); FilesDamaged when it does not read."""
    try:
        return os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise FilesDamaged(f"{path} does not read: {exc}") from exc


def sound(folder: Path) -> None:
    """Raise FilesDamaged unless `folder` (when there) is a real folder and each file tantivy opens in it
    (`OPENED`, the files of the segments `meta.json` names) is a regular file where it is there. Only
    `lstat` is used (and `meta.json` opened non-blocking): nothing is followed or waited on."""
    _look(folder)


def _look(folder: Path) -> tuple[dict[str, int], dict[str, str] | None] | None:
    """One look at `folder`, as `sound` checks it: its regular files with their sizes, and the segments
    `meta.json` names (`_live`); None when the folder is not there. The folder is scanned before `meta.json`
    is read, so a merge ending meanwhile only retires segments."""
    mode = _mode(folder)
    if mode is None:
        return None
    if not stat.S_ISDIR(mode):
        raise FilesDamaged(f"{folder} is {kind(mode)}, not a folder")
    sizes: dict[str, int] = {}
    others: dict[str, int] = {}  # what is there but not a regular file -> its mode
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    found = entry.stat(follow_symlinks=False)
                except FileNotFoundError:  # (a merge's clean-up deleted it meanwhile)
                    continue
                if stat.S_ISREG(found.st_mode):
                    sizes[entry.name] = found.st_size
                else:
                    others[entry.name] = found.st_mode
    except OSError as exc:
        raise FilesDamaged(f"{folder} does not read: {exc}") from exc
    for name in OPENED:
        if name in others:
            raise FilesDamaged(f"{folder / name} is {kind(others[name])}, not a regular file")
    live = _live(folder)
    for name, mode in others.items():
        if _of(live or {}, name):
            raise FilesDamaged(f"{folder / name} is {kind(mode)}, not a regular file")
    return sizes, live


def _scan(folder: Path) -> dict[str, int]:
    """The folder's files and sizes; a file deleted while it is scanned (a merge's clean-up) is left out."""
    found: dict[str, int] = {}
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    if entry.is_file(follow_symlinks=False):
                        found[entry.name] = entry.stat(follow_symlinks=False).st_size
                except FileNotFoundError:
                    continue
    except OSError:
        return {}
    return found


def _of(live: dict[str, str], name: str) -> bool:
    """Whether file `name` belongs to a live segment (a deletes file: the current one only)."""
    parts = name.split(".")
    if parts[0] not in live:
        return False
    return len(parts) != 3 or parts[2] != "del" or parts[1] == live[parts[0]]


def committed(folder: Path) -> dict[str, int]:
    """The files of the segments the last commit names, with their sizes (to record in `state.json`).
    `meta.json` is read before the folder is scanned, so a merge ending meanwhile adds nothing half written."""
    try:
        live = _live(folder) or {}
    except FilesDamaged:
        return {}
    return {name: size for name, size in _scan(folder).items() if _of(live, name)}


def check(folder: Path, recorded: dict[str, int]) -> None:
    """Raise FilesDamaged when a recorded file of a segment still live is gone or has another size.
    The folder is scanned before `meta.json` is read, so a merge ending meanwhile only retires segments.
    A folder that is not `sound` is damaged too."""
    found, live = _look(folder) or ({}, None)
    if live is None or (recorded and not live):  # (a merge writes its segment before it retires the others)
        if recorded:
            raise FilesDamaged(f"{folder / META} is gone or names none of the segments its last commit wrote")
        return
    for name, size in recorded.items():
        if _of(live, name) and found.get(name) != size:
            raise FilesDamaged(f"the files of {folder} are not those its last commit wrote ({name})")
