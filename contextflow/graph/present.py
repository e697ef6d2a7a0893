"""The graph tools and commands: call contextflow.graph, answer with text and JSON.

A tool and the commands of its family share one payload per result: a written node
(`_written`: the node with its tags and outgoing links), a list of nodes (`_nodes`), a walk (`_walk`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path

from contextflow.app import App
from contextflow.core.errors import InputError, arg, tool
from contextflow.core.text import DATA_NOTICE
from contextflow.graph import explore, model, transfer, writes
from contextflow.graph import picture as pictures
from contextflow.graph.compose import compose, render_node
from contextflow.graph.fields import DEFAULT_RECALL_LIMIT
from contextflow.graph.render import (
    edge_lines,
    node_header,
    node_text,
    nodes_markdown,
    nodes_text,
    status_text,
    steps_text,
)
from contextflow.graph.view import Node
from contextflow.operations.spec import JSON, Reply, given, partial

Handler = Callable[[App, JSON], Reply]

# -- payloads --------------------------------------------------------------------------------


def _read(handler: Handler) -> Handler:
    """A reading handler whose reply says it is partial when the graph was read while the build had not
    reached most of the logs (only their newest bytes were read beside the tables: `ondisk.partial`)."""

    @functools.wraps(handler)
    def answer(app: App, args: JSON) -> Reply:
        from contextflow import ondisk
        from contextflow.graph.projection import PROJECTION

        return partial(handler(app, args), ondisk.partial(app, PROJECTION), "nodes written earlier")

    return answer


def _written(app: App, node_id: str, text: str = "", *, verb: str = "") -> Reply:
    """A write's reply: as data the node (everything `show` gives, plus its outgoing links); as text
    `text`, or for a tool `verb` and the node's header (the caller has its content)."""
    state = writes.graph(app)
    node = state.nodes[node_id]
    if verb:
        text = f"{verb} {node.type} {node.id}.\n" + node_header(state, node)
    links = [{"to": e.target, "type": e.type} for e in state.edges_out(node.id)]
    return Reply(text, {**explore.node_dict(state, node), "links": links})


def _nodes(app: App, args: JSON, nodes: list[Node], total: int, title: str) -> Reply:
    state = writes.graph(app)
    markdown = args.get("format") == "markdown"
    text = nodes_markdown(state, nodes) if markdown else nodes_text(state, nodes, title, total)
    return Reply(text, {"count": len(nodes), "total": total, "nodes": [explore.node_dict(state, n) for n in nodes]})


WALKS = {"related": "Related to", "provenance": "Provenance of", "dependents": "Depended on by"}


def _walk(app: App, node_id: str, follow: str, depth: int | None, notice: str = "") -> Reply:
    """The nodes around one: along any edge (related), what it rests on, or what rests on it."""
    root, steps = explore.around(app, node_id, follow, depth)
    state = writes.graph(app)
    data = [
        {"depth": s.depth, "edge_type": s.edge_type, "via": s.via, "node": explore.node_dict(state, s.node)}
        for s in steps
    ]
    return Reply(notice + steps_text(state, root, steps, WALKS[follow]), {"id": root.id, "steps": data})


def _content(args: JSON) -> str | None:
    """The content argument or standard input."""
    value: str | None = args.get("content")
    if args.get("stdin"):
        if value:
            raise InputError("pass the content as an argument or with --stdin, not both")
        return sys.stdin.read()
    return value


def _required_content(args: JSON, missing: str) -> str:
    """`_content`; `missing` is the error when neither is given."""
    value = _content(args)
    if value is None:
        raise InputError(missing)
    return value


# -- tools (graph_compose and graph_status are also the compose and status commands) -----------


NODE_FIELDS = ("tags", "summary", "agent", "supersedes")  # what graph_remember and add pass on as given


def graph_remember(app: App, args: JSON) -> Reply:
    links = writes.parse_links(args.get("links"))
    told = given(args, "metadata", *NODE_FIELDS)
    event = writes.add_node(app, type=args.get("type", "observation"), content=args["content"], links=links, **told)
    return _written(app, event.id, verb="Remembered")


@_read
def graph_recall(app: App, args: JSON) -> Reply:
    state = writes.graph(app)
    ids, around = args.get("ids"), args.get("around")
    if ids:
        nodes = [writes.resolve(state, node_id) for node_id in ids]
        blocks = [node_text(state, node, with_edges=True) for node in nodes]
        data: JSON = {"nodes": [explore.node_dict(state, node, with_edges=True) for node in nodes]}
        return Reply(DATA_NOTICE + "\n\n" + "\n\n".join(blocks), data)
    if around:
        return _walk(app, around, args.get("follow", "related"), args.get("depth"), DATA_NOTICE + "\n\n")
    if "query" not in args:
        raise InputError('graph_recall needs query, ids or around, e.g. {"query": "type:decision AND tag:project:x"}')
    nodes, total = explore.run_query(app, args["query"], args.get("limit", DEFAULT_RECALL_LIMIT))
    return _nodes(app, args, nodes, total, "Recall")


def graph_link(app: App, args: JSON) -> Reply:
    state = writes.graph(app)
    a, b = writes.ends(state, args["from"], args["to"])
    if args.get("remove"):
        return _unlinked(a.id, b.id, writes.unlink(app, a.id, b.id, args.get("type")))
    kind = args.get("type", "RELATES_TO")
    created = writes.link(app, a.id, b.id, kind)
    note = "" if created else " (it already existed; nothing changed)"
    return Reply(f"Linked {a.id} -{kind}-> {b.id}{note}.", _link_data(a.id, b.id, kind, created))


def _link_data(source: str, target: str, kind: str, created: bool) -> JSON:
    return {"from": source, "to": target, "type": kind, "created": created}


def _unlinked(source: str, target: str, removed: list[str], text: str | None = None) -> Reply:
    data = {"from": source, "to": target, "removed": removed}
    return Reply(text or f"Removed {', '.join(removed)} from {source} to {target}.", data)


def _deleted(node_id: str, deleted: list[str], text: str) -> Reply:
    return Reply(text, {"id": node_id, "deleted": deleted})


def graph_update(app: App, args: JSON) -> Reply:
    node = writes.resolve(writes.graph(app), args["id"])
    if args.get("delete"):
        deleted = writes.delete_node(app, node.id, cascade=bool(args.get("cascade")), agent=args.get("agent"))
        return _deleted(node.id, deleted, f"Deleted {', '.join(deleted)} and their edges.")
    changes = ("content", "type", "summary", "metadata", "add_tags", "remove_tags")
    if not any(name in args for name in changes):
        raise InputError(
            f"{tool('graph_update')} needs something to change: {arg('content')}, {arg('type')}, {arg('summary')}, "
            f"{arg('metadata')}, {arg('add_tags')}, {arg('remove_tags')}, or {arg('delete')}: true"
        )
    writes.update_node(app, node.id, **given(args, *changes, "agent"))
    return _written(app, node.id, verb="Updated")


def graph_summarize(app: App, args: JSON) -> Reply:
    return _summarized(app, args, args["content"], tool=True)


def _summarized(app: App, args: JSON, content: str, *, tool: bool) -> Reply:
    """graph_summarize and summarize: the written summary, its sources and what was archived."""
    done = writes.summarize(
        app,
        args["ids"],
        content,
        archive_sources=bool(args.get("archive_sources")),
        tags=args.get("tags"),
        agent=args.get("agent"),
    )
    if tool:
        reply = _written(app, done.id, verb=f"Summarized {len(done.sources)} node(s) as")
    else:
        reply = _written(app, done.id, f"Created summary: {done.id}")
    data = {**reply.data, "sources": done.sources, "archived": done.archived}
    return Reply(reply.text + (f"\nArchived: {', '.join(done.archived)}" if done.archived else ""), data)


@_read
def graph_compose(app: App, args: JSON) -> Reply:
    """The composed markdown; what did not fit is the note (stderr on the CLI, a last line for tools)."""
    result = compose(
        app,
        args.get("query"),
        args.get("budget"),
        view=args.get("view"),
        include_archived=bool(args.get("include_archived")),
        include_superseded=bool(args.get("include_superseded")),
    )
    return Reply(result.text, result.as_dict(), remark=result.report())


@_read
def graph_status(app: App, args: JSON) -> Reply:
    info = {**explore.status(app), **store_size(app.store.folder), **database_size(app.store.state_dir)}
    return Reply(status_text(info), info)


def database_size(state_dir: Path) -> dict[str, object]:
    """The derived store this machine reads views from (seed 003's `Database: <path> (<size>)`): its
    path and bytes (with its write-ahead log), 0 before it is built."""
    from contextflow.core.tables import DB_FILE

    path, size = state_dir / DB_FILE, 0
    for part in (path, path.with_name(DB_FILE + "-wal")):
        with contextlib.suppress(OSError):  # not built yet (or being replaced): the status says 0 B
            size += part.stat().st_size
    return {"database": str(path), "database_bytes": size}


def store_size(folder: Path) -> dict[str, int]:
    """The store's logs: how many and their bytes (seed 003's status shows the store's size)."""
    from contextflow.core.log import parse_log_name

    logs, size = 0, 0
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if parse_log_name(entry.name) and entry.is_file(follow_symlinks=False):
                    logs, size = logs + 1, size + entry.stat(follow_symlinks=False).st_size
    except OSError:  # a store not made yet, or not readable: the status says so through its counts
        pass
    return {"store_logs": logs, "store_bytes": size}


# -- commands ----------------------------------------------------------------------------------


def add(app: App, args: JSON) -> Reply:
    content = _required_content(args, "add needs the content: pass it as an argument or with --stdin")
    metadata = model.meta_pairs(args.get("meta"))
    event = writes.add_node(app, type=args["type"], content=content, metadata=metadata, **given(args, *NODE_FIELDS))
    return _written(app, event.id, f"Added: {event.id}")


@_read
def show(app: App, args: JSON) -> Reply:
    state = writes.graph(app)
    node = writes.resolve(state, args["id"])
    linked = bool(args.get("with_edges"))
    text = render_node(state, node) if args.get("format") == "markdown" else node_text(state, node, with_edges=linked)
    return Reply(text, explore.node_dict(state, node, with_edges=linked))


def update(app: App, args: JSON) -> Reply:
    content = _content(args)
    metadata = model.meta_pairs(args.get("meta")) or None
    node = writes.update_node(app, args["id"], content=content, metadata=metadata, **given(args, "type", "summary"))
    return _written(app, node.id, f"Updated: {node.id}")


def delete(app: App, args: JSON) -> Reply:
    deleted = writes.delete_node(app, args["id"], cascade=bool(args.get("cascade")))
    return _deleted(deleted[0], deleted, "Deleted: " + ", ".join(deleted))


@_read
def list_nodes(app: App, args: JSON) -> Reply:
    nodes, total = explore.list_nodes(app, **given(args, "type", "tag", "since", "limit"))
    return _nodes(app, args, nodes, total, "Nodes")


@_read
def query(app: App, args: JSON) -> Reply:
    nodes, total = explore.run_query(app, args["query"], args.get("limit"))
    return _nodes(app, args, nodes, total, "Query results")


def link(app: App, args: JSON) -> Reply:
    kind = model.edge_type(args.get("type", "RELATES_TO"))
    created = writes.link(app, args["source"], args["target"], kind)
    state = writes.graph(app)
    a, b = writes.resolve(state, args["source"]), writes.resolve(state, args["target"])
    text = f"Linked: {a.id} -{kind}-> {b.id}" + ("" if created else " (already linked)")
    return Reply(text, _link_data(a.id, b.id, kind, created))


def unlink(app: App, args: JSON) -> Reply:
    removed = writes.unlink(app, args["source"], args["target"], args.get("type"))
    state = writes.graph(app)
    a, b = writes.resolve(state, args["source"]), writes.resolve(state, args["target"])
    return _unlinked(a.id, b.id, removed, "Unlinked: " + ", ".join(removed))


@_read
def edges(app: App, args: JSON) -> Reply:
    node, out, inc = explore.edges_of(app, args["id"], args.get("direction"))
    state = writes.graph(app)
    lines = [node_header(state, node), *edge_lines(state, out, inc)]
    if not out and not inc:
        lines.append("  (no edges)")
    return Reply("\n".join(lines), {"id": node.id, "out": [e.as_dict() for e in out], "in": [e.as_dict() for e in inc]})


def tag(app: App, args: JSON) -> Reply:
    node = writes.resolve(writes.graph(app), args["id"])
    added = writes.tag(app, node.id, args["tags"])
    return Reply(f"Tagged {node.id}: " + (", ".join(added) or "(already tagged)"), {"id": node.id, "added": added})


def untag(app: App, args: JSON) -> Reply:
    node = writes.resolve(writes.graph(app), args["id"])
    removed = writes.untag(app, node.id, args["tags"])
    text = f"Untagged {node.id}: " + (", ".join(removed) or "(was not tagged)")
    return Reply(text, {"id": node.id, "removed": removed})


@_read
def tags(app: App, args: JSON) -> Reply:
    counts = explore.tag_counts(app, args.get("prefix"))
    text = "\n".join(f"{name}  ({count})" for name, count in counts) or "(no tags)"
    return Reply(text, [{"tag": name, "nodes": count} for name, count in counts])


@_read
def trace(app: App, args: JSON) -> Reply:
    return _walk(app, args["id"], "dependents" if args.get("reverse") else "provenance", args.get("depth"))


@_read
def related(app: App, args: JSON) -> Reply:
    return _walk(app, args["id"], "related", args.get("depth"))


def summarize(app: App, args: JSON) -> Reply:
    content = _required_content(args, "summarize needs the summary text: pass --content TEXT or --stdin")
    return _summarized(app, args, content, tool=False)


def supersede(app: App, args: JSON) -> Reply:
    state = writes.graph(app)
    old, new = writes.resolve(state, args["old"], "old id"), writes.resolve(state, args["new"], "new id")
    created = writes.supersede(app, old.id, new.id)
    text = f"Superseded: {old.id} by {new.id}" + ("" if created else " (already)")
    return Reply(text, {"old": old.id, "new": new.id, "created": created})


def view_create(app: App, args: JSON) -> Reply:
    saved = writes.create_view(app, args["name"], args["query"], args.get("budget"))
    return Reply(f"Saved view {saved['name']}: {saved['query']} (budget {saved['budget']:,})", saved)


@_read
def view_list(app: App, args: JSON) -> Reply:
    views = writes.graph(app).saved_views()
    text = "\n".join(f"{v.name}: {v.query} (budget {v.budget:,})" for v in views) or "(no views)"
    return Reply(text, [v.as_dict() for v in views])


def view_delete(app: App, args: JSON) -> Reply:
    name = writes.delete_view(app, args["name"])
    return Reply(f"Deleted view {name}", {"deleted": name})


def ingest(app: App, args: JSON) -> Reply:
    done = transfer.ingest_file(app, args["file"], tags=args.get("tags"), agent=args.get("agent"))
    replaced = f" (supersedes {done.replaced})" if done.replaced else ""
    text = f"Ingested: {done.id}{replaced}" if done.created else f"Unchanged: {done.id}"
    if done.parts:
        text += f" and {len(done.parts)} more parts CHILD_OF it (the file is over the node limit)"
    data = {"id": done.id, "created": done.created, "supersedes": done.replaced, "parts": list(done.parts)}
    return Reply(text, data)


@_read
def picture(app: App, args: JSON) -> Reply:
    nodes, total = explore.run_query(app, args.get("query") or "", args.get("limit"))
    draw = pictures.dot if args.get("format") == "dot" else pictures.mermaid
    note = f"drew {len(nodes)} of {total} nodes; raise --limit or narrow the query" if total > len(nodes) else None
    state = writes.graph(app)
    data = {
        "count": len(nodes),
        "total": total,
        "nodes": [explore.node_dict(state, node) for node in nodes],
        "edges": [edge.as_dict() for edge in pictures.edges_among(state, nodes)],
    }
    return Reply(draw(state, nodes), data, remark=note)
