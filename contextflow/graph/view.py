"""The graph view: a pure fold of `graph.*` events into nodes, edges, tags and saved views.

Every value is kept with the order key (`Event.key`) of the event that set it, and a later
key always wins, so the folded state does not depend on the order events arrive in:
node fields and metadata keys are last-writer-wins per field; a tag or an edge is on when
its latest add is newer than its latest removal; a deleted node stays a tombstone, and its
edges disappear with it at read time. A node's id is the id of its `graph.node` event.
No I/O here: the graph's tables (graph/projection.py) apply this fold to the rows a batch of events
touches, and every read queries those tables (graph/stored.py); the tests read the whole fold
as the oracle (tests/graph_fold.py).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, TypeGuard, TypeVar

from contextflow.core.clock import stamp_iso
from contextflow.core.events import Event, OrderKey
from contextflow.core.text import estimate_tokens
from contextflow.graph import model

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
    """The fold's values; the graph's tables (graph/projection.py) keep them, with the columns queries need."""

    nodes: dict[str, Node] = field(default_factory=dict)
    tag_marks: dict[str, dict[str, Mark]] = field(default_factory=dict)  # node -> tag -> (added, removed)
    edges: dict[EdgeKey, Mark] = field(default_factory=dict)  # (added, removed, event id, metadata)
    views: dict[str, Mark] = field(default_factory=dict)  # (added, removed, query, budget)


# -- folding ---------------------------------------------------------------------------


def _record(state: GraphState, node_id: str) -> Node:
    node = state.nodes.get(node_id)
    if node is None:
        node = state.nodes[node_id] = Node(node_id)
    return node


def _set_field(node: Node, name: str, value: Any, key: OrderKey, creating: bool) -> None:
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
    setattr(node, name, value or "")
    if name in ("content", "summary"):
        node.tokens = estimate_tokens(node.content)
        node.lower = f"{node.content}\n{node.summary}".lower()


def _older_than_creation(node: Node, created: OrderKey) -> None:
    """Forget what updates stamped before the node's creation set (folded before it): the creation wins
    over them, as it does when it is folded first, so the state is the same in every order."""
    for name, set_at in list(node.field_keys.items()):
        if set_at >= created:
            continue
        del node.field_keys[name]
        if name.startswith("meta."):
            node.metadata.pop(name[5:], None)
        else:
            setattr(node, name, "")
    node.tokens = estimate_tokens(node.content)
    node.lower = f"{node.content}\n{node.summary}".lower()


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


def _tag(state: GraphState, node_id: str, names: object, key: OrderKey, adding: bool) -> None:
    if not isinstance(names, list):
        return
    for name in names:
        if isinstance(name, str):
            _set_mark(state.tag_marks.setdefault(node_id, {}), name, key, adding)  # (never tagged: no entry)


def _fields(node: Node, data: dict[str, Any], key: OrderKey, creating: bool = False) -> None:
    for name in ("type", "content", "summary"):
        if isinstance(data.get(name), str):
            _set_field(node, name, data[name], key, creating)
    meta = data.get("metadata")
    if isinstance(meta, dict):
        for meta_key, value in meta.items():
            _set_field(node, "meta." + str(meta_key), value, key, creating)
    if key > node.updated_key:
        node.updated_key = key


DROPPABLE = (model.NODE_UPDATE, model.TAG, model.UNTAG, model.EDGE, model.EDGE_DELETE, model.VIEW, model.VIEW_DELETE)


def writes(event: Event) -> set[tuple[Any, ...]]:
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

    def apply(self, state: GraphState, event: Event) -> None:
        kind, data = event.kind, event.data
        if not kind.startswith("graph."):
            return
        key = (event.hlc, sys.intern(event.writer), event.seq)  # one writer string shared by every key
        if kind == model.NODE:
            node = _record(state, event.id)
            _older_than_creation(node, key)
            node.exists, node.created_key, node.writer = True, key, event.writer
            node.agent = str(data.get("agent") or "")
            origin = data.get("origin")
            if isinstance(origin, str) and origin:
                node.origin = origin
            _fields(node, data, key, creating=True)
            _tag(state, event.id, data.get("tags"), key, True)
            links = data.get("links")
            for link in links if isinstance(links, list) else ():
                if isinstance(link, dict) and isinstance(link.get("to"), str) and isinstance(link.get("type"), str):
                    _set_mark(state.edges, (event.id, link["to"], link["type"]), key, True, (event.id, {}))
            return
        target = data.get("node")
        if kind in (model.NODE_UPDATE, model.NODE_DELETE, model.TAG, model.UNTAG) and isinstance(target, str):
            if kind == model.NODE_UPDATE:
                _fields(_record(state, target), data, key)
            elif kind == model.NODE_DELETE:
                _record(state, target).deleted = True
            else:
                _tag(state, target, data.get("tags"), key, kind == model.TAG)
        elif kind in (model.EDGE, model.EDGE_DELETE):
            source, dest, edge_type = data.get("from"), data.get("to"), data.get("type")
            if not (isinstance(source, str) and isinstance(dest, str) and isinstance(edge_type, str)):
                return
            meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
            _set_mark(state.edges, (source, dest, edge_type), key, kind == model.EDGE, (event.id, meta))
        elif kind in (model.VIEW, model.VIEW_DELETE):
            name = data.get("name")
            if not isinstance(name, str):
                return
            budget = data.get("budget")
            if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
                budget = model.DEFAULT_VIEW_BUDGET
            _set_mark(state.views, name, key, kind == model.VIEW, (str(data.get("query") or ""), budget))
