"""The shape of every field of the graph's events (core/fields.py checks them as lines are read)."""

from contextflow.core.fields import INT, OBJECT, STR, STRS, Shape, listof, record

_NODE: dict[str, Shape] = {"type": STR, "content": STR, "summary": STR, "metadata": OBJECT}
_EDGE: dict[str, Shape] = {"from": STR, "to": STR, "type": STR, "metadata": OBJECT}
FIELDS: dict[str, dict[str, Shape]] = {
    "graph.node": {**_NODE, "tags": STRS, "origin": STR, "links": listof(record({"to": STR, "type": STR}))},
    "graph.node_update": {**_NODE, "node": STR},
    "graph.node_delete": {"node": STR},
    "graph.edge": _EDGE,
    "graph.edge_delete": _EDGE,
    "graph.tag": {"node": STR, "tags": STRS},
    "graph.untag": {"node": STR, "tags": STRS},
    "graph.view": {"name": STR, "query": STR, "budget": INT},
    "graph.view_delete": {"name": STR},
}
