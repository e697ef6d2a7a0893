"""Graph nodes, edges, walks and the status overview as text.

Stored text is untrusted: renderings strip control sequences and quote content under a
header carrying its provenance (type, id, agent, writer, time).
"""

from __future__ import annotations

from typing import Any

from contextflow.core.text import DATA_NOTICE, clean, clip, quote
from contextflow.graph.compose import render_node
from contextflow.graph.stored import StoredGraph
from contextflow.graph.view import Edge, Node, Step
from contextflow.operations.provenance import header


def node_header(state: StoredGraph, node: Node) -> str:
    tags = sorted(state.tags_of(node.id))
    successor = state.superseded_by(node.id)
    return header(
        f"[{node.type}:{node.id}]",
        f"by {clean(node.agent or 'unknown', True)}",
        ("writer", node.writer),
        node.created_at,
        f"updated {node.updated_at}" if node.updated_key != node.created_key else None,
        f"~{node.tokens} tokens",
        "tags: " + ", ".join(clip(tag, 60) for tag in tags) if tags else None,
        f"SUPERSEDED by {successor}" if successor else None,
    )


def node_text(state: StoredGraph, node: Node, *, with_edges: bool = False, brief: bool = False) -> str:
    body = quote(clip(node.content, 300) if brief else node.content)
    lines = [node_header(state, node), body]
    if node.summary:
        lines.append("summary:\n" + quote(node.summary))
    if node.metadata and not brief:
        lines.append("metadata: " + clip(", ".join(f"{k}={v}" for k, v in sorted(node.metadata.items())), 500))
    if with_edges:
        lines += edge_lines(state, state.edges_out(node.id), state.edges_in(node.id))
    return "\n".join(lines)


def edge_lines(state: StoredGraph, out: list[Edge], inc: list[Edge]) -> list[str]:
    """A line per edge: `  -> TYPE [type:id] content` for outgoing ones, `  <- ...` for incoming ones."""
    ends = [("->", edge.type, state.nodes[edge.target]) for edge in out]
    ends += [("<-", edge.type, state.nodes[edge.source]) for edge in inc]
    return [f"  {arrow} {kind} [{other.type}:{other.id}] {clip(other.content, 80)}" for arrow, kind, other in ends]


def nodes_text(state: StoredGraph, nodes: list[Node], title: str, total: int | None = None) -> str:
    if not nodes:
        return f"{title}: no matching nodes."
    shown = f"{len(nodes)} of {total}" if total is not None and total > len(nodes) else str(len(nodes))
    blocks = [node_text(state, node, brief=True) for node in nodes]
    noun = "node" if len(nodes) == 1 and total in (None, 1) else "nodes"
    return f"{title}: {shown} {noun}. {DATA_NOTICE}\n\n" + "\n\n".join(blocks)


def nodes_markdown(state: StoredGraph, nodes: list[Node]) -> str:
    return "".join(render_node(state, node) for node in nodes) or "(no matching nodes)\n"


def steps_text(state: StoredGraph, root: Node, steps: list[Step], title: str) -> str:
    lines = [f"{title} {node_header(state, root)}", quote(clip(root.content, 200))]
    if not steps:
        lines.append("(nothing linked)")
    for step in steps:
        indent = "  " * step.depth
        lines.append(f"{indent}{step.edge_type} {node_header(state, step.node)}")
        lines.append(indent + quote(clip(step.node.content, 160)))
    return "\n".join(lines)


def _bytes(count: float) -> str:
    size, unit = float(count), "B"
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            break
        size /= 1000
    return f"{size:.0f} B" if unit == "B" else f"{size:.1f} {unit}"


def _size(info: dict[str, Any]) -> str:
    """` (2.3 MB in 2 logs)`, ` (new)` with no log yet; nothing when the size was not measured."""
    if "store_bytes" not in info:
        return ""
    if not info["store_logs"]:
        return " (new)"
    logs = info["store_logs"]
    return f" ({_bytes(info['store_bytes'])} in {logs} log{'s' if logs != 1 else ''})"


def status_text(info: dict[str, Any]) -> str:
    lines = [f"Store: {info['store']}{_size(info)}"]
    if "database" in info:  # seed 003's line: here the derived store, rebuilt from the logs when deleted
        lines.append(f"Database: {info['database']} ({_bytes(info['database_bytes'])}, derived from the logs)")
    lines.append(f"Nodes: {info['nodes']:,} (estimated {info['tokens']:,} tokens)")
    lines += [f"  {name}: {count:,}" for name, count in info["types"].items()]
    lines += [f"Edges: {info['edges']:,}", f"Tags: {info['tags']:,} unique", f"Views: {info['views']}"]
    if info["superseded"]:
        lines.append(f"Superseded: {info['superseded']:,}")
    lines += ["", "Tier breakdown:"]
    for tier, bucket in [*info["tiers"].items(), ("(no tier)", info["untiered"])]:
        lines.append(f"  {tier}: {bucket['nodes']:,} nodes ({bucket['tokens']:,} tokens)")
    return "\n".join(lines)
