"""Timeline reads from the derived tables on disk (`timeline/projection.py`): a call picks the threads it shows
from the per-thread summaries and folds, with the view's own fold, only what it shows of them (their
creation and updates, newest thought and position move, the thoughts those name, the threads and
thoughts of a breadcrumb trail), whatever the store's size.

The one way `timeline/core.py` reads the timeline. While the tables do not hold every log (a fresh
machine, a build under way, another process holding their lock) the same queries read them as built
with the rows of the logs' remaining bytes (`core/rest.py`); over its bound, the logs' newest bytes
only, and `partial` says how far the build is. A store scoped to some projects reads their rows only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from contextflow.core import jsonio
from contextflow.core.events import Event
from contextflow.core.fields import conform
from contextflow.core.tables import stamp_of
from contextflow.timeline.fields import POSITION, THOUGHT, THOUGHT_UPDATE, THREAD, THREAD_UPDATE
from contextflow.timeline.view import Thought, Thread, TimelineState, TimelineView

if TYPE_CHECKING:
    from contextflow.app import App
    from contextflow.core.rest import Progress, Reading

_NEWEST = "ORDER BY hlc DESC, w DESC, seq DESC, id DESC LIMIT 1"
_RECENT = "ORDER BY hlc DESC, w DESC, seq DESC, thread DESC LIMIT ?"
CANDIDATES = 6  # ids read for a prefix: `ids._SHOWN` + 1, the most an ambiguity names


class Slice(TimelineState):
    """The timeline state of the rows read so far: a thread or a thought asked for is read on the first
    ask (its creation and updates), a thread shown with `show` also its newest thought and position."""

    def __init__(self, app: App, read: Reading) -> None:
        super().__init__()
        self._app, self._read, self._view = app, read, TimelineView()
        self._folded: set[str] = set()
        self._asked: set[tuple[str, str]] = set()
        self.counts: dict[str, int] = {}  # thread id -> its thoughts, of the threads shown

    def query(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self._read.query(sql, params)

    def _fold(self, where: str, params: Sequence[Any]) -> None:
        schema = self._app.store.fields
        for event_id, hlc, writer, seq, kind, blob in self.query(
            f"SELECT id, hlc, w, seq, kind, data FROM timeline_events WHERE {where}", params
        ):
            if event_id in self._folded:
                continue
            self._folded.add(event_id)
            data, _ = conform(schema, kind, jsonio.loads(blob))  # a file like any other: checked as read
            self._view.apply(self, Event(event_id, writer, seq, stamp_of(hlc), kind, data))

    def thread(self, thread_id: str) -> Thread | None:
        if ("thread", thread_id) not in self._asked:
            self._asked.add(("thread", thread_id))
            self._fold(f"thread = ? AND kind IN ('{THREAD}', '{THREAD_UPDATE}')", (thread_id,))
        return super().thread(thread_id)

    def thought(self, thought_id: str) -> Thought | None:
        if ("thought", thought_id) not in self._asked:
            self._asked.add(("thought", thought_id))
            self._fold(f"thought = ? AND kind IN ('{THOUGHT}', '{THOUGHT_UPDATE}')", (thought_id,))
        return super().thought(thought_id)

    def show(self, thread_id: str) -> Thread | None:
        """The thread, read with its newest thought, its newest position move, the thoughts those name and
        its thought count (what `core.whereabouts` shows of it)."""
        return self.show_all([thread_id])[0]

    def show_all(self, thread_ids: list[str]) -> list[Thread | None]:
        """`show` of each thread, in four queries whatever their number."""
        wanted = [thread_id for thread_id in thread_ids if ("thread", thread_id) not in self._asked]
        self._asked.update(("thread", thread_id) for thread_id in wanted)
        ids, listed = jsonio.dumps(wanted).decode(), jsonio.dumps(thread_ids).decode()
        self._fold(f"thread IN (SELECT value FROM json_each(?)) AND kind IN ('{THREAD}', '{THREAD_UPDATE}')", (ids,))
        each = "SELECT id FROM timeline_events WHERE thread = t.value AND kind = ?"
        newest = f"SELECT ({each} {_NEWEST}) FROM json_each(?) t"
        self._fold(f"id IN ({newest} UNION ALL {newest})", (THOUGHT, listed, POSITION, listed))
        named = [last[-1][1] for thread_id in thread_ids if (last := self.thread_thoughts.get(thread_id))]
        named += [here[1] for thread_id in thread_ids if (here := self.positions.get(thread_id)) is not None]
        self.thoughts_named(named)
        count = (
            "SELECT thread, count(*) FROM timeline_events WHERE thread IN (SELECT value FROM json_each(?)) "
            "AND kind = ? GROUP BY thread"
        )
        counted = dict(self.query(count, (listed, THOUGHT)))
        self.counts.update((thread_id, int(counted.get(thread_id, 0))) for thread_id in thread_ids)
        return [super(Slice, self).thread(thread_id) for thread_id in thread_ids]

    def thoughts_named(self, thought_ids: list[str]) -> None:
        """Read these thoughts (`thought`), in one query."""
        wanted = list(dict.fromkeys(t for t in thought_ids if ("thought", t) not in self._asked))
        self._asked.update(("thought", thought_id) for thought_id in wanted)
        if wanted:
            where = "thought IN (SELECT value FROM json_each(?)) AND kind IN"
            self._fold(f"{where} ('{THOUGHT}', '{THOUGHT_UPDATE}')", (jsonio.dumps(wanted).decode(),))

    def whole(self, thread_id: str) -> None:
        """Read every event of the thread, its thoughts' updates and the tangents started from them."""
        ids = f"SELECT thought FROM timeline_events WHERE thread = ? AND kind = '{THOUGHT}'"
        self._fold("thread = ?", (thread_id,))
        self._fold(f"thought IN ({ids}) AND kind IN ('{THOUGHT_UPDATE}', '{THREAD}')", (thread_id,))
        self._asked.add(("thread", thread_id))
        self._asked.update(("thought", thought_id) for _, thought_id in self.thread_thoughts.get(thread_id, []))

    def candidates(self, what: str, wanted: str) -> list[str]:
        """The first few ids at or after `wanted` in order, of created threads or thoughts (what
        `ids.resolve_prefix` needs to find the one `wanted` starts)."""
        if what == "thread":
            sql = "SELECT thread FROM timeline_threads WHERE created = 1 AND thread >= ? ORDER BY thread LIMIT ?"
        else:
            sql = (
                "SELECT thought FROM timeline_events WHERE thought >= ? AND kind = ? AND thread IS NOT NULL "
                "ORDER BY thought LIMIT ?"
            )
        params = (wanted, CANDIDATES) if what == "thread" else (wanted, THOUGHT, CANDIDATES)
        return [found for (found,) in self.query(sql, params)]


@contextlib.contextmanager
def reading(app: App) -> Iterator[Slice]:
    """The timeline as a call reads it: a slice over the tables (checked against the logs once, at the
    start), or over them as built and the logs' remaining bytes (`ondisk.reading`)."""
    from contextflow import ondisk
    from contextflow.timeline.projection import PROJECTION

    yield Slice(app, ondisk.reading(app, PROJECTION))


def partial(app: App) -> Progress | None:
    """How far the build is, when the last `reading` read only the logs' newest bytes beside the tables."""
    from contextflow import ondisk
    from contextflow.timeline.projection import PROJECTION

    return ondisk.partial(app, PROJECTION)


def recent(found: Slice, status: str | None, count: int) -> list[Thread]:
    """Up to `count` threads (of `status`, else all), most recently active first, each read for showing."""
    where, params = ("created = 1 AND status = ?", [status]) if status else ("created = 1", [])
    sql = f"SELECT thread FROM timeline_threads WHERE {where} {_RECENT}"
    shown = found.show_all([thread_id for (thread_id,) in found.query(sql, [*params, max(count, 0)])])
    return [thread for thread in shown if thread is not None]


def thread_count(found: Slice, status: str) -> int:
    sql = "SELECT count(*) FROM timeline_threads WHERE created = 1 AND status = ?"
    return int(found.query(sql, (status,))[0][0])
