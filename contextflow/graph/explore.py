"""Graph reads: query, list, show, edges, tags, trace, related, status; and node renderings.

Stored text is untrusted: text renderings strip control sequences and quote content under
a header carrying its provenance (type, id, agent, writer, time).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from contextflow import checks
from contextflow.app import App
from contextflow.graph import model
from contextflow.graph.ops import graph, resolve
from contextflow.graph.query import evaluate, parse
from contextflow.graph.view import Edge, GraphState, Node
from contextflow.text import DATA_NOTICE, clean, clip, quote
from contextflow.timeutil import now_ms

MAX_LIMIT = 10_000


def by_recency(state: GraphState, ids: set[str] | list[str], limit: int | None = None) -> list[Node]:
    """Most recently updated first (each node's update key is unique: no ties)."""
    nodes = state.nodes
    if limit is not None and limit < len(ids) // 4:
        return [nodes[i] for i in heapq.nlargest(limit, ids, key=lambda i: nodes[i].updated_key)]
    return sorted((nodes[i] for i in ids), key=lambda n: n.updated_key, reverse=True)[:limit]


def run_query(app: App, text: Any, limit: Any = None, *, at_ms: int | None = None) -> tuple[list[Node], int]:
    """Matching nodes, most recently updated first, and how many matched in all."""
    query = checks.text(text, "query", max_chars=4000) or ""
    count = checks.bounded_int(limit, "limit", 50, high=MAX_LIMIT)
    state = graph(app)
    ids = evaluate(parse(query), state, now_ms() if at_ms is None else at_ms)
    return by_recency(state, ids, count), len(ids)


def list_nodes(
    app: App, *, type: Any = None, tag: Any = None, since: Any = None, limit: Any = None,
) -> tuple[list[Node], int]:
    """The seed's `list` filters, expressed as a query."""
    parts: list[str] = []
    if type is not None:
        parts.append("type:" + model.node_type(type))
    if tag is not None:
        parts.append("tag:" + model.tag(tag))
    if since is not None:
        parts.append(f"created:>={checks.text(since, 'since')}")
    return run_query(app, " AND ".join(parts), limit if limit is not None else 20)


def node_dict(state: GraphState, node: Node, *, with_edges: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": node.id, "type": node.type, "content": node.content, "summary": node.summary or None,
        "tags": sorted(state.tags_of(node.id)), "metadata": node.metadata, "token_estimate": node.tokens,
        "superseded_by": state.superseded_by(node.id), "created_at": node.created_at,
        "updated_at": node.updated_at, "agent": node.agent or None, "writer": node.writer,
    }
    if with_edges:
        data["edges_out"] = [edge.as_dict() for edge in state.edges_out(node.id)]
        data["edges_in"] = [edge.as_dict() for edge in state.edges_in(node.id)]
    return data


def node_header(state: GraphState, node: Node) -> str:
    parts = [f"[{node.type}:{node.id}]", f"by {clean(node.agent or 'unknown', True)}",
             f"writer={clean(node.writer, True)}", node.created_at]
    if node.updated_key != node.created_key:
        parts.append(f"updated {node.updated_at}")
    parts.append(f"~{node.tokens} tokens")
    tags = sorted(state.tags_of(node.id))
    if tags:
        parts.append("tags: " + ", ".join(clip(tag, 60) for tag in tags))
    successor = state.superseded_by(node.id)
    if successor:
        parts.append(f"SUPERSEDED by {successor}")
    return " | ".join(parts)


def node_text(state: GraphState, node: Node, *, with_edges: bool = False, brief: bool = False) -> str:
    body = quote(clip(node.content, 300) if brief else node.content)
    lines = [node_header(state, node), body]
    if node.summary:
        lines.append("summary:\n" + quote(node.summary))
    if node.metadata and not brief:
        lines.append("metadata: " + clip(", ".join(f"{k}={v}" for k, v in sorted(node.metadata.items())), 500))
    if with_edges:
        lines += [f"  -> {edge_text(edge, state)}" for edge in state.edges_out(node.id)]
        lines += [f"  <- {edge_text(edge, state, incoming=True)}" for edge in state.edges_in(node.id)]
    return "\n".join(lines)


def edge_text(edge: Edge, state: GraphState, *, incoming: bool = False) -> str:
    other = state.nodes[edge.source if incoming else edge.target]
    return f"{edge.type} [{other.type}:{other.id}] {clip(other.content, 80)}"


def nodes_text(state: GraphState, nodes: list[Node], title: str, total: int | None = None) -> str:
    if not nodes:
        return f"{title}: no matching nodes."
    shown = f"{len(nodes)} of {total}" if total is not None and total > len(nodes) else str(len(nodes))
    blocks = [node_text(state, node, brief=True) for node in nodes]
    return f"{title}: {shown} node(s). {DATA_NOTICE}\n\n" + "\n\n".join(blocks)


def edges_of(app: App, node_id: Any, direction: Any = "both") -> tuple[Node, list[Edge], list[Edge]]:
    chosen = checks.choice(direction, "direction", ("in", "out", "both"), "both")
    state = graph(app)
    node = resolve(state, node_id)
    out = state.edges_out(node.id) if chosen in ("out", "both") else []
    inc = state.edges_in(node.id) if chosen in ("in", "both") else []
    return node, out, inc


def tag_counts(app: App, prefix: Any = None) -> list[tuple[str, int]]:
    start = checks.text(prefix, "prefix", max_chars=200) or ""
    state = graph(app)
    counts = ((name, len(members & state.live)) for name, members in state.by_tag.items() if name.startswith(start))
    return sorted((pair for pair in counts if pair[1]), key=lambda pair: pair[0])


@dataclass(frozen=True)
class Step:
    depth: int
    node: Node
    edge_type: str
    via: str  # the node this one was reached from


def _walk(state: GraphState, root: Node, depth_limit: int,
          neighbours: Callable[[str], Iterable[tuple[str, str]]]) -> list[Step]:
    """Breadth first from `root`, each node once, up to `depth_limit` hops; `neighbours(id)`
    gives the (node id, edge type) pairs one hop away."""
    steps: list[Step] = []
    seen = {root.id}
    frontier = [root.id]
    for depth in range(1, depth_limit + 1):
        following: list[str] = []
        for current in frontier:
            for other, edge_type in neighbours(current):
                if other not in seen:
                    seen.add(other)
                    following.append(other)
                    steps.append(Step(depth, state.nodes[other], edge_type, current))
        if not following:
            break
        frontier = following
    return steps


def trace(app: App, node_id: Any, *, reverse: bool = False, max_depth: Any = None) -> tuple[Node, list[Step]]:
    """Recursive provenance: what this node was derived from or depends on (reverse: what rests on it)."""
    depth_limit = checks.bounded_int(max_depth, "depth", 20, high=100)
    state = graph(app)
    root = resolve(state, node_id)
    kinds = ("DERIVED_FROM", "DEPENDS_ON", "SUPERSEDES")

    def neighbours(current: str) -> Iterable[tuple[str, str]]:
        edges = state.edges_in(current) if reverse else state.edges_out(current)
        return [(edge.source if reverse else edge.target, edge.type) for edge in edges if edge.type in kinds]

    return root, _walk(state, root, depth_limit, neighbours)


def related(app: App, node_id: Any, depth: Any = None) -> tuple[Node, list[Step]]:
    """Nodes within `depth` hops along edges of any type and direction."""
    limit = checks.bounded_int(depth, "depth", 1, high=10)
    state = graph(app)
    root = resolve(state, node_id)

    def neighbours(current: str) -> Iterable[tuple[str, str]]:
        pairs = [(e.target, e.type) for e in state.edges_out(current)]
        return pairs + [(e.source, e.type) for e in state.edges_in(current)]

    return root, _walk(state, root, limit, neighbours)


def steps_text(state: GraphState, root: Node, steps: list[Step], title: str) -> str:
    lines = [f"{title} {node_header(state, root)}", quote(clip(root.content, 200))]
    if not steps:
        lines.append("(nothing linked)")
    for step in steps:
        indent = "  " * step.depth
        lines.append(f"{indent}{step.edge_type} {node_header(state, step.node)}")
        lines.append(indent + quote(clip(step.node.content, 160)))
    return "\n".join(lines)


def status(app: App) -> dict[str, Any]:
    state = graph(app)
    types: dict[str, int] = {}
    tokens = 0
    tiers = {tier: {"nodes": 0, "tokens": 0} for tier in model.TIERS}
    untiered = {"nodes": 0, "tokens": 0}
    superseded = 0
    for node_id in state.live:
        node = state.nodes[node_id]
        types[node.type] = types.get(node.type, 0) + 1
        tokens += node.tokens
        tier = model.tier_of(state.tags_of(node_id))
        bucket = tiers[tier] if tier else untiered
        bucket["nodes"] += 1
        bucket["tokens"] += node.tokens
        if state.superseded_by(node_id):
            superseded += 1
    edge_count = sum(1 for mark_key, mark in state.edges.items()
                     if mark[0] > mark[1] and mark_key[0] in state.live and mark_key[1] in state.live)
    tag_names = {name for name, members in state.by_tag.items() if members & state.live}
    return {
        "store": str(app.store.folder), "nodes": len(state.live), "tokens": tokens,
        "types": dict(sorted(types.items(), key=lambda pair: (-pair[1], pair[0]))),
        "edges": edge_count, "tags": len(tag_names), "tiers": tiers, "untiered": untiered,
        "superseded": superseded, "views": len(state.saved_views()),
    }


def status_text(info: dict[str, Any]) -> str:
    lines = [f"Store: {info['store']}", f"Nodes: {info['nodes']:,} (estimated {info['tokens']:,} tokens)"]
    lines += [f"  {name}: {count:,}" for name, count in info["types"].items()]
    lines += [f"Edges: {info['edges']:,}", f"Tags: {info['tags']:,} unique", f"Views: {info['views']}"]
    if info["superseded"]:
        lines.append(f"Superseded: {info['superseded']:,}")
    lines += ["", "Tier breakdown:"]
    for tier, bucket in info["tiers"].items():
        lines.append(f"  {tier}: {bucket['nodes']:,} nodes ({bucket['tokens']:,} tokens)")
    lines.append(f"  (no tier): {info['untiered']['nodes']:,} nodes ({info['untiered']['tokens']:,} tokens)")
    return "\n".join(lines)

