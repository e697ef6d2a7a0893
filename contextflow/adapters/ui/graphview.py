"""The graph page's data: the filter as a graph query, a search for nodes by their text, the
neighbourhood of one node, and the labels of a node's neighbours.

The page draws it with Cytoscape.js (`static/vendor/`): a first view of the `SHOWN` most recently
updated nodes a filter matches (up to `MAX_SHOWN` on demand, grouped by type or project), or the
nodes within a few hops of a chosen one.
"""

from __future__ import annotations

from typing import Any

from contextflow.core.errors import InputError

SHOWN = 120  # nodes in the first view of a filter
MAX_SHOWN = 2_000  # nodes the page draws at most (grouped, with a layout computed in one pass)
FOUND = 20  # nodes a search lists
MAX_FIND_CHARS = 200
LABEL_CHARS = 80
MAX_DEPTH = 3  # hops of a neighbourhood view
NODE_TYPES = ("fact", "decision", "pattern", "observation", "hypothesis", "task", "summary", "source", "open-question")
TIERS = ("pinned", "reference", "working", "off-context")


def query_of(text: str, node_type: str, tag: str, tier: str) -> str:
    """The page's filters (a free query, a type, a tag, a tier) as one query of the graph language."""
    parts = [f"({text.strip()})"] if text.strip() else []
    if node_type:
        if node_type not in NODE_TYPES:
            raise InputError(f"type must be one of {', '.join(NODE_TYPES)}")
        parts.append(f"type:{node_type}")
    if tag.strip():
        if any(c.isspace() or c in '()"' for c in tag.strip()):
            raise InputError("a tag has no spaces, quotes or parentheses, e.g. project:shop")
        parts.append(f"tag:{tag.strip()}")
    if tier:
        if tier not in TIERS:
            raise InputError(f"tier must be one of {', '.join(TIERS)}")
        parts.append(f"tag:tier:{tier}")
    return " AND ".join(parts)


def neighbourhood(walk: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """The nodes `related` walked to from a root (the root first) and the edges it walked along,
    in the shape of the `graph` operation's data."""
    nodes = [{key: value for key, value in root.items() if key not in ("edges_out", "edges_in")}]
    nodes += [step["node"] for step in walk["steps"]]
    shown = {node["id"] for node in nodes}
    edges = [e for e in root["edges_out"] + root["edges_in"] if e["from"] in shown and e["to"] in shown]
    seen = {(e["from"], e["to"], e["type"]) for e in edges}
    for step in walk["steps"]:  # deeper hops: the edge walked, from the node it came from
        pair = (step["via"], step["node"]["id"], step["edge_type"])
        if step["depth"] > 1 and pair not in seen and (pair[1], pair[0], pair[2]) not in seen:
            seen.add(pair)
            edges.append({"from": pair[0], "to": pair[1], "type": pair[2]})
    return {"count": len(nodes), "total": len(nodes), "nodes": nodes, "edges": edges, "around": root["id"], "query": ""}


def find_query(text: str) -> str:
    """A search box's text as a graph query: the nodes whose content or summary holds it (any case)."""
    phrase = " ".join(text.replace('"', " ").split())
    if not phrase:
        raise InputError("type some words of the node to find, e.g. refunds settle")
    if len(phrase) > MAX_FIND_CHARS:
        raise InputError(f"search for at most {MAX_FIND_CHARS} characters of the node's text")
    return f'"{phrase}"'


def with_labels(node: dict[str, Any], walk: dict[str, Any]) -> dict[str, Any]:
    """The node with `labels`: the type and the start of the content of each node its edges reach (one
    hop of `related`), so its edges read as words, not ids."""
    labels = {
        step["node"]["id"]: {"type": step["node"]["type"], "label": _clip(step["node"]["content"])}
        for step in walk["steps"]
        if step["depth"] == 1
    }
    return {**node, "labels": labels}


def _clip(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= LABEL_CHARS else one[: LABEL_CHARS - 1] + "…"
