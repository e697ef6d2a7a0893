"""Lines another machine (or a hostile process) could put in the synced store folder."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import orjson

from contextflow.core.clock import COUNTER_BITS
from contextflow.core.ids import new_id


def now_stamp(offset_ms: int = 0) -> int:
    return ((time.time_ns() // 1_000_000) + offset_ms) << COUNTER_BITS


def line(writer: str = "evil", seq: int = 1, hlc: int | None = None, kind: str = "note", **fields: Any) -> bytes:
    data = {"project": "shared", "session_id": "s1", "agent": "other", "text": f"from {writer} #{seq}"}
    data.update(fields.pop("data", {}))
    record = {
        "v": 1,
        "id": fields.pop("id", new_id()),
        "w": writer,
        "seq": seq,
        "hlc": now_stamp() if hlc is None else hlc,
        "kind": kind,
        "data": data,
        **fields,
    }
    return _dumps(record)


def _dumps(record: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(record) + b"\n"
    except TypeError:  # integers orjson refuses (past 64 bits): write them as the JSON text they are
        import json

        return json.dumps(record, separators=(",", ":")).encode() + b"\n"


def plant(store: Path, name: str, *lines: bytes) -> Path:
    store.mkdir(parents=True, exist_ok=True)
    path = store / name
    with open(path, "ab") as handle:
        handle.write(b"".join(lines))
    return path


def replace_file(path: Path, data: bytes, keep_mtime: bool = False) -> None:
    """What a sync tool does: write a temp file, rename it over the log (a new inode)."""
    old = path.stat()
    temp = path.with_name(f".{path.name}.synctmp")
    temp.write_bytes(data)
    if keep_mtime:
        os.utime(temp, ns=(old.st_atime_ns, old.st_mtime_ns))
    os.replace(temp, path)
