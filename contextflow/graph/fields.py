"""The shape of every field of the graph's events (core/fields.py checks them as lines are read), and the
vocabulary and limits its table and its core both use (this module stays light: the table imports it)."""

from contextflow.core.fields import INT, OBJECT, STR, STRS, Shape, listof, record

NODE_TYPES = ("fact", "decision", "pattern", "observation", "hypothesis", "task", "summary", "source", "open-question")
EDGE_TYPES = ("DERIVED_FROM", "DEPENDS_ON", "SUPERSEDES", "RELATES_TO", "CHILD_OF")
MAX_TAGS = 50
DEFAULT_VIEW_BUDGET = 50_000
MAX_BUDGET = 2_000_000
BUDGET = (1, MAX_BUDGET)
MAX_CONTENT_CHARS = 500_000
MAX_SUMMARY_CHARS = 20_000
MAX_QUERY_CHARS = 4000
MAX_NAME_CHARS = 200  # an agent's name, a tag prefix
DIRECTIONS = ("in", "out", "both")
FOLLOWS = ("related", "provenance", "dependents")  # graph_recall's walks around a node
LIMIT = (1, 10_000)  # nodes a query, list or picture shows
DEFAULT_LIMIT = 50  # a query's
DEFAULT_LIST_LIMIT = 20
DEFAULT_PICTURE_LIMIT = 200
RECALL_LIMIT = (1, 200)  # graph_recall's
DEFAULT_RECALL_LIMIT = 20
RELATED_DEPTH = (1, 10)  # hops along any edge; also graph_recall's depth
DEFAULT_RELATED_DEPTH = 1
TRACE_DEPTH = (1, 100)  # hops along provenance edges
DEFAULT_TRACE_DEPTH = 20
MAX_RECALL_IDS = 50
MAX_SUMMARIZED = 500

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
