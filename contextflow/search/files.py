"""The index's files as its last commit left them: recorded in `state.json`, checked on each read.

A truncated term dictionary answers "no match" without an error, so a reader compares the files with
the names and sizes the last commit recorded. Only the files of the segments `meta.json` names are
recorded and checked: merges go on in the background after a commit (`disk.DiskIndex.commit`), writing
new segments, rewriting `meta.json` and deleting the segments they merged. A merged-away segment is
not checked (its files go), a segment a merge wrote is checked from the next commit on, and `meta.json`
itself must parse (it is replaced atomically, so a torn one is damage).
"""

from __future__ import annotations

import os
from pathlib import Path

from contextflow.core import jsonio

META = "meta.json"


class FilesDamaged(RuntimeError):
    """The index's files are not those its last commit wrote."""


def _live(folder: Path) -> dict[str, str] | None:
    """Each segment `meta.json` names (its id as in file names) -> the opstamp of its deletes file ('' for
    none); None when there is no `meta.json`. Raises FilesDamaged when it does not parse."""
    try:
        raw = (folder / META).read_bytes()
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
    The folder is scanned before `meta.json` is read, so a merge ending meanwhile only retires segments."""
    found = _scan(folder)
    live = _live(folder)
    if live is None or (recorded and not live):  # (a merge writes its segment before it retires the others)
        if recorded:
            raise FilesDamaged(f"{folder / META} is gone or names none of the segments its last commit wrote")
        return
    for name, size in recorded.items():
        if _of(live, name) and found.get(name) != size:
            raise FilesDamaged(f"the files of {folder} are not those its last commit wrote ({name})")
