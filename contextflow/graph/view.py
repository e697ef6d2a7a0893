"""The graph view: a pure fold of `graph.*` events into nodes, edges, tags and saved views.

Every value is kept with the order key (`Event.key`) of the event that set it, and a later
key always wins, so the folded state does not depend on the order events arrive in:
node fields and metadata keys are last-writer-wins per field; a tag or an edge is on when
its latest add is newer than its latest removal; a deleted node stays a tombstone, and its
edges disappear with it at read time. A node's id is the id of its `graph.node` event.
No I/O here.
"""

from __future__ import annotations

import heapq
import sys
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeGuard, TypeVar

from contextflow.core.clock import stamp_iso
from contextflow.core.events import Event, OrderKey
from contextflow.core.fold import overwritten
from contextflow.core.text import estimate_tokens
from contextflow.graph import model

if TYPE_CHECKING:
    from contextflow.graph.query import Expr
    from contextflow.graph.reading import Brief

ZERO: OrderKey = (0, "", 0)


@dataclass
class Node:
    id: str
    exists: bool = False
    deleted: bool = False
    created_key: OrderKey = ZERO
    updated_key: OrderKey = ZERO
    writer: str = ""
    agent: str = ""
    origin: str = ""
    type: str = ""
    content: str = ""
    summary: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    field_keys: dict[str, OrderKey] = field(default_factory=dict)
    tokens: int = 0
    lower: str = ""  # content and summary, lower case, for free-text terms

    @property
    def created_at(self) -> str:
        return stamp_iso(self.created_key[0])

    @property
    def updated_at(self) -> str:
        return stamp_iso(self.updated_key[0])


# A mark is the latest add and latest removal of a tag, edge or saved view, as a plain tuple
# (cheap to keep): (added, removed, *payload). It is on when it was added last.
Mark = tuple[Any, ...]
NO_MARK: Mark = (ZERO, ZERO)


def is_on(mark: Mark | None) -> TypeGuard[Mark]:
    return mark is not None and mark[0] > mark[1]


@dataclass(frozen=True)
class Edge:
    id: str
    source: str
    target: str
    type: str
    created_at: str
    metadata: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "from": self.source,
            "to": self.target,
            "type": self.type,
            "created_at": self.created_at,
            "metadata": self.metadata,
        }


@dataclass(frozen=True)
class SavedView:
    name: str
    query: str
    budget: int
    updated_at: str

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "query": self.query, "budget": self.budget, "updated_at": self.updated_at}


@dataclass(frozen=True)
class Step:
    depth: int
    node: Node
    edge_type: str
    via: str  # the node this one was reached from


EdgeKey = tuple[str, str, str]  # (from, to, type)


@dataclass
class GraphState:
    nodes: dict[str, Node] = field(default_factory=dict)
    live: set[str] = field(default_factory=set)
    by_type: dict[str, set[str]] = field(default_factory=dict)
    by_tag: dict[str, set[str]] = field(default_factory=dict)
    tag_marks: dict[str, dict[str, Mark]] = field(default_factory=dict)  # node -> tag -> (added, removed)
    edges: dict[EdgeKey, Mark] = field(default_factory=dict)  # (added, removed, event id, metadata)
    out: dict[str, set[tuple[str, str]]] = field(default_factory=dict)
    inc: dict[str, set[tuple[str, str]]] = field(default_factory=dict)
    views: dict[str, Mark] = field(default_factory=dict)  # (added, removed, query, budget)
    origins: dict[str, str] = field(default_factory=dict)

    # -- reading -------------------------------------------------------------------------

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
        return any(self._edge((node_id, to, kind)) for to, kind in self.out.get(node_id, ())) or any(
            self._edge((source, node_id, kind)) for source, kind in self.inc.get(node_id, ())
        )

    def edge_live(self, source: str, target: str, kind: str) -> bool:
        return self._edge((source, target, kind)) is not None

    def superseded_by(self, node_id: str) -> str | None:
        """The newest live node that SUPERSEDES this one, if any."""
        best: tuple[OrderKey, str] | None = None
        for source, kind in self.inc.get(node_id, ()):
            if kind != "SUPERSEDES" or source not in self.live:
                continue
            mark = self.edges[(source, node_id, kind)]
            if is_on(mark) and (best is None or mark[0] > best[0]):
                best = (mark[0], source)
        return best[1] if best else None

    def walk(
        self,
        root: str,
        depth_limit: int,
        *,
        forward: bool,
        backward: bool,
        types: tuple[str, ...] | None = None,
    ) -> list[Step]:
        from contextflow.graph.reading import walk

        return walk(self, root, depth_limit, forward=forward, backward=backward, types=types)

    def matching(self, expr: Expr, now_ms: int) -> set[str]:
        from contextflow.graph.query import folded_matching

        return folded_matching(expr, self, now_ms)

    def prefixed(self, prefix: str, count: int) -> list[str]:
        """Up to `count` live ids starting with `prefix`, sorted (for `ids.resolve_prefix`)."""
        return sorted(i for i in self.live if i.startswith(prefix))[:count]

    def many(self, ids: Iterable[str]) -> list[Node]:
        return [self.nodes[i] for i in ids]

    def superseded(self, ids: Iterable[str]) -> set[str]:
        """Those of `ids` a live node SUPERSEDES."""
        return {i for i in ids if i in self.inc and self.superseded_by(i)}

    def briefs(self, ids: Iterable[str]) -> list[Brief]:
        from contextflow.graph.reading import Brief, shortest_text

        return [
            Brief(
                n.id,
                n.type,
                n.tokens,
                n.updated_key,
                model.dedupe_key(n.content),
                n.agent or n.writer,
                shortest_text(n.content, n.summary),
            )
            for n in self.many(ids)
        ]

    def alike(self, node_type: str, content: str) -> list[Node]:
        """The live nodes of this type whose content is `content` but for case, white space and final
        punctuation (`model.dedupe_key`)."""
        key = model.dedupe_key(content)
        found = (self.nodes[i] for i in self.by_type.get(node_type, ()) if i in self.live)
        return [node for node in found if model.dedupe_key(node.content) == key]

    def newest(self, ids: Collection[str], count: int) -> list[Node]:
        """The `count` most recently updated of `ids` (update keys are unique)."""
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


# -- folding ---------------------------------------------------------------------------


def _record(state: GraphState, node_id: str) -> Node:
    node = state.nodes.get(node_id)
    if node is None:
        node = state.nodes[node_id] = Node(node_id)
    return node


def _set_field(state: GraphState, node: Node, name: str, value: Any, key: OrderKey, creating: bool) -> None:
    """Last writer wins per field. Values set by the creating event carry no entry in
    field_keys (its key is `created_key`), which keeps the state small."""
    current = node.field_keys.get(name)
    if current is None:
        current = node.created_key if node.exists and not creating else ZERO
    if key <= current:
        return
    if creating:
        node.field_keys.pop(name, None)
    else:
        node.field_keys[name] = key
    if name.startswith("meta."):
        meta_key = name[5:]
        if value is None:
            node.metadata.pop(meta_key, None)
        else:
            node.metadata[meta_key] = value
        return
    if name == "type":
        if node.type:
            _discard(state.by_type, node.type, node.id)
        state.by_type.setdefault(value, set()).add(node.id)
    setattr(node, name, value or "")
    if name in ("content", "summary"):
        node.tokens = estimate_tokens(node.content)
        node.lower = f"{node.content}\n{node.summary}".lower()


def _discard(index: dict[str, set[str]], name: str, node_id: str) -> None:
    """Remove from an index, dropping emptied entries so equal sets of events give equal states."""
    members = index.get(name)
    if members is not None:
        members.discard(node_id)
        if not members:
            del index[name]


Name = TypeVar("Name", str, EdgeKey)  # a tag or view name, or an edge


def _set_mark(marks: dict[Name, Mark], name: Name, key: OrderKey, adding: bool, payload: tuple[Any, ...] = ()) -> Mark:
    """Record an add (with its payload) or a removal when it is newer than the one kept."""
    old: Mark = marks.get(name, NO_MARK + payload if adding else NO_MARK)
    if adding and key > old[0]:
        new = (key, old[1], *payload)
    elif not adding and key > old[1]:
        new = (old[0], key, *old[2:])
    else:
        return old
    marks[name] = new
    return new


def _edge_mark(state: GraphState, edge: EdgeKey, key: OrderKey, adding: bool, payload: tuple[Any, ...]) -> None:
    _set_mark(state.edges, edge, key, adding, payload)
    state.out.setdefault(edge[0], set()).add((edge[1], edge[2]))
    state.inc.setdefault(edge[1], set()).add((edge[0], edge[2]))


def _tag(state: GraphState, node_id: str, names: object, key: OrderKey, adding: bool) -> None:
    if not isinstance(names, list):
        return
    for name in names:
        if not isinstance(name, str):
            continue
        marks = state.tag_marks.setdefault(node_id, {})  # (a node never tagged has no entry)
        if is_on(_set_mark(marks, name, key, adding)):
            state.by_tag.setdefault(name, set()).add(node_id)
        else:
            _discard(state.by_tag, name, node_id)


def _fields(state: GraphState, node: Node, data: dict[str, Any], key: OrderKey, creating: bool = False) -> None:
    for name in ("type", "content", "summary"):
        if isinstance(data.get(name), str):
            _set_field(state, node, name, data[name], key, creating)
    meta = data.get("metadata")
    if isinstance(meta, dict):
        for meta_key, value in meta.items():
            _set_field(state, node, "meta." + str(meta_key), value, key, creating)
    if key > node.updated_key:
        node.updated_key = key


def _live(state: GraphState, node: Node) -> None:
    if node.exists and not node.deleted:
        state.live.add(node.id)
    else:
        state.live.discard(node.id)


_DROPPABLE = (model.NODE_UPDATE, model.TAG, model.UNTAG, model.EDGE, model.EDGE_DELETE, model.VIEW, model.VIEW_DELETE)


def _writes(event: Event) -> set[tuple[Any, ...]]:
    """The last-writer-wins slots an event sets: node fields, tag/edge/view adds and removals."""
    kind, data = event.kind, event.data
    target = event.id if kind == model.NODE else data.get("node")
    sign = "-" if kind in (model.UNTAG, model.EDGE_DELETE, model.VIEW_DELETE) else "+"
    found: set[tuple[Any, ...]] = set()
    if kind in (model.NODE, model.NODE_UPDATE) and isinstance(target, str):
        found |= {("field", target, name) for name in ("type", "content", "summary") if isinstance(data.get(name), str)}
        meta = data.get("metadata")
        if isinstance(meta, dict):
            found |= {("field", target, "meta." + str(name)) for name in meta}
    if kind in (model.NODE, model.TAG, model.UNTAG) and isinstance(target, str) and isinstance(data.get("tags"), list):
        found |= {("tag" + sign, target, name) for name in data["tags"] if isinstance(name, str)}
    if kind in (model.EDGE, model.EDGE_DELETE):
        ends = (data.get("from"), data.get("to"), data.get("type"))
        if all(isinstance(part, str) for part in ends):
            found.add(("edge" + sign, *ends))
    if kind in (model.VIEW, model.VIEW_DELETE) and isinstance(data.get("name"), str):
        found.add(("view" + sign, data["name"]))
    return found


class GraphView:
    name = "graph"

    def initial(self) -> GraphState:
        return GraphState()

    def unneeded(self, events: Sequence[Event]) -> dict[str, tuple[str, ...]]:
        """Compaction (fold.Compactable): an update, tag, untag, edge or view change each of whose
        slots a later event in the same log sets again can go (an add only by a later add, a
        removal by a later removal). Nodes and node deletions stay."""
        found: dict[str, tuple[str, ...]] = {e.id: () for e in events if not e.kind.startswith("graph.")}
        droppable = {e.id for e in events if e.kind in _DROPPABLE}
        found.update(dict.fromkeys(overwritten(events, _writes) & droppable, ()))
        return found

    def apply(self, state: GraphState, event: Event) -> None:
        kind, data = event.kind, event.data
        if not kind.startswith("graph."):
            return
        key = (event.hlc, sys.intern(event.writer), event.seq)  # one writer string shared by every key
        if kind == model.NODE:
            node = _record(state, event.id)
            node.exists, node.created_key, node.writer = True, key, event.writer
            node.agent = str(data.get("agent") or "")
            origin = data.get("origin")
            if isinstance(origin, str) and origin:
                node.origin = origin
                known = state.origins.get(origin)
                state.origins[origin] = min(known, event.id) if known else event.id
            _fields(state, node, data, key, creating=True)
            _tag(state, event.id, data.get("tags"), key, True)
            links = data.get("links")
            for link in links if isinstance(links, list) else ():
                if isinstance(link, dict) and isinstance(link.get("to"), str) and isinstance(link.get("type"), str):
                    _edge_mark(state, (event.id, link["to"], link["type"]), key, True, (event.id, {}))
            _live(state, node)
            return
        target = data.get("node")
        if kind in (model.NODE_UPDATE, model.NODE_DELETE, model.TAG, model.UNTAG) and isinstance(target, str):
            if kind == model.NODE_UPDATE:
                _fields(state, _record(state, target), data, key)
            elif kind == model.NODE_DELETE:
                node = _record(state, target)
                node.deleted = True
                _live(state, node)
            else:
                _tag(state, target, data.get("tags"), key, kind == model.TAG)
        elif kind in (model.EDGE, model.EDGE_DELETE):
            source, dest, edge_type = data.get("from"), data.get("to"), data.get("type")
            if not (isinstance(source, str) and isinstance(dest, str) and isinstance(edge_type, str)):
                return
            meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
            _edge_mark(state, (source, dest, edge_type), key, kind == model.EDGE, (event.id, meta))
        elif kind in (model.VIEW, model.VIEW_DELETE):
            name = data.get("name")
            if not isinstance(name, str):
                return
            budget = data.get("budget")
            if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
                budget = model.DEFAULT_VIEW_BUDGET
            _set_mark(state.views, name, key, kind == model.VIEW, (str(data.get("query") or ""), budget))
