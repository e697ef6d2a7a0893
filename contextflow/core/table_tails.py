"""Answering from the logs' tails: while this machine's tables are built in the background, a
short-lived process (the session start) reads the logs' newest events into tables in memory
(`TailTables`) instead of answering from nothing."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from contextflow.core.log import read_tail
from contextflow.core.table_sets import META, TAIL_BUDGET, TAIL_BYTES, WAIT_S, TableSet, readable_events
from contextflow.core.tables import _OPEN, Tables, tables_for

if TYPE_CHECKING:
    from contextflow.core.store import Store


class TailTables(Tables):
    """The tables of the logs' newest events only, in memory, never updated: what a short-lived process
    (the session start) answers from while this machine's tables are built in the background, instead of
    nothing. About `limit` bytes of each log are read, then more of the log whose tail reaches back least
    (`_tails`); only events at or after `horizon` (the oldest stamp every log's tail reaches back to) are
    kept, so what is there is every event since then."""

    def __init__(
        self, store: Store, sets: Sequence[TableSet], limit: int = TAIL_BYTES, budget: int = TAIL_BUDGET
    ) -> None:
        super().__init__(store, sets, Path(":memory:"))
        db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        db.executescript(META)
        for table_set in self.sets.values():
            for statement in table_set.schema:
                db.execute(statement)
        self._db = db
        tails, self.horizon = _tails(self._paths(), store, limit, budget)
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

    def serves(self, names: Iterable[str], wait: float = WAIT_S) -> bool:
        """The logs' newest events answer (their reader says the answer is partial: `adapters/hooks.py`)."""
        return True


class _Tail(NamedTuple):
    asked: int  # bytes
    lines: list[tuple[int, bytes]]
    first: int | None  # the stamp of its first event when the log holds more before it, else None


def _tails(paths: Iterable[Path], store: Store, limit: int, budget: int) -> tuple[list[list[tuple[int, bytes]]], int]:
    """Each log's newest lines, and the horizon (the newest first stamp of a log not read whole): about
    `limit` bytes of each, then the log that sets the horizon (a busy writer's, whose bytes span the least
    time) read twice as far back, and again, while all of them together stay within `budget` bytes."""

    def read(path: Path, asked: int) -> _Tail:
        lines = read_tail(path, asked)
        first = next((event.hlc for event in readable_events(lines[:50], store)), None)
        return _Tail(asked, lines, first if path.stat().st_size > asked else None)

    found: dict[Path, _Tail] = {}
    for path in paths:
        with contextlib.suppress(OSError):
            found[path] = read(path, limit)
    while cut := [(tail.first, path) for path, tail in found.items() if tail.first is not None]:
        _, narrowest = max(cut)
        asked = found[narrowest].asked
        if sum(tail.asked for tail in found.values()) + asked > budget:
            break
        try:
            found[narrowest] = read(narrowest, 2 * asked)
        except OSError:
            break
    horizon = max((tail.first for tail in found.values() if tail.first is not None), default=0)
    return [tail.lines for tail in found.values()], horizon


def answer_from_tail(
    store: Store, sets: Callable[[], Sequence[TableSet]], needed: Iterable[str], limit: int = TAIL_BYTES
) -> bool:
    """While this machine's tables are built in the background or cannot be brought up to date (the caller
    found them so), have this process's reads of `store` answered from the logs' newest events
    (`TailTables` of the formats `needed`; the others read as empty)."""
    tables = tables_for(store, sets)
    tables.close()
    wanted = set(needed)
    _OPEN[store] = TailTables(store, [s for s in sets() if s.name in wanted], limit)
    return True
