"""The knowledge graph: seven MCP tools (group "graph") and the graph commands.

Each tool covers a family of commands: graph_remember (add), graph_recall (query, show, trace,
related), graph_link (link, unlink, supersede), graph_update (update, tag, untag, delete),
graph_summarize (summarize), graph_compose (compose, view render), graph_status (status).
Where a tool and a command take the same arguments they are one row; where they differ
(stdin, key=value metadata, required flags) they are two rows over the same presenter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from contextflow.graph.fields import (
    BUDGET,
    DEFAULT_LIMIT,
    DEFAULT_LIST_LIMIT,
    DEFAULT_PICTURE_LIMIT,
    DEFAULT_RECALL_LIMIT,
    DEFAULT_RELATED_DEPTH,
    DEFAULT_TRACE_DEPTH,
    DEFAULT_VIEW_BUDGET,
    DIRECTIONS,
    EDGE_TYPES,
    FOLLOWS,
    LIMIT,
    MAX_NAME_CHARS,
    MAX_QUERY_CHARS,
    MAX_RECALL_IDS,
    MAX_SUMMARIZED,
    MAX_TAGS,
    NODE_TYPES,
    RECALL_LIMIT,
    RELATED_DEPTH,
    TRACE_DEPTH,
)
from contextflow.operations.spec import FORMATS, JSON, Operation, Param, Table, cli_only, deferred

if TYPE_CHECKING:
    from contextflow.graph import present
else:
    present = deferred("contextflow.graph.present")


# A copy of contextflow.graph.compose's default query, so that reading the table stays cheap (a test checks).
DEFAULT_QUERY = (
    "tag:tier:pinned OR tag:tier:reference OR tag:tier:working OR (type:observation AND created:>24h)"
    " OR (NOT tag:tier:* AND created:>7d)"
)

_S: JSON = {"type": "string"}
_BOOL: JSON = {"type": "boolean"}
_STRINGS: JSON = {"type": "array", "items": _S}
_TAG_LIST: JSON = {**_STRINGS, "maxItems": MAX_TAGS}
_ID: JSON = {**_S, "description": "Node id or a unique prefix of it."}
_TAGS: JSON = {
    "type": "array",
    "items": _S,
    "maxItems": MAX_TAGS,
    "description": "namespace:value tags, e.g. project:shop, task:oauth, tier:reference.",
}
_QUERY: JSON = {
    **_S,
    "maxLength": MAX_QUERY_CHARS,
    "description": "Filters type:fact, tag:project:x, tag:task:*, created:>24h, updated:<2w, created:>=2024-06-01, "
    'tokens:<500, has:summary, has:edges, from:ID, to:ID, plus words or "phrases"; '
    "NOT, AND, OR (binding in that order), ( ).",
}
_AGENT: JSON = {**_S, "description": "Your name, e.g. claude, codex."}
_EDGE_TYPE: JSON = {"type": "string", "enum": list(EDGE_TYPES)}
_NODE_TYPE: JSON = {"type": "string", "enum": list(NODE_TYPES)}
_QUERY_TEXT: JSON = {**_S, "maxLength": MAX_QUERY_CHARS}


def _range(low_high: tuple[int, int], description: str | None = None) -> JSON:
    """A whole number from low to high."""
    schema: JSON = {"type": "integer", "minimum": low_high[0], "maximum": low_high[1]}
    return {**schema, "description": description} if description else schema


# -- CLI parameters ----------------------------------------------------------------------------


def _arg(name: str, schema: JSON = _S, help: str | None = None, **cli: Any) -> Param:
    """A command-line argument (tool=False): `help` is its --help text."""
    return Param(name, schema, tool=False, cli_help=help, **cli)


NODE_ID = _arg("id", required=True, positional=True)
# show, list, query and export also render nodes as ctx markdown
FORMAT = _arg("format", {**_S, "enum": [*FORMATS, "markdown"]}, "output format (default text)", cli_default="text")
STDIN = _arg("stdin", _BOOL, "read the content from standard input")
TAG = _arg("tags", _TAG_LIST, "a namespace:value tag (repeatable)", flag="--tag")
AGENT = _arg("agent", help="who writes it (default 'human')", cli_default="human")
INCLUDE_ARCHIVED = _arg("include_archived", _BOOL, "also load tier:off-context nodes")
ENDS = (
    _arg("source", required=True, positional=True, metavar="FROM"),
    _arg("target", required=True, positional=True, metavar="TO"),
)
TAGGED = (NODE_ID, _arg("tags", _TAG_LIST, required=True, positional=True, metavar="TAG"))


COMMANDS = (
    cli_only(
        "add",
        "Add a knowledge node.",
        (
            _arg("content", help="the node's content (or --stdin)", positional=True),
            _arg("type", _NODE_TYPE, "node type", required=True),
            TAG,
            _arg("meta", _STRINGS, "metadata key=value (repeatable)"),
            _arg("summary", help="a short summary of the content"),
            _arg("supersedes", help="id of a node this one replaces"),
            AGENT,
            STDIN,
        ),
        present.add,
        read_only=False,
        cli_description="Add a node, e.g. add --type fact --tag tier:reference TEXT",
    ),
    cli_only(
        "show",
        "Show a node.",
        (NODE_ID, _arg("with_edges", _BOOL, "also list its edges"), FORMAT),
        present.show,
        cli_description="Show one node by id or unique id prefix.",
    ),
    cli_only(
        "update",
        "Change a node.",
        (
            NODE_ID,
            _arg("content"),
            _arg("type", _NODE_TYPE),
            _arg("summary"),
            _arg("meta", _STRINGS, "key=value to set, key= to remove (repeatable)"),
            _arg("stdin", _BOOL, "read the new content from standard input"),
        ),
        present.update,
        read_only=False,
        cli_description="Change a node's content, type, summary or metadata.",
    ),
    cli_only(
        "delete",
        "Delete a node and its edges.",
        (NODE_ID, _arg("cascade", _BOOL, "also delete nodes DERIVED_FROM it (recursively)")),
        present.delete,
        read_only=False,
        cli_description="Delete a node; its edges go with it.",
    ),
    cli_only(
        "list",
        "List nodes, newest first.",
        (
            _arg("type", _NODE_TYPE),
            _arg("tag"),
            _arg("since", help="a duration back from now, e.g. 1h, 7d (or a date)"),
            _arg("limit", _range(LIMIT), cli_default=DEFAULT_LIST_LIMIT),
            FORMAT,
        ),
        present.list_nodes,
        cli_description="List nodes, most recently updated first.",
    ),
    cli_only(
        "link",
        "Link two nodes.",
        (*ENDS, _arg("type", help=f"one of {', '.join(EDGE_TYPES)}", cli_default="RELATES_TO")),
        present.link,
        read_only=False,
        cli_description="Add a typed edge FROM -> TO (linking twice is a no-op).",
    ),
    cli_only(
        "unlink",
        "Remove edges between two nodes.",
        (*ENDS, _arg("type", help="only this edge type")),
        present.unlink,
        read_only=False,
        cli_description="Remove edges FROM -> TO (of one type, or all).",
    ),
    cli_only(
        "edges",
        "Show a node's edges.",
        (NODE_ID, _arg("direction", {**_S, "enum": list(DIRECTIONS)}, cli_default="both")),
        present.edges,
        cli_description="Show the edges of a node.",
    ),
    cli_only(
        "tag",
        "Add tags to a node.",
        TAGGED,
        present.tag,
        read_only=False,
        cli_description="Add tags to a node (namespace:value, e.g. tier:working).",
    ),
    cli_only(
        "untag",
        "Remove tags from a node.",
        TAGGED,
        present.untag,
        read_only=False,
        cli_description="Remove tags from a node (namespace:value, e.g. tier:working).",
    ),
    cli_only(
        "tags",
        "List tags with node counts.",
        (_arg("prefix", {**_S, "maxLength": MAX_NAME_CHARS}, "only tags starting with this, e.g. task:"),),
        present.tags,
        cli_description="List the tags in use and how many nodes carry each.",
    ),
    cli_only(
        "query",
        "Find nodes with the query language.",
        (
            _arg("query", _QUERY_TEXT, required=True, positional=True),
            _arg("limit", _range(LIMIT), cli_default=DEFAULT_LIMIT),
            FORMAT,
        ),
        present.query,
        cli_description='Find nodes, e.g. contextflow query "type:decision AND created:>7d". See docs/graph.md.',
    ),
    cli_only(
        "trace",
        "Show provenance.",
        (
            NODE_ID,
            _arg("reverse", _BOOL, "what depends on or derives from this node instead"),
            _arg("depth", _range(TRACE_DEPTH), cli_default=DEFAULT_TRACE_DEPTH),
        ),
        present.trace,
        cli_description="What a node was derived from or depends on, recursively.",
    ),
    cli_only(
        "related",
        "Nodes near a node.",
        (NODE_ID, _arg("depth", _range(RELATED_DEPTH), cli_default=DEFAULT_RELATED_DEPTH)),
        present.related,
        cli_description="Nodes within --depth hops along any edge.",
    ),
    cli_only(
        "summarize",
        "Summarize nodes with provenance.",
        (
            _arg("ids", _STRINGS, required=True, positional=True, metavar="ID"),
            _arg("content", help="the summary text (or --stdin)"),
            _arg("stdin", _BOOL, "read the summary from standard input"),
            _arg("archive_sources", _BOOL, "move the sources to tier:off-context"),
            TAG,
            AGENT,
        ),
        present.summarize,
        read_only=False,
        cli_description="Create a summary node with DERIVED_FROM edges to each source.",
    ),
    cli_only(
        "supersede",
        "Mark a node as replaced by another.",
        (_arg("old", required=True, positional=True), _arg("new", required=True, positional=True)),
        present.supersede,
        read_only=False,
        cli_description="Mark OLD as superseded by NEW; superseded nodes leave composed context.",
    ),
    cli_only(
        "view create",
        "Save a view.",
        (
            _arg("name", required=True, positional=True),
            _arg("query", _QUERY_TEXT, 'e.g. "type:fact OR type:decision"', required=True),
            _arg("budget", _range(BUDGET), "token budget (default 50000)", cli_default=DEFAULT_VIEW_BUDGET),
        ),
        present.view_create,
        read_only=False,
        cli_description="Save (or replace) a named view.",
    ),
    cli_only("view list", "List views.", (), present.view_list, cli_description="List saved views."),
    cli_only(
        "view render",
        "Compose a view.",
        (
            _arg("view", required=True, positional=True, metavar="name"),
            _arg("budget", _range(BUDGET), "override the view's budget"),
            INCLUDE_ARCHIVED,
        ),
        present.graph_compose,
        cli_description="Compose context from a saved view.",
    ),
    cli_only(
        "view delete",
        "Delete a view.",
        (_arg("name", required=True, positional=True),),
        present.view_delete,
        read_only=False,
        cli_description="Delete a saved view.",
    ),
    cli_only(
        "ingest",
        "Store a text file as a source node.",
        (_arg("file", required=True, positional=True), TAG, AGENT),
        present.ingest,
        read_only=False,
        cli_description="Store a text file as a `source` node (an unchanged file is not stored twice; a changed one "
        "supersedes its previous version).",
    ),
    cli_only(
        "graph",
        "Draw the graph (Mermaid or dot).",
        (
            _arg("query", _QUERY_TEXT, positional=True),
            _arg(
                "format", {**_S, "enum": ["mermaid", "dot"]}, "picture format (default mermaid)", cli_default="mermaid"
            ),
            _arg(
                "limit",
                _range(LIMIT),
                f"at most this many nodes (default {DEFAULT_PICTURE_LIMIT})",
                cli_default=DEFAULT_PICTURE_LIMIT,
            ),
        ),
        present.picture,
        cli_description="Print a Mermaid or Graphviz dot picture of the nodes a query matches (default: all) and the "
        "edges between them.",
    ),
)

TOOLS = (
    Operation(
        "graph_remember",
        "Store a piece of knowledge as a graph node that persists across sessions, agents and machines. "
        "Returns its id. Can link it to existing nodes and replace an outdated one in the same call.",
        (
            Param("type", {**_NODE_TYPE, "description": "Default observation."}),
            Param("content", {**_S, "description": "The knowledge itself, self-contained."}, required=True),
            Param("tags", _TAGS),
            Param("summary", {**_S, "description": "Short form used when the content does not fit a budget."}),
            Param("metadata", {"type": "object", "description": 'Flat JSON, e.g. {"rationale": "..."}.'}),
            Param(
                "links",
                {
                    "type": "array",
                    "items": {"type": "object", "properties": {"to": _S, "type": _EDGE_TYPE}},
                    "description": 'Edges from the new node, e.g. [{"to": "ID", "type": "DEPENDS_ON"}].',
                },
            ),
            Param("supersedes", {**_S, "description": "Id of a node this one replaces; it leaves composed context."}),
            Param("agent", _AGENT),
        ),
        present.graph_remember,
        read_only=False,
    ),
    Operation(
        "graph_recall",
        "Find stored knowledge: nodes matching a query (newest first), full nodes with their edges by id, "
        "or the nodes around one node (related, provenance, dependents).",
        (
            Param("query", _QUERY),
            Param("ids", {**_STRINGS, "maxItems": MAX_RECALL_IDS, "description": "Show these nodes in full."}),
            Param("around", {**_ID, "description": "Walk the graph from this node."}),
            Param(
                "follow",
                {
                    "type": "string",
                    "enum": list(FOLLOWS),
                    "description": "With around: any edge (default), what it derives from, or what rests on it.",
                },
            ),
            Param("depth", _range(RELATED_DEPTH)),
            Param("limit", _range(RECALL_LIMIT, f"Default {DEFAULT_RECALL_LIMIT}.")),
        ),
        present.graph_recall,
    ),
    Operation(
        "graph_link",
        "Link two nodes with a typed edge (linking twice is a no-op), or remove edges with remove: true. "
        "SUPERSEDES from the new node to the old marks the old one replaced.",
        (
            Param("from", _ID, required=True),
            Param("to", _ID, required=True),
            Param("type", {**_EDGE_TYPE, "description": "Default RELATES_TO."}),
            Param(
                "remove",
                {"type": "boolean", "description": "Remove the edge(s) instead; all types unless type is given."},
            ),
        ),
        present.graph_link,
        read_only=False,
    ),
    Operation(
        "graph_update",
        "Change a node (content, type, summary, metadata; a null metadata value removes the key), add or remove "
        "tags (tier:off-context archives), or delete it with its edges.",
        (
            Param("id", _ID, required=True),
            Param("content", _S),
            Param("type", _NODE_TYPE),
            Param("summary", _S),
            Param("metadata", {"type": "object"}),
            Param("add_tags", _TAGS),
            Param("remove_tags", _TAGS),
            Param("delete", _BOOL),
            Param("cascade", {"type": "boolean", "description": "With delete: also delete nodes derived from it."}),
            Param("agent", _AGENT, tool=False),  # who changes it (the web page passes the person)
        ),
        present.graph_update,
        read_only=False,
        destructive=True,
    ),
    Operation(
        "graph_summarize",
        "Write a summary node of several nodes, linked to each by DERIVED_FROM so its provenance stays "
        "traceable; archive_sources moves the sources out of default context.",
        (
            Param("ids", {**_STRINGS, "maxItems": MAX_SUMMARIZED}, required=True),
            Param("content", {**_S, "description": "The summary."}, required=True),
            Param("archive_sources", _BOOL),
            Param("tags", _TAGS),
            Param("agent", _AGENT),
        ),
        present.graph_summarize,
        read_only=False,
    ),
    Operation(
        "graph_compose",
        "Compose stored knowledge into markdown context within a token budget: pinned first, then by tier, "
        "then most recent; reports what did not fit.",
        (
            Param(
                "query", {**_QUERY, "description": f"Default: {DEFAULT_QUERY}"}, cli_help=f"default: {DEFAULT_QUERY}"
            ),
            Param("view", {**_S, "description": "A saved view's name instead of query."}, cli=False),
            Param(
                "budget",
                _range(BUDGET, f"Default {DEFAULT_VIEW_BUDGET}."),
                cli_default=DEFAULT_VIEW_BUDGET,
                cli_help="tokens (default 50000)",
            ),
            Param("include_archived", _BOOL, cli_help="also load tier:off-context nodes"),
            Param("include_superseded", _BOOL, tool=False, cli_help="also load superseded nodes"),
        ),
        present.graph_compose,
        command=("compose",),
        cli_description="Compose markdown context from a query within a token budget: pinned first, then by tier, "
        "then most recent. What did not fit is reported on stderr.",
    ),
    Operation(
        "graph_status",
        "Memory overview: node counts per type, tokens, edges, tags, tier breakdown.",
        (),
        present.graph_status,
        command=("status",),
        cli_description="Node counts per type, token estimates, edges, tags and the tier breakdown.",
    ),
)

TABLE = Table(operations=TOOLS + COMMANDS)
