"""The rest: a table set's rows for the logs' bytes its tables do not hold yet (past each log's cursor of
its format), in a small in-memory database with the set's own schema.

While a build runs or another process holds the write lock, a reader queries the tables as built and
the rest together: a complete answer that costs O(the remaining bytes), not a fold of every log. The
cursors are read before the caller queries the tables, so a chunk committed meanwhile is in both (the
caller drops a row it finds twice by its event id), never in neither. Clock bounds are not applied to
the rest (as `ondisk._partial`: a bound within the unread bytes is rare).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextflow.core.fsutil import signature
from contextflow.core.log import Cursor, read_new
from contextflow.core.table_sets import TableSet, readable_events
from contextflow.core.table_updates import READ_BYTES

if TYPE_CHECKING:
    from contextflow.core.tables import Tables

REST_BYTES = 32 * 1024 * 1024  # read at most this much per call; more (a new machine): the answer says it is partial


def remaining(tables: Tables, table_set: TableSet, cursors: dict[str, Cursor] | None = None) -> int:
    """Bytes of the logs past the cursors of `table_set`'s format (one stat per log)."""
    cursors = tables.cursors(table_set.name) if cursors is None else cursors
    total = 0
    for path in tables.paths():
        found = signature(path)
        cursor = cursors.get(str(path))
        total += max(0, (found[2] if found else 0) - (cursor.offset if cursor else 0))
    return total


def rest(tables: Tables, table_set: TableSet, most: int | None = None) -> sqlite3.Connection | None:
    """An in-memory database holding `table_set`'s rows of every log's events past its format's cursor,
    or None when more than `most` bytes (REST_BYTES by default) remain: the caller then says its answer
    is partial and how far the build is. The caller closes it."""
    if remaining(tables, table_set) > (REST_BYTES if most is None else most):
        return None
    found = rows_past(tables, table_set, tables.cursors(table_set.name))
    db = sqlite3.connect(":memory:", isolation_level=None)
    try:
        for statement in table_set.schema:
            db.execute(statement)
        db.execute("BEGIN")
        for table, rows in found.items():
            db.executemany(table_set.inserts[table], rows)
        db.execute("COMMIT")
    except BaseException:
        db.close()
        raise
    return db


def rows_past(tables: Tables, table_set: TableSet, cursors: dict[str, Cursor]) -> dict[str, list[tuple[Any, ...]]]:
    """`table_set`'s rows (per table, each once) of every log's events past its cursor in `cursors`."""
    found: dict[str, dict[tuple[Any, ...], None]] = {}
    for path in tables.paths():
        for rows, _ in chunks_past(tables, table_set, path, cursors.get(str(path))):
            for table, values in rows.items():
                found.setdefault(table, {}).update(dict.fromkeys(values))
    return {table: list(rows) for table, rows in found.items()}


def chunks_past(
    tables: Tables, table_set: TableSet, path: Path, cursor: Cursor | None, size: int = READ_BYTES
) -> Iterator[tuple[dict[str, list[tuple[Any, ...]]], Cursor]]:
    """`table_set`'s rows of the log at `path` past `cursor`, about `size` bytes at a time, each with the
    cursor after it (a log that is gone gives none)."""
    while True:
        start = cursor.offset if cursor else 0
        try:
            chunk = read_new(path, cursor, size)
        except FileNotFoundError:
            return
        found: dict[str, dict[tuple[Any, ...], None]] = {}
        for event in readable_events(chunk.lines, tables.store):
            for table, values in table_set.rows(event):
                found.setdefault(table, {})[values] = None
        cursor = chunk.cursor
        yield {table: list(rows) for table, rows in found.items()}, cursor
        if chunk.cursor.offset - start < size:
            return
