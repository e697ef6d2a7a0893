"""Graph commands for context and bulk work: view create|list|render|delete, compose, status,
export, import, ingest, and `graph` (a Mermaid or dot picture)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

from contextflow.app import App
from contextflow.cli.output import add_format, emit
from contextflow.errors import InputError
from contextflow.graph import explore, model, ops, picture, transfer
from contextflow.graph.compose import DEFAULT_QUERY, Composed, compose


def register(sub: Any) -> None:
    view = sub.add_parser("view", help="saved views: a named query and budget",
                          description="Create, list, render or delete saved views (a named query plus a budget).")
    views = view.add_subparsers(dest="view_command", metavar="ACTION", required=True)
    create = views.add_parser("create", help="save a view", description="Save (or replace) a named view.")
    create.add_argument("name")
    create.add_argument("--query", required=True, help='e.g. "type:fact OR type:decision"')
    create.add_argument("--budget", type=int, default=model.DEFAULT_VIEW_BUDGET, help="token budget (default 50000)")
    add_format(create)
    create.set_defaults(func=cmd_view_create)
    listing = views.add_parser("list", help="list views", description="List saved views.")
    add_format(listing)
    listing.set_defaults(func=cmd_view_list)
    render = views.add_parser("render", help="compose a view", description="Compose context from a saved view.")
    render.add_argument("name")
    render.add_argument("--budget", type=int, help="override the view's budget")
    render.add_argument("--include-archived", action="store_true", help="also load tier:off-context nodes")
    add_format(render)
    render.set_defaults(func=cmd_view_render)
    delete = views.add_parser("delete", help="delete a view", description="Delete a saved view.")
    delete.add_argument("name")
    add_format(delete)
    delete.set_defaults(func=cmd_view_delete)

    comp = sub.add_parser("compose", help="compose context within a token budget",
                          description="Compose markdown context from a query within a token budget: pinned first, "
                          "then by tier, then most recent. What did not fit is reported on stderr.")
    comp.add_argument("--query", help=f"default: {DEFAULT_QUERY}")
    comp.add_argument("--budget", type=int, default=model.DEFAULT_VIEW_BUDGET, help="tokens (default 50000)")
    comp.add_argument("--include-archived", action="store_true", help="also load tier:off-context nodes")
    comp.add_argument("--include-superseded", action="store_true", help="also load superseded nodes")
    add_format(comp)
    comp.set_defaults(func=cmd_compose)

    status = sub.add_parser("status", help="graph counts, tokens and tiers",
                            description="Node counts per type, token estimates, edges, tags and the tier breakdown.")
    add_format(status)
    status.set_defaults(func=cmd_status)

    export = sub.add_parser("export", help="export the graph as JSON",
                            description="Write the graph (or the nodes a query matches) as JSON to stdout or --output "
                            "(the export is JSON whatever --format says; --format shapes the --output report).")
    export.add_argument("--query", help="only nodes matching this query")
    export.add_argument("--output", "-o", help="write to this file instead of stdout")
    add_format(export)
    export.set_defaults(func=cmd_export)

    imp = sub.add_parser("import", help="import a JSON export",
                         description="Import an export from FILE or stdin. With --merge, nodes already here are "
                         "skipped, so importing the same export twice changes nothing.")
    imp.add_argument("file", nargs="?", default="-", help="export file (default: stdin)")
    imp.add_argument("--merge", action="store_true", help="skip what is already here instead of failing")
    add_format(imp)
    imp.set_defaults(func=cmd_import)

    ingest = sub.add_parser("ingest", help="store a text file as a source node",
                            description="Store a text file as a `source` node (an unchanged file is not stored twice; "
                            "a changed one supersedes its previous version).")
    ingest.add_argument("file")
    ingest.add_argument("--tag", action="append", dest="tags")
    ingest.add_argument("--agent", default="human")
    add_format(ingest)
    ingest.set_defaults(func=cmd_ingest)

    pic = sub.add_parser("graph", help="draw the graph (Mermaid or dot)",
                         description="Print a Mermaid or Graphviz dot picture of the nodes a query matches "
                         "(default: all) and the edges between them.")
    pic.add_argument("query", nargs="?", default="")
    pic.add_argument("--format", choices=("mermaid", "dot"), default="mermaid", help="picture format (default mermaid)")
    pic.add_argument("--limit", type=int, default=200, help="at most this many nodes (default 200)")
    pic.set_defaults(func=cmd_graph)


def _composed(args: argparse.Namespace, result: Composed) -> None:
    if args.format == "json":
        emit(args, "", result.as_dict())
        return
    sys.stdout.write(result.text)
    print(f"contextflow: {result.report()}", file=sys.stderr)


def cmd_view_create(args: argparse.Namespace, app: App) -> int:
    saved = ops.create_view(app, args.name, args.query, args.budget)
    emit(args, f"Saved view {saved['name']}: {saved['query']} (budget {saved['budget']:,})", saved)
    return 0


def cmd_view_list(args: argparse.Namespace, app: App) -> int:
    views = ops.graph(app).saved_views()
    text = "\n".join(f"{v.name}: {v.query} (budget {v.budget:,})" for v in views) or "(no views)"
    emit(args, text, [v.as_dict() for v in views])
    return 0


def cmd_view_render(args: argparse.Namespace, app: App) -> int:
    _composed(args, compose(app, budget=args.budget, view=args.name, include_archived=args.include_archived))
    return 0


def cmd_view_delete(args: argparse.Namespace, app: App) -> int:
    name = ops.delete_view(app, args.name)
    emit(args, f"Deleted view {name}", {"deleted": name})
    return 0


def cmd_compose(args: argparse.Namespace, app: App) -> int:
    result = compose(app, args.query, args.budget, include_archived=args.include_archived,
                     include_superseded=args.include_superseded)
    _composed(args, result)
    return 0


def cmd_status(args: argparse.Namespace, app: App) -> int:
    info = explore.status(app)
    emit(args, explore.status_text(info), info)
    return 0


def cmd_export(args: argparse.Namespace, app: App) -> int:
    doc = transfer.export_graph(app, args.query)
    data = orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"
    if args.output:
        try:
            Path(args.output).write_bytes(data)
        except OSError as exc:
            raise InputError(f"cannot write {args.output}: {exc.strerror or exc}") from None
        counts = {"file": args.output, **{name: len(doc[name]) for name in ("nodes", "edges", "views")}}
        emit(args, f"Exported {counts['nodes']} node(s), {counts['edges']} edge(s) to {args.output}", counts)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    return 0


def cmd_import(args: argparse.Namespace, app: App) -> int:
    try:
        raw = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {args.file}: {exc.strerror or exc}") from None
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"the import is not valid JSON ({exc}); pass a file written by `contextflow export`") from None
    result = transfer.import_graph(app, doc, merge=args.merge)
    emit(args, result.text(), result.as_dict())
    return 0


def cmd_ingest(args: argparse.Namespace, app: App) -> int:
    done = transfer.ingest_file(app, args.file, tags=args.tags, agent=args.agent)
    if not done.created:
        text = f"Unchanged: {done.id}"
    else:
        text = f"Ingested: {done.id}" + (f" (supersedes {done.replaced})" if done.replaced else "")
    emit(args, text, {"id": done.id, "created": done.created, "supersedes": done.replaced})
    return 0


def cmd_graph(args: argparse.Namespace, app: App) -> int:
    nodes, total = explore.run_query(app, args.query, args.limit)
    state = ops.graph(app)
    draw = picture.dot if args.format == "dot" else picture.mermaid
    sys.stdout.write(draw(state, nodes))
    if total > len(nodes):
        print(f"contextflow: drew {len(nodes)} of {total} nodes; raise --limit or narrow the query", file=sys.stderr)
    return 0
