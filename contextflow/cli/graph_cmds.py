"""Knowledge graph commands: add, show, update, delete, list, link, unlink, edges, tag, untag,
tags, query, trace, related, summarize, supersede. Thin: parse, call contextflow.graph, render."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from contextflow.app import App
from contextflow.cli.output import add_format, emit
from contextflow.errors import InputError
from contextflow.graph import explore, model, ops
from contextflow.graph.compose import render_node
from contextflow.graph.view import GraphState, Node


def _parser(sub: Any, name: str, help_text: str, description: str | None = None) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help_text, description=description or help_text)
    return parser


def register(sub: Any) -> None:
    add = _parser(sub, "add", "add a knowledge node", "Add a node, e.g. add --type fact --tag tier:reference TEXT")
    add.add_argument("content", nargs="?", help="the node's content (or --stdin)")
    add.add_argument("--type", required=True, choices=model.NODE_TYPES, help="node type")
    add.add_argument("--tag", action="append", dest="tags", help="a namespace:value tag (repeatable)")
    add.add_argument("--meta", action="append", help="metadata key=value (repeatable)")
    add.add_argument("--summary", help="a short summary of the content")
    add.add_argument("--supersedes", help="id of a node this one replaces")
    add.add_argument("--agent", default="human", help="who writes it (default 'human')")
    add.add_argument("--stdin", action="store_true", help="read the content from standard input")
    add_format(add)
    add.set_defaults(func=cmd_add)

    show = _parser(sub, "show", "show a node", "Show one node by id or unique id prefix.")
    show.add_argument("id")
    show.add_argument("--with-edges", action="store_true", help="also list its edges")
    add_format(show)
    show.set_defaults(func=cmd_show)

    update = _parser(sub, "update", "change a node", "Change a node's content, type, summary or metadata.")
    update.add_argument("id")
    update.add_argument("--content")
    update.add_argument("--type", choices=model.NODE_TYPES)
    update.add_argument("--summary")
    update.add_argument("--meta", action="append", help="key=value to set, key= to remove (repeatable)")
    update.add_argument("--stdin", action="store_true", help="read the new content from standard input")
    add_format(update)
    update.set_defaults(func=cmd_update)

    delete = _parser(sub, "delete", "delete a node and its edges", "Delete a node; its edges go with it.")
    delete.add_argument("id")
    delete.add_argument("--cascade", action="store_true", help="also delete nodes DERIVED_FROM it (recursively)")
    add_format(delete)
    delete.set_defaults(func=cmd_delete)

    listing = _parser(sub, "list", "list nodes, newest first", "List nodes, most recently updated first.")
    listing.add_argument("--type", choices=model.NODE_TYPES)
    listing.add_argument("--tag")
    listing.add_argument("--since", help="a duration back from now, e.g. 1h, 7d (or a date)")
    listing.add_argument("--limit", type=int, default=20)
    add_format(listing)
    listing.set_defaults(func=cmd_list)

    link = _parser(sub, "link", "link two nodes", "Add a typed edge FROM -> TO (linking twice is a no-op).")
    link.add_argument("source", metavar="FROM")
    link.add_argument("target", metavar="TO")
    link.add_argument("--type", default="RELATES_TO", help=f"one of {', '.join(model.EDGE_TYPES)}")
    add_format(link)
    link.set_defaults(func=cmd_link)

    unlink = _parser(sub, "unlink", "remove edges between two nodes", "Remove edges FROM -> TO (of one type, or all).")
    unlink.add_argument("source", metavar="FROM")
    unlink.add_argument("target", metavar="TO")
    unlink.add_argument("--type", help="only this edge type")
    add_format(unlink)
    unlink.set_defaults(func=cmd_unlink)

    edges = _parser(sub, "edges", "show a node's edges", "Show the edges of a node.")
    edges.add_argument("id")
    edges.add_argument("--direction", choices=("in", "out", "both"), default="both")
    add_format(edges)
    edges.set_defaults(func=cmd_edges)

    for name, func, text in (("tag", cmd_tag, "add tags to a node"), ("untag", cmd_untag, "remove tags from a node")):
        parser = _parser(sub, name, text, f"{text[0].upper()}{text[1:]} (namespace:value, e.g. tier:working).")
        parser.add_argument("id")
        parser.add_argument("tags", nargs="+", metavar="TAG")
        add_format(parser)
        parser.set_defaults(func=func)

    tags = _parser(sub, "tags", "list tags with node counts", "List the tags in use and how many nodes carry each.")
    tags.add_argument("--prefix", help="only tags starting with this, e.g. task:")
    add_format(tags)
    tags.set_defaults(func=cmd_tags)

    query = _parser(sub, "query", "find nodes with the query language",
                    'Find nodes, e.g. contextflow query "type:decision AND created:>7d". See docs/graph.md.')
    query.add_argument("query")
    query.add_argument("--limit", type=int, default=50)
    add_format(query)
    query.set_defaults(func=cmd_query)

    trace = _parser(sub, "trace", "show provenance", "What a node was derived from or depends on, recursively.")
    trace.add_argument("id")
    trace.add_argument("--reverse", action="store_true", help="what depends on or derives from this node instead")
    trace.add_argument("--depth", type=int, default=20)
    add_format(trace)
    trace.set_defaults(func=cmd_trace)

    related = _parser(sub, "related", "nodes near a node", "Nodes within --depth hops along any edge.")
    related.add_argument("id")
    related.add_argument("--depth", type=int, default=1)
    add_format(related)
    related.set_defaults(func=cmd_related)

    summarize = _parser(sub, "summarize", "summarize nodes with provenance",
                        "Create a summary node with DERIVED_FROM edges to each source.")
    summarize.add_argument("ids", nargs="+", metavar="ID")
    summarize.add_argument("--content", help="the summary text (or --stdin)")
    summarize.add_argument("--stdin", action="store_true", help="read the summary from standard input")
    summarize.add_argument("--archive-sources", action="store_true", help="move the sources to tier:off-context")
    summarize.add_argument("--tag", action="append", dest="tags")
    summarize.add_argument("--agent", default="human")
    add_format(summarize)
    summarize.set_defaults(func=cmd_summarize)

    supersede = _parser(sub, "supersede", "mark a node as replaced by another",
                        "Mark OLD as superseded by NEW; superseded nodes leave composed context.")
    supersede.add_argument("old")
    supersede.add_argument("new")
    add_format(supersede)
    supersede.set_defaults(func=cmd_supersede)


def _content(args: argparse.Namespace, value: str | None) -> str | None:
    if args.stdin:
        if value:
            raise InputError("pass the content as an argument or with --stdin, not both")
        return sys.stdin.read()
    return value


def _markdown(state: GraphState, nodes: list[Node]) -> str:
    return "".join(render_node(state, node) for node in nodes) or "(no matching nodes)\n"


def _nodes_out(args: argparse.Namespace, app: App, nodes: list[Node], total: int, title: str) -> None:
    state = ops.graph(app)
    text = _markdown(state, nodes) if args.format == "markdown" else explore.nodes_text(state, nodes, title, total)
    emit(args, text, {"count": len(nodes), "total": total, "nodes": [explore.node_dict(state, n) for n in nodes]})


def cmd_add(args: argparse.Namespace, app: App) -> int:
    content = _content(args, args.content)
    if content is None:
        raise InputError("add needs the content: pass it as an argument or with --stdin")
    event = ops.add_node(
        app, type=args.type, content=content, tags=args.tags, metadata=model.meta_pairs(args.meta),
        summary=args.summary, agent=args.agent, supersedes=args.supersedes,
    )
    state = ops.graph(app)
    emit(args, f"Added: {event.id}", explore.node_dict(state, state.nodes[event.id]))
    return 0


def cmd_show(args: argparse.Namespace, app: App) -> int:
    state = ops.graph(app)
    node = ops.resolve(state, args.id)
    if args.format == "markdown":
        emit(args, render_node(state, node), None)
        return 0
    text = explore.node_text(state, node, with_edges=args.with_edges)
    emit(args, text, explore.node_dict(state, node, with_edges=args.with_edges))
    return 0


def cmd_update(args: argparse.Namespace, app: App) -> int:
    node = ops.update_node(
        app, args.id, content=_content(args, args.content), type=args.type, summary=args.summary,
        metadata=model.meta_pairs(args.meta) or None,
    )
    emit(args, f"Updated: {node.id}", explore.node_dict(ops.graph(app), node))
    return 0


def cmd_delete(args: argparse.Namespace, app: App) -> int:
    deleted = ops.delete_node(app, args.id, cascade=args.cascade)
    emit(args, "Deleted: " + ", ".join(deleted), {"deleted": deleted})
    return 0


def cmd_list(args: argparse.Namespace, app: App) -> int:
    nodes, total = explore.list_nodes(app, type=args.type, tag=args.tag, since=args.since, limit=args.limit)
    _nodes_out(args, app, nodes, total, "Nodes")
    return 0


def cmd_query(args: argparse.Namespace, app: App) -> int:
    nodes, total = explore.run_query(app, args.query, args.limit)
    _nodes_out(args, app, nodes, total, "Query results")
    return 0


def cmd_link(args: argparse.Namespace, app: App) -> int:
    created = ops.link(app, args.source, args.target, args.type)
    state = ops.graph(app)
    a, b = ops.resolve(state, args.source), ops.resolve(state, args.target)
    kind = model.edge_type(args.type)
    text = f"Linked: {a.id} -{kind}-> {b.id}" + ("" if created else " (already linked)")
    emit(args, text, {"from": a.id, "to": b.id, "type": kind, "created": created})
    return 0


def cmd_unlink(args: argparse.Namespace, app: App) -> int:
    removed = ops.unlink(app, args.source, args.target, args.type)
    emit(args, "Unlinked: " + ", ".join(removed), {"removed": removed})
    return 0


def cmd_edges(args: argparse.Namespace, app: App) -> int:
    node, out, inc = explore.edges_of(app, args.id, args.direction)
    state = ops.graph(app)
    lines = [explore.node_header(state, node)]
    lines += [f"  -> {explore.edge_text(edge, state)}" for edge in out]
    lines += [f"  <- {explore.edge_text(edge, state, incoming=True)}" for edge in inc]
    if not out and not inc:
        lines.append("  (no edges)")
    emit(args, "\n".join(lines), {"id": node.id, "out": [e.as_dict() for e in out], "in": [e.as_dict() for e in inc]})
    return 0


def cmd_tag(args: argparse.Namespace, app: App) -> int:
    node = ops.resolve(ops.graph(app), args.id)
    added = ops.tag(app, node.id, args.tags)
    emit(args, f"Tagged {node.id}: " + (", ".join(added) or "(already tagged)"), {"id": node.id, "added": added})
    return 0


def cmd_untag(args: argparse.Namespace, app: App) -> int:
    node = ops.resolve(ops.graph(app), args.id)
    removed = ops.untag(app, node.id, args.tags)
    text = f"Untagged {node.id}: " + (", ".join(removed) or "(was not tagged)")
    emit(args, text, {"id": node.id, "removed": removed})
    return 0


def cmd_tags(args: argparse.Namespace, app: App) -> int:
    counts = explore.tag_counts(app, args.prefix)
    text = "\n".join(f"{name}  ({count})" for name, count in counts) or "(no tags)"
    emit(args, text, [{"tag": name, "nodes": count} for name, count in counts])
    return 0


def _steps(args: argparse.Namespace, app: App, root: Node, steps: list[explore.Step], title: str) -> None:
    state = ops.graph(app)
    data = {"id": root.id, "steps": [
        {"depth": s.depth, "edge_type": s.edge_type, "via": s.via, "node": explore.node_dict(state, s.node)}
        for s in steps
    ]}
    emit(args, explore.steps_text(state, root, steps, title), data)


def cmd_trace(args: argparse.Namespace, app: App) -> int:
    root, steps = explore.trace(app, args.id, reverse=args.reverse, max_depth=args.depth)
    _steps(args, app, root, steps, "Depended on by" if args.reverse else "Provenance of")
    return 0


def cmd_related(args: argparse.Namespace, app: App) -> int:
    root, steps = explore.related(app, args.id, args.depth)
    _steps(args, app, root, steps, "Related to")
    return 0


def cmd_summarize(args: argparse.Namespace, app: App) -> int:
    content = _content(args, args.content)
    if content is None:
        raise InputError("summarize needs the summary text: pass --content TEXT or --stdin")
    done = ops.summarize(app, args.ids, content, archive_sources=args.archive_sources, tags=args.tags, agent=args.agent)
    text = f"Created summary: {done.id}" + (f"\nArchived: {', '.join(done.archived)}" if done.archived else "")
    emit(args, text, {"id": done.id, "sources": done.sources, "archived": done.archived})
    return 0


def cmd_supersede(args: argparse.Namespace, app: App) -> int:
    state = ops.graph(app)
    old, new = ops.resolve(state, args.old, "old id"), ops.resolve(state, args.new, "new id")
    created = ops.supersede(app, old.id, new.id)
    text = f"Superseded: {old.id} by {new.id}" + ("" if created else " (already)")
    emit(args, text, {"old": old.id, "new": new.id, "created": created})
    return 0
