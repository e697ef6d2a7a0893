"""Pictures of the graph for people: Mermaid (renders in GitHub and many editors) and Graphviz dot."""

from __future__ import annotations

from contextflow.graph.view import GraphState, Node
from contextflow.text import clip

SHAPES = {"decision": ("{{", "}}"), "summary": ("[[", "]]"), "source": ("[(", ")]"), "open-question": ("((", "))")}


def _label(node: Node, width: int = 48) -> str:
    return f"{node.type}: {clip(node.content, width)}"


def mermaid(state: GraphState, nodes: list[Node]) -> str:
    ids = {node.id for node in nodes}
    lines = ["graph LR"]
    for node in nodes:
        left, right = SHAPES.get(node.type, ("[", "]"))
        text = _label(node).replace('"', "#quot;")
        lines.append(f'  n{node.id}{left}"{text}"{right}')
    for node in nodes:
        for edge in state.edges_out(node.id):
            if edge.target in ids:
                lines.append(f"  n{edge.source} -->|{edge.type}| n{edge.target}")
    return "\n".join(lines) + "\n"


def _dot_text(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def dot(state: GraphState, nodes: list[Node]) -> str:
    ids = {node.id for node in nodes}
    lines = ["digraph contextflow {", "  rankdir=LR;", '  node [shape=box, fontname="Helvetica"];']
    for node in nodes:
        lines.append(f'  "{node.id}" [label="{_dot_text(node.type)}\\n{_dot_text(clip(node.content, 48))}"];')
    for node in nodes:
        for edge in state.edges_out(node.id):
            if edge.target in ids:
                lines.append(f'  "{edge.source}" -> "{edge.target}" [label="{edge.type}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"
