"""The knowledge graph as seven MCP tools (group "graph").

Few tools, each covering a family of CLI commands: remember (add, link, supersede at once),
recall (query, show, trace, related), link (link, unlink, supersede), update (content,
type, summary, metadata, tags, delete), summarize, compose, status. Handlers only parse,
call contextflow.graph and render.
"""

from __future__ import annotations

from typing import Any

from contextflow.app import App
from contextflow.errors import InputError
from contextflow.graph import explore, model, ops
from contextflow.graph.compose import DEFAULT_QUERY, compose
from contextflow.server.tooling import JSON, Feature, Reply, ToolSpec
from contextflow.text import DATA_NOTICE

_S: JSON = {"type": "string"}
_ID: JSON = {**_S, "description": "Node id or a unique prefix of it."}
_TAGS: JSON = {"type": "array", "items": _S, "maxItems": model.MAX_TAGS,
               "description": "namespace:value tags, e.g. project:shop, task:oauth, tier:reference."}
_QUERY: JSON = {
    **_S, "maxLength": 4000,
    "description": "Filters type:fact, tag:project:x, tag:task:*, created:>24h, updated:<2w, created:>=2024-06-01, "
    "tokens:<500, has:summary, has:edges, from:ID, to:ID, plus words or \"phrases\"; AND, OR, NOT, ( ).",
}
_AGENT: JSON = {**_S, "description": "Your name, e.g. claude, codex."}
_EDGE_TYPE: JSON = {"type": "string", "enum": list(model.EDGE_TYPES)}


def _node_reply(app: App, node_id: str, verb: str) -> Reply:
    """What a write returns: the node's id and state, not its content back (the caller has it)."""
    state = ops.graph(app)
    node = state.nodes[node_id]
    data = {
        "id": node.id, "type": node.type, "tags": sorted(state.tags_of(node.id)), "token_estimate": node.tokens,
        "links": [{"to": e.target, "type": e.type} for e in state.edges_out(node.id)],
        "created_at": node.created_at, "updated_at": node.updated_at,
    }
    return Reply(f"{verb} {node.type} {node.id}.\n" + explore.node_header(state, node), data)


def graph_remember(app: App, args: JSON) -> Reply:
    event = ops.add_node(
        app, type=args.get("type", "observation"), content=args.get("content"), tags=args.get("tags"),
        metadata=args.get("metadata"), summary=args.get("summary"), agent=args.get("agent"),
        links=ops.parse_links(args.get("links")), supersedes=args.get("supersedes"),
    )
    return _node_reply(app, event.id, "Remembered")


def graph_recall(app: App, args: JSON) -> Reply:
    state = ops.graph(app)
    ids, around = args.get("ids"), args.get("around")
    if ids:
        nodes = [ops.resolve(state, node_id) for node_id in ids]
        blocks = [explore.node_text(state, node, with_edges=True) for node in nodes]
        data: JSON = {"nodes": [explore.node_dict(state, node, with_edges=True) for node in nodes]}
        return Reply(DATA_NOTICE + "\n\n" + "\n\n".join(blocks), data)
    if around:
        follow = args.get("follow", "related")
        if follow == "related":
            root, steps = explore.related(app, around, args.get("depth"))
        else:
            root, steps = explore.trace(app, around, reverse=follow == "dependents", max_depth=args.get("depth"))
        title = {"related": "Related to", "provenance": "Provenance of", "dependents": "Depended on by"}[follow]
        data = {"id": root.id, "steps": [{"depth": s.depth, "edge_type": s.edge_type, "via": s.via,
                                           "node": explore.node_dict(state, s.node)} for s in steps]}
        return Reply(DATA_NOTICE + "\n\n" + explore.steps_text(state, root, steps, title), data)
    if "query" not in args:
        raise InputError('graph_recall needs query, ids or around, e.g. {"query": "type:decision AND tag:project:x"}')
    nodes, total = explore.run_query(app, args["query"], args.get("limit", 20))
    data = {"count": len(nodes), "total": total, "nodes": [explore.node_dict(state, n) for n in nodes]}
    return Reply(explore.nodes_text(state, nodes, "Recall", total), data)


def graph_link(app: App, args: JSON) -> Reply:
    source, target, kind = args["from"], args["to"], args.get("type", "RELATES_TO")
    state = ops.graph(app)
    a, b = ops.resolve(state, source, "from"), ops.resolve(state, target, "to")
    if args.get("remove"):
        removed = ops.unlink(app, a.id, b.id, args.get("type"))
        data = {"from": a.id, "to": b.id, "removed": removed}
        return Reply(f"Removed {', '.join(removed)} from {a.id} to {b.id}.", data)
    created = ops.link(app, a.id, b.id, kind)
    note = "" if created else " (it already existed; nothing changed)"
    return Reply(f"Linked {a.id} -{kind}-> {b.id}{note}.", {"from": a.id, "to": b.id, "type": kind, "created": created})


def graph_update(app: App, args: JSON) -> Reply:
    node = ops.resolve(ops.graph(app), args["id"])
    if args.get("delete"):
        deleted = ops.delete_node(app, node.id, cascade=bool(args.get("cascade")))
        return Reply(f"Deleted {', '.join(deleted)} and their edges.", {"id": node.id, "deleted": deleted})
    fields = {name: args[name] for name in ("content", "type", "summary", "metadata") if name in args}
    if not fields and not args.get("add_tags") and not args.get("remove_tags"):
        raise InputError("graph_update needs something to change: content, type, summary, metadata, add_tags, "
                         "remove_tags, or delete: true")
    model.tags(args.get("add_tags"))
    model.tags(args.get("remove_tags"))
    if fields:
        ops.update_node(app, node.id, **fields)
    if args.get("add_tags"):
        ops.tag(app, node.id, args["add_tags"])
    if args.get("remove_tags"):
        ops.untag(app, node.id, args["remove_tags"])
    return _node_reply(app, node.id, "Updated")


def graph_summarize(app: App, args: JSON) -> Reply:
    done = ops.summarize(app, args["ids"], args.get("content"), archive_sources=bool(args.get("archive_sources")),
                         tags=args.get("tags"), agent=args.get("agent"))
    reply = _node_reply(app, done.id, f"Summarized {len(done.sources)} node(s) as")
    data = {**(reply.data or {}), "sources": done.sources, "archived": done.archived}
    return Reply(reply.text + (f"\nArchived: {', '.join(done.archived)}" if done.archived else ""), data)


def graph_compose(app: App, args: JSON) -> Reply:
    result = compose(app, args.get("query"), args.get("budget"), view=args.get("view"),
                     include_archived=bool(args.get("include_archived")))
    data = result.as_dict()
    data.pop("text")
    return Reply(result.text + f"\n({result.report()})", data)


def graph_status(app: App, args: JSON) -> Reply:
    info = explore.status(app)
    return Reply(explore.status_text(info), info)


def _tool(name: str, description: str, properties: JSON, handler: Any, **kwargs: Any) -> ToolSpec:
    return ToolSpec(name, description, properties, handler, group="graph", **kwargs)


TOOLS = [
    _tool(
        "graph_remember",
        "Store a piece of knowledge as a graph node that persists across sessions, agents and machines. "
        "Returns its id. Can link it to existing nodes and replace an outdated one in the same call.",
        {
            "type": {"type": "string", "enum": list(model.NODE_TYPES), "description": "Default observation."},
            "content": {**_S, "description": "The knowledge itself, self-contained."},
            "tags": _TAGS,
            "summary": {**_S, "description": "Short form used when the content does not fit a budget."},
            "metadata": {"type": "object", "description": 'Flat JSON, e.g. {"rationale": "..."}.'},
            "links": {"type": "array", "items": {"type": "object", "properties": {"to": _S, "type": _EDGE_TYPE}},
                      "description": 'Edges from the new node, e.g. [{"to": "ID", "type": "DEPENDS_ON"}].'},
            "supersedes": {**_S, "description": "Id of a node this one replaces; it leaves composed context."},
            "agent": _AGENT,
        },
        graph_remember, required=("content",), read_only=False,
    ),
    _tool(
        "graph_recall",
        "Find stored knowledge: nodes matching a query (newest first), full nodes with their edges by id, "
        "or the nodes around one node (related, provenance, dependents).",
        {
            "query": _QUERY,
            "ids": {"type": "array", "items": _S, "maxItems": 50, "description": "Show these nodes in full."},
            "around": {**_ID, "description": "Walk the graph from this node."},
            "follow": {"type": "string", "enum": ["related", "provenance", "dependents"],
                       "description": "With around: any edge (default), what it derives from, or what rests on it."},
            "depth": {"type": "integer", "minimum": 1, "maximum": 10},
            "limit": {"type": "integer", "minimum": 1, "maximum": 200, "description": "Default 20."},
        },
        graph_recall,
    ),
    _tool(
        "graph_link",
        "Link two nodes with a typed edge (linking twice is a no-op), or remove edges with remove: true. "
        "SUPERSEDES from the new node to the old marks the old one replaced.",
        {"from": _ID, "to": _ID, "type": {**_EDGE_TYPE, "description": "Default RELATES_TO."},
         "remove": {"type": "boolean", "description": "Remove the edge(s) instead; all types unless type is given."}},
        graph_link, required=("from", "to"), read_only=False,
    ),
    _tool(
        "graph_update",
        "Change a node (content, type, summary, metadata; a null metadata value removes the key), add or remove "
        "tags (tier:off-context archives), or delete it with its edges.",
        {
            "id": _ID, "content": _S, "type": {"type": "string", "enum": list(model.NODE_TYPES)}, "summary": _S,
            "metadata": {"type": "object"}, "add_tags": _TAGS, "remove_tags": _TAGS,
            "delete": {"type": "boolean"},
            "cascade": {"type": "boolean", "description": "With delete: also delete nodes derived from it."},
        },
        graph_update, required=("id",), read_only=False, destructive=True,
    ),
    _tool(
        "graph_summarize",
        "Write a summary node of several nodes, linked to each by DERIVED_FROM so its provenance stays "
        "traceable; archive_sources moves the sources out of default context.",
        {"ids": {"type": "array", "items": _S, "maxItems": 500}, "content": {**_S, "description": "The summary."},
         "archive_sources": {"type": "boolean"}, "tags": _TAGS, "agent": _AGENT},
        graph_summarize, required=("ids", "content"), read_only=False,
    ),
    _tool(
        "graph_compose",
        "Compose stored knowledge into markdown context within a token budget: pinned first, then by tier, "
        "then most recent; reports what did not fit.",
        {"query": {**_QUERY, "description": f"Default: {DEFAULT_QUERY}"},
         "view": {**_S, "description": "A saved view's name instead of query."},
         "budget": {"type": "integer", "minimum": 1, "maximum": model.MAX_BUDGET, "description": "Default 50000."},
         "include_archived": {"type": "boolean"}},
        graph_compose,
    ),
    _tool("graph_status", "Memory overview: node counts per type, tokens, edges, tags, tier breakdown.", {},
          graph_status),
]

FEATURE = Feature(tools=TOOLS)
