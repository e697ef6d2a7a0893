"""The graph page's picture: the filter as a graph query, and a deterministic layout of the nodes.

The layout is a small force-directed one (Fruchterman-Reingold): linked nodes pull together,
all nodes push apart, a little gravity keeps them near the middle, the steps cool down; then
the picture is scaled to fill a 1000 x 700 box. It starts from a circle ordered by type and id,
so the same nodes and edges always give the same picture.
"""

from __future__ import annotations

import math
from typing import Any

from contextflow.core.errors import InputError

WIDTH, HEIGHT, MARGIN = 1000.0, 700.0, 40.0
GRAVITY = 1.0  # pull toward the middle, so unlinked nodes do not drift to the edges
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


def layout(nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Node id -> [x, y]."""
    order = sorted(nodes, key=lambda n: (NODE_TYPES.index(n["type"]) if n["type"] in NODE_TYPES else 99, n["id"]))
    count = len(order)
    if count == 0:
        return {}
    cx, cy = WIDTH / 2, HEIGHT / 2
    if count == 1:
        return {order[0]["id"]: [cx, cy]}
    radius = min(WIDTH, HEIGHT) / 2 - MARGIN
    pos = [
        [cx + radius * math.cos(2 * math.pi * i / count), cy + radius * math.sin(2 * math.pi * i / count)]
        for i in range(count)
    ]
    index = {node["id"]: i for i, node in enumerate(order)}
    links = [(index[e["from"]], index[e["to"]]) for e in edges if e["from"] in index and e["to"] in index]
    k = math.sqrt((WIDTH - 2 * MARGIN) * (HEIGHT - 2 * MARGIN) / count)
    steps = max(10, min(80, 400_000 // (count * count)))  # about 0.5 s at most
    heat = WIDTH / 10
    for _ in range(steps):
        move = [[0.0, 0.0] for _ in range(count)]
        for i in range(count):
            xi, yi = pos[i]
            for j in range(i + 1, count):
                dx, dy = xi - pos[j][0], yi - pos[j][1]
                dist2 = dx * dx + dy * dy or 0.01
                push = k * k / dist2
                move[i][0] += dx * push
                move[i][1] += dy * push
                move[j][0] -= dx * push
                move[j][1] -= dy * push
        for a, b in links:
            dx, dy = pos[a][0] - pos[b][0], pos[a][1] - pos[b][1]
            dist = math.sqrt(dx * dx + dy * dy) or 0.1
            pull = dist / k
            move[a][0] -= dx * pull
            move[a][1] -= dy * pull
            move[b][0] += dx * pull
            move[b][1] += dy * pull
        for i in range(count):
            dx = move[i][0] - GRAVITY * (pos[i][0] - cx) * k / 100
            dy = move[i][1] - GRAVITY * (pos[i][1] - cy) * k / 100
            length = math.sqrt(dx * dx + dy * dy) or 1.0
            step = min(length, heat)
            pos[i][0] += dx / length * step
            pos[i][1] += dy / length * step
        heat *= 0.93
    return {node["id"]: xy for node, xy in zip(order, _fit(pos), strict=True)}


def _fit(pos: list[list[float]]) -> list[list[float]]:
    """The positions shrunk (never stretched) to fit the box inside its margins, centred."""
    xs, ys = [p[0] for p in pos], [p[1] for p in pos]
    spans = (max(xs) - min(xs) or 1.0, max(ys) - min(ys) or 1.0)
    scale = min(1.0, (WIDTH - 2 * MARGIN) / spans[0], (HEIGHT - 2 * MARGIN) / spans[1])
    mid = ((max(xs) + min(xs)) / 2, (max(ys) + min(ys)) / 2)
    return [[round(WIDTH / 2 + (x - mid[0]) * scale, 1), round(HEIGHT / 2 + (y - mid[1]) * scale, 1)] for x, y in pos]
