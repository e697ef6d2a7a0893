"""The graph read from its tables (graph/projection.py): a `StoredGraph` whose nodes, tags, edges and views are
queried when a call touches them, so a process holds what its call read, never the whole graph. One
object serves one call (`writes.graph`): nodes it loaded are kept for the call. A query of the query
language runs as one SQL query (`matching`): the language's only evaluator (tests/test_graph_stored.py
compares every read with the pure fold's).

The tables are the ones on disk (for a store scoped to some projects, an HTTP grant's, views of their rows:
`Projection.scoped`); while they do not hold every log (a build under way, their lock held elsewhere) the same
queries read them as built with the rows of the logs' remaining bytes, folded by the same `apply`
(`core/rest.py`); over its bound only the logs' newest bytes, and `read.partial` says how far the build is.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar

from contextflow.core.clock import stamp_iso
from contextflow.core.events import OrderKey
from contextflow.core.projections import chunks, marks
from contextflow.core.tables import stamp_of
from contextflow.graph import model
from contextflow.graph.projection import dedupe_digest, mark_of, node_of
from contextflow.graph.query import Expr, where
from contextflow.graph.view import Edge, Node, SavedView, Step, is_on

if TYPE_CHECKING:
    from contextflow.app import App

T = TypeVar("T")
_BRIEF = "n.id, n.type, n.tokens, n.hlc, n.w, n.seq, n.dedupe, n.who, n.shortest"  # (`Brief`)
_LIVE_EDGE = """SELECT e.src, e.dst, e.type, e.mark FROM graph_edges e
    JOIN graph_nodes a ON a.id = e.src AND a.live JOIN graph_nodes b ON b.id = e.dst AND b.live WHERE e."on" """


class Brief(NamedTuple):
    """What ranking and fitting a node into a budget read of it before it is rendered."""

    id: str
    type: str
    tokens: int
    updated_key: OrderKey
    same: object  # equal for nodes whose content may be equal (the digest of `model.dedupe_key`)
    who: str  # its agent, else its writer
    shortest: int  # `model.shortest_text`


class Queries(Protocol):
    """What a graph read queries: the tables as `ondisk.reading` finds them (`core.rest.Reading`)."""

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...


class _Nodes(Mapping[str, Node]):
    """Every node the fold knows (tombstones and placeholders too), loaded when asked for."""

    def __init__(self, graph: StoredGraph) -> None:
        self.graph = graph

    def __getitem__(self, node_id: str) -> Node:
        found = self.graph.load([node_id]).get(node_id)
        if found is None:
            raise KeyError(node_id)
        return found

    def __contains__(self, node_id: object) -> bool:
        return isinstance(node_id, str) and node_id in self.graph.load([node_id])

    def __iter__(self) -> Iterator[str]:
        return iter([i for (i,) in self.graph.read.query("SELECT id FROM graph_nodes")])

    def __len__(self) -> int:
        return int(self.graph.read.query("SELECT count(*) FROM graph_nodes")[0][0])


class _Live(AbstractSet[str]):
    """The ids of the nodes that exist and are not deleted."""

    def __init__(self, graph: StoredGraph) -> None:
        self.graph = graph

    def __contains__(self, node_id: object) -> bool:
        return isinstance(node_id, str) and self.graph.node(node_id) is not None

    def __iter__(self) -> Iterator[str]:
        return iter([i for (i,) in self.graph.read.query("SELECT id FROM graph_nodes WHERE live")])

    def __len__(self) -> int:
        return int(self.graph.read.query("SELECT count(*) FROM graph_nodes WHERE live")[0][0])

    @classmethod
    def _from_iterable(cls, values: Iterable[T]) -> set[T]:  # what `&`, `|` and `-` with a set make
        return set(values)


class StoredGraph:
    """The graph as its tables hold it now (the caller brought them up to date: `writes.graph`)."""

    def __init__(self, read: Queries) -> None:
        self.read = read
        self._loaded: dict[str, Node | None] = {}
        self._tags: dict[str, set[str]] = {}
        self._briefs: dict[str, Brief] = {}
        self.nodes = _Nodes(self)
        self.live = _Live(self)

    # -- nodes ---------------------------------------------------------------------------------

    def load(self, ids: Iterable[str]) -> dict[str, Node]:
        """The nodes of `ids` the fold knows, each read once per call (with its tags)."""
        wanted = [i for i in dict.fromkeys(ids) if i not in self._loaded]
        for part in chunks(wanted):
            sql = f"SELECT id, data, lower FROM graph_node_text WHERE id IN ({marks(len(part))})"
            found = self.read.query(sql, part)
            for node_id, blob, lower in found:
                self._loaded[node_id] = node_of(blob, lower)
                self._tags[node_id] = set()
            sql = f'SELECT node, tag FROM graph_tags WHERE "on" AND node IN ({marks(len(part))})'
            for node_id, tag in self.read.query(sql, part):
                self._tags.setdefault(node_id, set()).add(tag)
            for node_id in part:
                self._loaded.setdefault(node_id, None)
        return {i: node for i in ids if (node := self._loaded.get(i)) is not None}

    def node(self, node_id: str) -> Node | None:
        found = self.load([node_id]).get(node_id)
        return found if found is not None and found.exists and not found.deleted else None

    def many(self, ids: Iterable[str]) -> list[Node]:
        order = list(ids)
        found = self.load(order)
        return [found[i] for i in order]

    def of_type(self, node_type: str) -> set[str]:
        """The ids of the live nodes of this type."""
        return {i for (i,) in self.read.query("SELECT id FROM graph_nodes WHERE type = ? AND live", (node_type,))}

    def tagged(self, tag: str) -> set[str]:
        """The ids of the nodes `tag` is on (deleted ones too: one lookup of the tags' index)."""
        return {i for (i,) in self.read.query('SELECT node FROM graph_tags WHERE tag = ? AND "on"', (tag,))}

    def origin(self, origin: str) -> str | None:
        """The first node made from an imported item that came from `origin`, if any."""
        found = self.read.query("SELECT min(id) FROM graph_nodes WHERE origin = ?", (origin,))[0][0]
        return None if found is None else str(found)

    def tags_of(self, node_id: str) -> set[str]:
        self.load([node_id])
        return set(self._tags.get(node_id, ()))

    def prefixed(self, prefix: str, count: int) -> list[str]:
        sql = (
            "SELECT id FROM graph_nodes WHERE live AND id >= ? AND id < ? AND substr(id, 1, ?) = ? ORDER BY id LIMIT ?"
        )
        return [i for (i,) in self.read.query(sql, (prefix, prefix + "\U0010ffff", len(prefix), prefix, count))]

    def briefs(self, ids: Iterable[str]) -> list[Brief]:
        order = list(ids)
        wanted = [i for i in dict.fromkeys(order) if i not in self._briefs]
        for part in chunks(wanted):
            self._keep_briefs(f"SELECT {_BRIEF} FROM graph_nodes n WHERE n.id IN ({marks(len(part))})", part)
        return [self._briefs[i] for i in order]

    def _keep_briefs(self, sql: str, params: Sequence[Any]) -> list[str]:
        found = []
        for node_id, kind, tokens, hlc, writer, seq, same, who, shortest in self.read.query(sql, params):
            self._briefs[node_id] = Brief(node_id, kind, tokens, (stamp_of(hlc), writer, seq), same, who, shortest)
            found.append(node_id)
        return found

    def alike(self, node_type: str, content: str) -> list[Node]:
        key = model.dedupe_key(content)
        sql = "SELECT id FROM graph_nodes WHERE dedupe = ? AND type = ? AND live ORDER BY id"
        found = self.many(i for (i,) in self.read.query(sql, (dedupe_digest(content), node_type)))
        return [node for node in found if model.dedupe_key(node.content) == key]

    def newest(self, ids: Collection[str], count: int) -> list[Node]:
        chosen = heapq.nlargest(count, self.briefs(ids), key=attrgetter("updated_key"))
        return self.many(brief.id for brief in chosen)

    # -- edges and views -------------------------------------------------------------------------

    def _edges(self, where: str, params: tuple[Any, ...]) -> list[Edge]:
        found = []
        for src, dst, kind, blob in self.read.query(f"{_LIVE_EDGE} AND {where}", params):
            mark = mark_of(blob)
            found.append(Edge(mark[2], src, dst, kind, stamp_iso(mark[0][0]), mark[3] or {}))
        return found

    def edges_out(self, node_id: str) -> list[Edge]:
        return sorted(self._edges("e.src = ?", (node_id,)), key=lambda e: (e.type, e.target))

    def edges_in(self, node_id: str) -> list[Edge]:
        return sorted(self._edges("e.dst = ?", (node_id,)), key=lambda e: (e.type, e.source))

    def edge_live(self, source: str, target: str, kind: str) -> bool:
        return bool(self._edges("e.src = ? AND e.dst = ? AND e.type = ?", (source, target, kind)))

    def all_edges(self) -> list[Edge]:
        return sorted(self._edges("1", ()), key=lambda e: (e.source, e.target, e.type))

    def superseded_by(self, node_id: str) -> str | None:
        """The newest live node that SUPERSEDES this one, if any."""
        sql = """SELECT e.src, e.mark FROM graph_edges e JOIN graph_nodes a ON a.id = e.src AND a.live
            WHERE e.dst = ? AND e.type = 'SUPERSEDES' AND e."on" """
        marked = [(mark_of(blob)[0], src) for src, blob in self.read.query(sql, (node_id,))]
        return max(marked)[1] if marked else None

    def walk(
        self, root: str, depth_limit: int, *, forward: bool, backward: bool, types: tuple[str, ...] | None = None
    ) -> list[Step]:
        """Breadth first from `root`, each node once, at most `depth_limit` hops along edges (of `types`,
        or any), outgoing when `forward`, incoming when `backward`."""
        steps: list[Step] = []
        seen = {root}
        frontier = [root]
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
            if not frontier:
                break
        return steps

    def known(self, ids: Iterable[str]) -> set[str]:
        """Those of `ids` that are ids of events here of `projection.KNOWN_KINDS` (an import's derived ids)."""
        found: set[str] = set()
        for part in chunks(list(dict.fromkeys(ids))):
            sql = f"SELECT id FROM graph_events WHERE id IN ({marks(len(part))})"
            found.update(i for (i,) in self.read.query(sql, part))
        return found

    def saved_views(self) -> list[SavedView]:
        found = (self.saved_view(name) for (name,) in self.read.query("SELECT name FROM graph_views ORDER BY name"))
        return [view for view in found if view is not None]

    def saved_view(self, name: str) -> SavedView | None:
        found = self.read.query("SELECT mark FROM graph_views WHERE name = ?", (name,))
        mark = mark_of(found[0][0]) if found else None
        return SavedView(name, mark[2], mark[3], stamp_iso(mark[0][0])) if is_on(mark) else None

    # -- whole-graph reads, as queries -------------------------------------------------------------

    def matching(self, expr: Expr, now_ms: int) -> set[str]:
        """The ids of live nodes that match `expr`, in one query; `now_ms` anchors durations such as 24h."""
        condition, params = where(expr, now_ms, self.prefixed)
        return set(self._keep_briefs(f"SELECT {_BRIEF} FROM graph_nodes n WHERE n.live AND ({condition})", params))

    def first_ranked(
        self, expr: Expr, now_ms: int, count: int, archived_ok: bool, superseded_ok: bool
    ) -> tuple[list[str], int, dict[str, int]]:
        """`compose.candidates_for` in two queries: the first `count` ids as `compose.ranked` ranks them (tier,
        then newest update; all of them, unordered, for a negative count), how many more there are, and how many
        matches were left out why."""
        condition, params = where(expr, now_ms, self.prefixed)
        archived = "0" if archived_ok else _ARCHIVED
        superseded = "0" if superseded_ok else f"NOT {archived} AND {_SUPERSEDED}"
        base = f"FROM graph_nodes n WHERE n.live AND ({condition})"
        counted = f"SELECT count(*), coalesce(sum({archived}), 0), coalesce(sum({superseded}), 0) {base}"
        matched, archives, supersedes = self.read.query(counted, params)[0]
        kept = f"{base} AND NOT {archived} AND NOT ({superseded})"
        order = f"ORDER BY {_TIER_RANK}, n.hlc DESC, n.w DESC, n.seq DESC LIMIT ?" if count >= 0 else ""
        chosen = self._keep_briefs(f"SELECT {_BRIEF} {kept} {order}", [*params, count] if order else params)
        excluded = {"archived (tier:off-context)": archives, "superseded": supersedes}
        beyond = matched - archives - supersedes - len(chosen)
        return chosen, beyond, {reason: number for reason, number in excluded.items() if number}

    def tag_counts(self, prefix: str) -> list[tuple[str, int]]:
        sql = """SELECT t.tag, count(*) FROM graph_tags t JOIN graph_nodes n ON n.id = t.node AND n.live
            WHERE t."on" AND substr(t.tag, 1, ?) = ? GROUP BY t.tag ORDER BY t.tag"""
        return [(tag, count) for tag, count in self.read.query(sql, (len(prefix), prefix))]

    def census(self) -> dict[str, Any]:
        """`explore.status`'s counts, from queries."""
        peek = self.read.query
        nodes, tokens = peek("SELECT count(*), coalesce(sum(tokens), 0) FROM graph_nodes WHERE live")[0]
        tiered: dict[str, str] = {}
        sql = """SELECT t.node FROM graph_tags t JOIN graph_nodes n ON n.id = t.node AND n.live
            WHERE t.tag = ? AND t."on" """
        for tier_tag in reversed(model.TIER_TAGS):  # the strongest tier last: it wins
            tiered.update(dict.fromkeys((i for (i,) in peek(sql, (tier_tag,))), tier_tag.partition(":")[2]))
        tiers = {tier: {"nodes": 0, "tokens": 0} for tier in model.TIERS}
        untiered = {"nodes": 0, "tokens": 0}
        for node_id, count in peek("SELECT id, tokens FROM graph_nodes WHERE live"):
            bucket = tiers[tiered[node_id]] if node_id in tiered else untiered
            bucket["nodes"] += 1
            bucket["tokens"] += count
        types = peek("SELECT type, count(*) FROM graph_nodes WHERE live GROUP BY type")
        tags = peek(
            'SELECT count(DISTINCT t.tag) FROM graph_tags t JOIN graph_nodes n ON n.id = t.node AND n.live WHERE t."on"'
        )[0][0]
        superseded = peek(
            """SELECT count(DISTINCT e.dst) FROM graph_edges e JOIN graph_nodes a ON a.id = e.src AND a.live
            JOIN graph_nodes b ON b.id = e.dst AND b.live WHERE e.type = 'SUPERSEDES' AND e."on" """
        )[0][0]
        return {
            "nodes": nodes,
            "tokens": tokens,
            "types": dict(sorted(types, key=lambda pair: (-pair[1], pair[0]))),
            "edges": peek(f"SELECT count(*) FROM ({_LIVE_EDGE})")[0][0],
            "tags": tags,
            "tiers": tiers,
            "untiered": untiered,
            "superseded": superseded,
            "views": len(self.saved_views()),
        }


def known(app: App, ids: Iterable[str]) -> set[str]:
    """Those of `ids` that are ids of graph events here of the kinds an import writes (`StoredGraph.known`), read
    as every graph read is (`ondisk.reading`: beside the logs' remaining bytes while a build is unfinished) and
    never partial (`ondisk.whole`: an import must never add an item again because a build was unfinished)."""
    from contextflow import ondisk
    from contextflow.graph.projection import PROJECTION

    return StoredGraph(ondisk.whole(app, PROJECTION)).known(ids)


def _tagged(tag: str) -> str:  # (not correlated: its ids are listed once a query)
    return f"""n.id IN (SELECT node FROM graph_tags WHERE tag = '{tag}' AND "on")"""


_ARCHIVED = _tagged(model.OFF_CONTEXT)
_SUPERSEDED = """n.id IN (SELECT e.dst FROM graph_edges e JOIN graph_nodes a ON a.id = e.src AND a.live
    WHERE e.type = 'SUPERSEDES' AND e."on")"""
_TIER_RANK = (
    f"CASE WHEN {_tagged(model.PINNED)} THEN 0 WHEN {_tagged(model.REFERENCE)} THEN 1"
    f" WHEN {_tagged(model.WORKING)} THEN 2 ELSE 3 END"
)
