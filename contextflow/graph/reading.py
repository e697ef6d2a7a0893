"""What a graph read sees (`Graph`): the folded state (`view.GraphState`) or the graph's tables on disk
(`stored.StoredGraph`), and what both share: walking edges, and the `Brief` of a node composing ranks
and fits before it reads the node whole."""

from __future__ import annotations

from collections.abc import Collection, Container, Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, NamedTuple, Protocol

from contextflow.core.events import OrderKey
from contextflow.graph.view import Edge, Node, SavedView, Step

if TYPE_CHECKING:
    from contextflow.graph.query import Expr


class Brief(NamedTuple):
    """What ranking and fitting a node into a budget read of it before it is rendered."""

    id: str
    type: str
    tokens: int
    updated_key: OrderKey
    same: object  # equal for nodes whose content may be equal (`model.dedupe_key`, or its digest)
    who: str  # its agent, else its writer
    shortest: int  # `shortest_text`


NOT_PRINTABLE = -(1 << 30)


def shortest_text(content: str, summary: str) -> int:
    """A lower bound of the length a node's bullet gives its text (content or summary, whichever is
    shorter): printable text comes out of cleaning unchanged, and each later line is quoted (`> `);
    text cleaning may change counts as NOT_PRINTABLE."""
    found = _shown(content)
    return min(found, _shown(summary)) if summary else found


def _shown(text: str) -> int:
    if not text.replace("\n", "").isprintable():
        return NOT_PRINTABLE
    lines = text.strip().split("\n")
    return sum(len(line) for line in lines if line.strip()) + len(lines) - 1


class Graph(Protocol):
    """What a graph read sees: the folded state (`GraphState`) or its tables on disk (graph/stored.py)."""

    @property
    def nodes(self) -> Mapping[str, Node]: ...
    @property
    def live(self) -> AbstractSet[str]: ...
    @property
    def by_type(self) -> Mapping[str, AbstractSet[str]]: ...
    @property
    def by_tag(self) -> Mapping[str, AbstractSet[str]]: ...
    @property
    def inc(self) -> Container[str]: ...
    @property
    def origins(self) -> Mapping[str, str]: ...

    def node(self, node_id: str) -> Node | None: ...
    def tags_of(self, node_id: str) -> set[str]: ...
    def edges_out(self, node_id: str) -> list[Edge]: ...
    def edges_in(self, node_id: str) -> list[Edge]: ...
    def has_edges(self, node_id: str) -> bool: ...
    def edge_live(self, source: str, target: str, kind: str) -> bool: ...
    def superseded_by(self, node_id: str) -> str | None: ...
    def walk(
        self, root: str, depth_limit: int, *, forward: bool, backward: bool, types: tuple[str, ...] | None = None
    ) -> list[Step]: ...
    def all_edges(self) -> list[Edge]: ...
    def saved_views(self) -> list[SavedView]: ...
    def saved_view(self, name: str) -> SavedView | None: ...
    def matching(self, expr: Expr, now_ms: int) -> set[str]: ...
    def prefixed(self, prefix: str, count: int) -> list[str]: ...
    def many(self, ids: Iterable[str]) -> list[Node]: ...
    def superseded(self, ids: Iterable[str]) -> set[str]: ...
    def briefs(self, ids: Iterable[str]) -> list[Brief]: ...
    def alike(self, node_type: str, content: str) -> list[Node]: ...
    def newest(self, ids: Collection[str], count: int) -> list[Node]: ...


def walk(
    graph: Graph, root: str, depth_limit: int, *, forward: bool, backward: bool, types: tuple[str, ...] | None = None
) -> list[Step]:
    """Breadth first from `root`, each node once, at most `depth_limit` hops along edges (of `types`,
    or any), outgoing when `forward`, incoming when `backward`."""
    steps: list[Step] = []
    seen = {root}
    frontier = [root]
    for depth in range(1, depth_limit + 1):
        following: list[str] = []
        for current in frontier:
            near = [(e.target, e.type) for e in graph.edges_out(current)] if forward else []
            near += [(e.source, e.type) for e in graph.edges_in(current)] if backward else []
            for other, edge_type in near:
                if other not in seen and (types is None or edge_type in types):
                    seen.add(other)
                    following.append(other)
                    steps.append(Step(depth, graph.nodes[other], edge_type, current))
        frontier = following
        if not frontier:
            break
    return steps
