"""Answering from the logs' tails: while this machine's tables are built in the background, a
short-lived process (the session start) reads the logs' newest events into tables in memory
(`TailTables`) instead of answering from nothing."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from contextflow.core.log import read_tail
from contextflow.core.table_sets import META, TAIL_BYTES, WAIT_S, TableSet, readable_events
from contextflow.core.tables import _OPEN, Tables, tables_for

if TYPE_CHECKING:
    from contextflow.core.store import Store


class TailTables(Tables):
    """The tables of the logs' newest events only, in memory, never updated: what a short-lived process
    (the session start) answers from while this machine's tables are built in the background, instead of
    nothing. About `limit` bytes of each log are read; only events at or after `horizon` (the oldest stamp
    every log's tail reaches back to) are kept, so what is there is every event since then."""

    def __init__(self, store: Store, sets: Sequence[TableSet], limit: int = TAIL_BYTES) -> None:
        super().__init__(store, sets, Path(":memory:"))
        db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        db.executescript(META)
        for table_set in self.sets.values():
            for statement in table_set.schema:
                db.execute(statement)
        self._db = db
        tails: list[list[tuple[int, bytes]]] = []
        self.horizon = 0
        for path in self._paths():
            try:
                lines = read_tail(path, limit)
                cut = path.stat().st_size > limit
            except OSError:
                continue
            tails.append(lines)
            first = next((event for event in readable_events(lines[:50], store)), None)
            if cut and first is not None:
                self.horizon = max(self.horizon, first.hlc)
        caps: dict[str, int] = {}
        sets = list(self.sets.values())
        db.execute("BEGIN")
        for lines in tails:
            newer = [event for event in readable_events(lines, store) if event.hlc >= self.horizon]
            self.caught_up += len(newer)
            self._insert(db, newer, sets, caps)
        db.execute("COMMIT")

    def _connect(self) -> sqlite3.Connection:
        assert self._db is not None
        return self._db

    def update(self, wait: float = WAIT_S, *, foreground: bool = False, ahead: bool = True) -> int:
        return 0

    def current(self) -> bool:
        return False


def answer_from_tail(
    store: Store, sets: Callable[[], Sequence[TableSet]], needed: Iterable[str], limit: int = TAIL_BYTES
) -> bool:
    """While this machine's tables are built in the background, have this process's reads of `store`
    answered from the logs' newest events (`TailTables` of the formats `needed`; the others read as
    empty); False when the tables are there to answer."""
    tables = tables_for(store, sets)
    if not tables.building:
        return False
    tables.close()
    wanted = set(needed)
    _OPEN[store] = TailTables(store, [s for s in sets() if s.name in wanted], limit)
    return True
