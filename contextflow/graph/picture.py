"""Pictures of the graph for people: Mermaid (renders in GitHub and many editors) and Graphviz dot."""

from __future__ import annotations

from contextflow.core.text import clip
from contextflow.graph.stored import StoredGraph
from contextflow.graph.view import Edge, Node

SHAPES = {"decision": ("{{", "}}"), "summary": ("[[", "]]"), "source": ("[(", ")]"), "open-question": ("((", "))")}


def edges_among(state: StoredGraph, nodes: list[Node]) -> list[Edge]:
    ids = {node.id for node in nodes}
    return [edge for node in nodes for edge in state.edges_out(node.id) if edge.target in ids]


def mermaid(state: StoredGraph, nodes: list[Node]) -> str:
    lines = ["graph LR"]
    for node in nodes:
        left, right = SHAPES.get(node.type, ("[", "]"))
        text = f"{node.type}: {clip(node.content, 48)}".replace('"', "#quot;")
        lines.append(f'  n{node.id}{left}"{text}"{right}')
    lines += [f"  n{edge.source} -->|{edge.type}| n{edge.target}" for edge in edges_among(state, nodes)]
    return "\n".join(lines) + "\n"


def _dot_text(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def dot(state: StoredGraph, nodes: list[Node]) -> str:
    lines = ["digraph contextflow {", "  rankdir=LR;", '  node [shape=box, fontname="Helvetica"];']
    for node in nodes:
        lines.append(f'  "{node.id}" [label="{_dot_text(node.type)}\\n{_dot_text(clip(node.content, 48))}"];')
    lines += [f'  "{edge.source}" -> "{edge.target}" [label="{edge.type}"];' for edge in edges_among(state, nodes)]
    lines.append("}")
    return "\n".join(lines) + "\n"
