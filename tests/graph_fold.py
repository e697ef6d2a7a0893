"""The oracle of the graph's reads: the pure fold (contextflow/graph/view.py) read whole, in memory, with the
query language evaluated over sets. Every read at run time queries the graph's tables (graph/stored.py);
tests/test_graph_stored.py compares them with this."""

from __future__ import annotations

import heapq
import operator
import sqlite3
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from contextflow.app import App
from contextflow.core.clock import COUNTER_BITS, stamp_iso
from contextflow.core.events import Event
from contextflow.core.ids import resolve_prefix
from contextflow.graph.projection import SCHEMA, TABLE_NAMES, apply
from contextflow.graph.query import All, And, Expr, Leaf, Not, Or
from contextflow.graph.view import Edge, EdgeKey, GraphState, GraphView, Node, SavedView, Step, is_on
from tests.folding import view_of


@dataclass
class FoldedGraph(GraphState):
    """`GraphState` with the reads `StoredGraph` answers from its tables."""

    @property
    def live(self) -> set[str]:
        return {i for i, node in self.nodes.items() if node.exists and not node.deleted}

    @property
    def by_type(self) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for node in self.nodes.values():
            if node.type:
                found.setdefault(node.type, set()).add(node.id)
        return found

    @property
    def by_tag(self) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for node_id in self.tag_marks:
            for name in self.tags_of(node_id):
                found.setdefault(name, set()).add(node_id)
        return found

    @property
    def out(self) -> dict[str, set[tuple[str, str]]]:
        found: dict[str, set[tuple[str, str]]] = {}
        for source, target, kind in self.edges:
            found.setdefault(source, set()).add((target, kind))
        return found

    @property
    def inc(self) -> dict[str, set[tuple[str, str]]]:
        found: dict[str, set[tuple[str, str]]] = {}
        for source, target, kind in self.edges:
            found.setdefault(target, set()).add((source, kind))
        return found

    @property
    def origins(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for node in self.nodes.values():
            if node.origin and node.exists:
                found[node.origin] = min(found.get(node.origin, node.id), node.id)
        return found

    def node(self, node_id: str) -> Node | None:
        return self.nodes[node_id] if node_id in self.live else None

    def tags_of(self, node_id: str) -> set[str]:
        return {name for name, mark in self.tag_marks.get(node_id, {}).items() if mark[0] > mark[1]}

    def _edge(self, key: EdgeKey) -> Edge | None:
        mark = self.edges.get(key)
        if is_on(mark) and key[0] in self.live and key[1] in self.live:
            return Edge(mark[2], key[0], key[1], key[2], stamp_iso(mark[0][0]), mark[3] or {})
        return None

    def edges_out(self, node_id: str) -> list[Edge]:
        found = (self._edge((node_id, to, kind)) for to, kind in self.out.get(node_id, ()))
        return sorted((e for e in found if e), key=lambda e: (e.type, e.target))

    def edges_in(self, node_id: str) -> list[Edge]:
        found = (self._edge((source, node_id, kind)) for source, kind in self.inc.get(node_id, ()))
        return sorted((e for e in found if e), key=lambda e: (e.type, e.source))

    def has_edges(self, node_id: str) -> bool:
        return bool(self.edges_out(node_id) or self.edges_in(node_id))

    def superseded_by(self, node_id: str) -> str | None:
        """The newest live node that SUPERSEDES this one, if any."""
        best: tuple[object, str] | None = None
        for source, kind in self.inc.get(node_id, ()):
            mark = self.edges[(source, node_id, kind)]
            if kind == "SUPERSEDES" and source in self.live and is_on(mark) and (best is None or mark[0] > best[0]):
                best = (mark[0], source)
        return best[1] if best else None

    def walk(
        self, root: str, depth_limit: int, *, forward: bool, backward: bool, types: tuple[str, ...] | None = None
    ) -> list[Step]:
        steps: list[Step] = []
        seen, frontier = {root}, [root]
        for depth in range(1, depth_limit + 1):
            following: list[str] = []
            for current in frontier:
                near = [(e.target, e.type) for e in self.edges_out(current)] if forward else []
                near += [(e.source, e.type) for e in self.edges_in(current)] if backward else []
                for other, edge_type in near:
                    if other not in seen and (types is None or edge_type in types):
                        seen.add(other)
                        following.append(other)
                        steps.append(Step(depth, self.nodes[other], edge_type, current))
            frontier = following
        return steps

    def prefixed(self, prefix: str, count: int) -> list[str]:
        return sorted(i for i in self.live if i.startswith(prefix))[:count]

    def newest(self, ids: Collection[str], count: int) -> list[Node]:
        return heapq.nlargest(count, (self.nodes[i] for i in ids), key=attrgetter("updated_key"))

    def all_edges(self) -> list[Edge]:
        found = (self._edge(key) for key in self.edges)
        return sorted((e for e in found if e), key=lambda e: (e.source, e.target, e.type))

    def saved_views(self) -> list[SavedView]:
        found = (self.saved_view(name) for name in sorted(self.views))
        return [view for view in found if view is not None]

    def saved_view(self, name: str) -> SavedView | None:
        mark = self.views.get(name)
        return SavedView(name, mark[2], mark[3], stamp_iso(mark[0][0])) if is_on(mark) else None

    def matching(self, expr: Expr, now_ms: int) -> set[str]:
        """The query language over sets: the meaning the tables' query (`query.where`) must have."""
        return _Evaluator(self, now_ms).filter(set(self.live), expr)


class FoldedView(GraphView):
    def initial(self) -> FoldedGraph:
        return FoldedGraph()


def fold(app: App) -> FoldedGraph:
    """The whole fold of the graph events `app`'s logs hold, kept for `app`'s store (so it reads new events
    as `app`'s tables do, after those it read before)."""
    return view_of(app.store, FoldedView)


_CMP: dict[str, Callable[[int, int], bool]] = {
    ">": operator.gt,
    "<": operator.lt,
    ">=": operator.ge,
    "<=": operator.le,
    "=": operator.eq,
}
_NUMBERS: dict[str, Callable[[Node], int]] = {
    "tokens": operator.attrgetter("tokens"),
    "created": lambda node: node.created_key[0] >> COUNTER_BITS,
    "updated": lambda node: node.updated_key[0] >> COUNTER_BITS,
}


def _tag_matches(leaf: Leaf, name: str) -> bool:
    if leaf.op == "prefix":
        return name.startswith(leaf.value)
    return name == leaf.value or (leaf.op == "plain" and name.partition(":")[2] == leaf.value)


class _Evaluator:
    def __init__(self, state: FoldedGraph, now_ms: int) -> None:
        self.state = state
        self.now_ms = now_ms

    def leaf(self, ids: set[str], leaf: Leaf) -> set[str]:
        state, nodes = self.state, self.state.nodes
        if leaf.field == "type":
            return {i for i in ids if nodes[i].type == leaf.value}
        if leaf.field == "tag":
            return {i for i in ids if any(_tag_matches(leaf, name) for name in state.tags_of(i))}
        if leaf.field in ("from", "to"):
            node_id = resolve_prefix(leaf.value, state.live, f"node id in {leaf.field}:")
            if leaf.field == "from":
                return ids & {edge.target for edge in state.edges_out(node_id)}
            return ids & {edge.source for edge in state.edges_in(node_id)}
        if leaf.field == "text":
            return {i for i in ids if leaf.value in nodes[i].lower}
        if leaf.field == "has":
            if leaf.value == "summary":
                return {i for i in ids if nodes[i].summary}
            return {i for i in ids if state.has_edges(i)}
        value = _NUMBERS[leaf.field]
        point = self.now_ms - leaf.number if leaf.relative else leaf.number
        if leaf.op == "day":
            return {i for i in ids if point <= value(nodes[i]) < point + 86_400_000}
        compare = _CMP[leaf.op]
        return {i for i in ids if compare(value(nodes[i]), point)}

    def filter(self, ids: set[str], expr: Expr) -> set[str]:
        if isinstance(expr, All):
            return ids
        if isinstance(expr, And):
            return self.filter(self.filter(ids, expr.left), expr.right)
        if isinstance(expr, Or):
            return self.filter(ids, expr.left) | self.filter(ids, expr.right)
        if isinstance(expr, Not):
            return ids - self.filter(ids, expr.inner)
        return self.leaf(ids, expr)


class Scratch:
    """The graph's tables in an SQLite database in memory, filled by the projection's own `apply` from the events
    given to it (`add`), a batch at a time (before a read at the latest): what a `StoredGraph` reads in a test."""

    BATCH = 5000

    def __init__(self) -> None:
        self._db = sqlite3.connect(":memory:", check_same_thread=False)  # (the HTTP bridge's threads: `_lock`)
        for statement in SCHEMA:
            self._db.execute(statement)
        self._pending: list[Event] = []
        self._lock = threading.Lock()

    def add(self, event: Event) -> None:
        with self._lock:
            self._pending.append(event)
            if len(self._pending) >= self.BATCH:
                self._fold()

    def _fold(self) -> None:
        events, self._pending = self._pending, []
        if events:
            with self._db:
                apply(self._db, events)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            self._fold()
            return self._db.execute(sql, params).fetchall()

    def rows(self) -> list[list[tuple[Any, ...]]]:
        """Every table's rows, sorted (equal scratches hold equal rows)."""
        return [sorted(self.query(f"SELECT * FROM {table}")) for table in TABLE_NAMES]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Scratch) and self.rows() == other.rows()

    __hash__ = None  # type: ignore[assignment]


class ScratchView:
    """The graph folded into a `Scratch` (a test's graph built from events directly)."""

    name = "graph"

    def initial(self) -> Scratch:
        return Scratch()

    def apply(self, state: Scratch, event: Event) -> None:
        if event.kind.startswith("graph."):
            state.add(event)


def scratch(app: App) -> Scratch:
    """Every graph event `app`'s logs hold, folded by the projection's `apply` into tables in memory."""
    found: Scratch = view_of(app.store, ScratchView())
    return found


def read_rows(app: App) -> list[list[tuple[Any, ...]]]:
    """Every graph table's rows as a call reads them (`writes.graph`: the tables, or beside the logs' rest), sorted."""
    from contextflow.graph.writes import graph

    read = graph(app).read
    return [sorted(read.query(f"SELECT * FROM {table}")) for table in TABLE_NAMES]
