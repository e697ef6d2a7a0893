"""Moving in and out: `contextflow import` (every format) and `contextflow export` (ours or server-memory's).

CLI only (no MCP tool): an import reads files on the machine running the command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contextflow.graph.operations import _arg
from contextflow.operations.spec import FORMATS, JSON, Table, cli_only

if TYPE_CHECKING:
    from contextflow.imports import present
else:
    from contextflow.operations.spec import deferred

    present = deferred("contextflow.imports.present")


# a copy of contextflow.imports.detect.FORMATS, so reading the table stays cheap (a test checks they agree)
IMPORT_FORMATS = ("contextflow", "server-memory", "beads", "basic-memory", "claude-mem", "claude-code", "codex")
EXPORT_FORMATS = ("contextflow", "server-memory")
_BOOL: JSON = {"type": "boolean"}
_FORMATS: JSON = {"type": "string", "enum": [*FORMATS, "markdown"]}

OPERATIONS = (
    cli_only(
        "import",
        "Import another memory tool's data.",
        (
            _arg("path", help="a file or folder (default: standard input)", positional=True),
            _arg("from", {"type": "string", "enum": list(IMPORT_FORMATS)}, "its format, instead of detecting it"),
            _arg("dry_run", _BOOL, "print what would be stored and store nothing"),
            _arg("merge", _BOOL, "contextflow exports: keep a local view of the same name instead of stopping"),
            _arg("format", _FORMATS, "output format (default text)", cli_default="text"),
        ),
        present.import_,
        read_only=False,
        cli_description="Import a contextflow export, a server-memory memory.json, beads' issues.jsonl, a "
        "basic-memory folder, a claude-mem export, or past Claude Code sessions (~/.claude/projects) and Codex "
        "rollouts (~/.codex/sessions) as their activity and automatic handoffs; the format is detected from the "
        "content (--from names it). Importing the same source again stores nothing new. See docs/graph.md.",
    ),
    cli_only(
        "export",
        "Export the graph as JSON.",
        (
            _arg("query", help="only nodes matching this query"),
            _arg("output", help="write to this file instead of stdout", aliases=("-o",)),
            _arg(
                "to",
                {"type": "string", "enum": list(EXPORT_FORMATS)},
                "contextflow (default) or server-memory (a memory.json)",
                cli_default="contextflow",
            ),
            _arg(
                "format",
                _FORMATS,
                "with --output, the report's format (default text); without it, the export is JSON: only json",
            ),
        ),
        present.export,
        cli_description="Write the graph (or the nodes a query matches) to stdout or --output, as a contextflow "
        "export or with --to server-memory as a server-memory memory.json. Written to stdout, the export is JSON "
        "(--format text is refused); with --output, --format shapes the report.",
    ),
)

TABLE = Table(operations=OPERATIONS)
