"""Graph reads: query, list, show, edges, tags, walks, status, as result objects
(contextflow.graph.render renders them)."""

from __future__ import annotations

from typing import Any

from contextflow.app import App
from contextflow.core.timeutil import now_ms
from contextflow.graph import model
from contextflow.graph.fields import DEFAULT_LIMIT, DEFAULT_LIST_LIMIT, DEFAULT_RELATED_DEPTH, DEFAULT_TRACE_DEPTH
from contextflow.graph.query import parse
from contextflow.graph.stored import StoredGraph
from contextflow.graph.view import Edge, Node, Step
from contextflow.graph.writes import graph, resolve


def run_query(app: App, text: str, limit: int | None = None, *, at_ms: int | None = None) -> tuple[list[Node], int]:
    """Matching nodes, most recently updated first, and how many matched in all (at most `limit`, in LIMIT)."""
    query = text.strip()
    count = DEFAULT_LIMIT if limit is None else limit
    state = graph(app)
    ids = state.matching(parse(query), now_ms() if at_ms is None else at_ms)
    return state.newest(ids, count), len(ids)


def list_nodes(
    app: App,
    *,
    type: str | None = None,
    tag: str | None = None,
    since: str | None = None,
    limit: int | None = None,
) -> tuple[list[Node], int]:
    """The seed's `list` filters, expressed as a query (`type` is one of NODE_TYPES: the table's row)."""
    parts: list[str] = []
    if type is not None:
        parts.append("type:" + type)
    if tag is not None:
        parts.append("tag:" + model.tag(tag))
    if since is not None:
        parts.append(f"created:>={since.strip()}")
    return run_query(app, " AND ".join(parts), DEFAULT_LIST_LIMIT if limit is None else limit)


def node_dict(state: StoredGraph, node: Node, *, with_edges: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": node.id,
        "type": node.type,
        "content": node.content,
        "summary": node.summary or None,
        "tags": sorted(state.tags_of(node.id)),
        "metadata": node.metadata,
        "token_estimate": node.tokens,
        "superseded_by": state.superseded_by(node.id),
        "created_at": node.created_at,
        "updated_at": node.updated_at,
        "agent": node.agent or None,
        "writer": node.writer,
    }
    if with_edges:
        data["edges_out"] = [edge.as_dict() for edge in state.edges_out(node.id)]
        data["edges_in"] = [edge.as_dict() for edge in state.edges_in(node.id)]
    return data


def edges_of(app: App, node_id: str, direction: str | None = None) -> tuple[Node, list[Edge], list[Edge]]:
    """A node's outgoing and incoming edges; `direction` is one of DIRECTIONS (the table's row), default both."""
    chosen = direction or "both"
    state = graph(app)
    node = resolve(state, node_id)
    out = state.edges_out(node.id) if chosen in ("out", "both") else []
    inc = state.edges_in(node.id) if chosen in ("in", "both") else []
    return node, out, inc


def tag_counts(app: App, prefix: str | None = None) -> list[tuple[str, int]]:
    start = (prefix or "").strip()
    return graph(app).tag_counts(start)


PROVENANCE = ("DERIVED_FROM", "DEPENDS_ON", "SUPERSEDES")
WALKS = {  # follow (FOLLOWS): default depth, outgoing, incoming, edge types (None: any)
    "related": (DEFAULT_RELATED_DEPTH, True, True, None),  # nodes within `depth` hops along any edge
    "provenance": (DEFAULT_TRACE_DEPTH, True, False, PROVENANCE),  # what the node was derived from or depends on
    "dependents": (DEFAULT_TRACE_DEPTH, False, True, PROVENANCE),  # what rests on it
}


def around(app: App, node_id: str, follow: str = "related", depth: int | None = None) -> tuple[Node, list[Step]]:
    """The nodes around one, nearest first (see WALKS); `depth` is in the table row's range."""
    default, forward, backward, types = WALKS[follow]
    depth_limit = default if depth is None else depth
    state = graph(app)
    root = resolve(state, node_id)
    return root, state.walk(root.id, depth_limit, forward=forward, backward=backward, types=types)


def status(app: App) -> dict[str, Any]:
    """The graph's counts: nodes, tokens, types, edges, tags, tiers, superseded nodes, saved views."""
    return {"store": str(app.store.folder), **graph(app).census()}
