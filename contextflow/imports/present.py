"""The `import` and `export` commands: call the importers and exporters, answer with text and JSON."""

from __future__ import annotations

import sys
from pathlib import Path

from contextflow.app import App
from contextflow.core import jsonio
from contextflow.core.errors import InputError, arg
from contextflow.core.timeutil import now_ms
from contextflow.graph import transfer
from contextflow.graph.query import parse
from contextflow.graph.writes import graph
from contextflow.imports import servermemory
from contextflow.imports.run import run_import, settle
from contextflow.operations.provenance import dumps
from contextflow.operations.spec import JSON, Reply


def import_(app: App, args: JSON) -> Reply:
    """A folder with some files refused: the report of what was stored, then an error (exit 2)."""
    report = run_import(
        app,
        args.get("path") or "-",
        fmt=args.get("from"),
        dry_run=bool(args.get("dry_run")),
        merge=bool(args.get("merge")),
    )
    settle(app, report)  # the views kept as tables brought up to date: the calls after it read them
    if report.errors:
        if not (report.stored or report.present or report.skipped):
            raise InputError("\n".join(report.errors))
        print(dumps(report.as_dict()) if args.get("format") == "json" else report.text())
        raise InputError(f"{len(report.errors)} file(s) were not imported (listed above); the rest was")
    return Reply(report.text(), report.as_dict())


def _write(output: str | None, data: bytes) -> None:
    if not output:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    try:
        Path(output).write_bytes(data)
    except OSError as exc:
        raise InputError(f"cannot write {output}: {exc.strerror or exc}") from None


def export(app: App, args: JSON) -> Reply:
    """The export goes to stdout as JSON (asking for text there is refused); with --output, --format shapes
    the report."""
    output = args.get("output")
    if not output and args.get("format") in ("text", "markdown"):
        raise InputError(
            f"the export printed to stdout is a JSON document, not {args['format']}: leave {arg('format')} out "
            f"(or pass json), or write it to a file with {arg('output')} FILE to get a {args['format']} report"
        )
    if args.get("to") == "server-memory":
        query = args.get("query")
        state = graph(app, whole=True)  # a file is whole or it is no export
        ids = state.matching(parse(query), now_ms()) if query else set(state.live)
        data, entities, relations = servermemory.export_lines(state, ids)
        _write(output, data)
        counts = {"file": output, "format": "server-memory", "entities": entities, "relations": relations}
        text = (
            f"Exported {_count(entities, 'entity', 'entities')}, {_count(relations, 'relation')} "
            f"as a server-memory memory.json to {output}"
        )
    else:
        doc = transfer.export_graph(app, args.get("query"))
        _write(output, jsonio.dumps(doc, indent=True) + b"\n")
        counts = {"file": output, "format": "contextflow"}
        counts.update({name: len(doc[name]) for name in ("nodes", "edges", "views")})
        text = f"Exported {counts['nodes']} node(s), {counts['edges']} edge(s) to {output}"
    return Reply(text, counts) if output else Reply.finished()


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"
