"""Commands for running and keeping contextflow: serve, doctor, pick-session, compact, hook, start-preview, ui,
install.
CLI only: none is an MCP tool."""

from __future__ import annotations

from typing import TYPE_CHECKING

from contextflow.admin.fields import CLIENTS
from contextflow.operations.params import boolean, integer, string
from contextflow.operations.spec import Table, cli_only, deferred

if TYPE_CHECKING:
    from contextflow.admin import clients, present
else:
    clients, present = deferred("contextflow.admin.clients"), deferred("contextflow.admin.present")


OPERATIONS = (
    cli_only(
        "serve",
        "Run the MCP server (stdio, or HTTP with --http)",
        (
            boolean("http", "Serve streamable HTTP at /mcp instead of stdio."),
            string("host", "Address to listen on with --http (default 127.0.0.1).", cli_default="127.0.0.1"),
            integer("port", 0, 65535, "Port with --http (default 8765; 0 picks a free one).", cli_default=8765),
            string(
                "tokens",
                "Token grants JSON for --http (else CONTEXTFLOW_HTTP_TOKENS_FILE and friends).",
                metavar="FILE",
            ),
        ),
        present.serve,
        formats=(),
        cli_description="Run the MCP server on stdio, or with --http over streamable HTTP with bearer tokens scoped to "
        "projects (see docs/http-bridge.md).",
    ),
    cli_only(
        "doctor",
        "Check the store and say which rule chose it",
        (
            boolean(
                "fix",
                "Fold sync-conflict copies into this writer's log, then remove each copy once every event "
                "in it is verified (see docs/sync.md).",
            ),
            boolean("rebuild", "Rebuild this machine's search index from the logs first (it is derived state)."),
            boolean(
                "quick",
                "Skip checking this machine's derived views against a fresh fold of the logs (that check costs a "
                "first read; the web page's health view skips it). SQLite's check of their file's pages still runs "
                "(about 0.1 s per 100k events).",
            ),
        ),
        present.doctor,
        cli_description="Report the store location (and the rule that chose it), logs, counts, bad lines, the search "
        "index and problems.",
    ),
    cli_only(
        "pick-session",
        "Choose the active session in a terminal picker",
        (string("project", "Project key (default MCP_SHARED_CONTEXT_PROJECT, else the current folder's project)."),),
        present.pick_session,
        formats=(),
        cli_description="Pick a new or recent session in a terminal menu and make it the active session.",
    ),
    cli_only(
        "compact",
        "Rewrite this machine's log without superseded events",
        (
            boolean("dry_run", "Report what would change; write nothing."),
            boolean(
                "archive", "Keep a gzip copy of the old log in the machine-local state folder (see --archive-dir)."
            ),
            string("archive_dir", "Keep the gzip copy here instead (outside the store)."),
        ),
        present.compact_log,
        cli_description="Rewrite only this writer's own log, dropping events that later events in the same log "
        "supersede "
        "(overwritten, deleted, replaced) and keeping everything other machines need to merge. Atomic: temp "
        "file, fsync, rename. Other machines refold from the new file after sync.",
        read_only=False,
    ),
    cli_only(
        "hook",
        "Run a client hook (Claude Code, Codex, Gemini CLI; reads its JSON on stdin)",
        (
            string(
                "event",
                "session-start, prompt-submit, stop, session-end or pre-compact.",
                required=True,
                positional=True,
                metavar="EVENT",
            ),
        ),
        clients.hook,
        formats=(),
        cli_description="Run a client hook: session-start injects composed memory, prompt-submit injects waiting "
        "recall/status results, stop carries out <ctx:...> directives in the turn's replies "
        "and, like session-end and pre-compact, captures the turn's activity and the automatic handoff "
        "(CONTEXTFLOW_CAPTURE=off turns that off). Always exits 0; "
        "problems are logged to stderr and hooks.log in the state folder.",
        needs_store=False,
        read_only=False,
    ),
    cli_only(
        "start-preview",
        "Show what the next session start injects, and its size against each client's limit",
        (
            string("project", "Project key (default: this repository's)."),
            string(
                "session_id",
                "The active session to preview with (default the active one). The start carries the project's "
                "latest handoff, whichever session wrote it; the preview says which.",
                flag="--session",
            ),
        ),
        clients.start_preview,
        cli_description="Run the session-start hook's own code for a project and session without changing "
        "anything, and print exactly what a client would receive, with its size against each client's limit.",
    ),
    cli_only(
        "ui",
        "Open the local web page to see and curate memory",
        (
            integer(
                "port",
                0,
                65535,
                "Port on 127.0.0.1 (default: this store's, kept between starts, 8766 at first; 0 picks a free one).",
            ),
            boolean("no_open", "Print the URL only; do not open a browser."),
        ),
        present.ui,
        formats=(),
        cli_description="Serve a local web page on 127.0.0.1 (its first output line is the URL with this "
        "store's token, the same on every start): projects and their sessions, what the next session start "
        "injects, search, the knowledge graph, "
        "records, threads, conversations and store health, updated live; pin, archive, forget, tag, and mark "
        "handoffs wrong (see docs/ui.md).",
        read_only=False,
    ),
    cli_only(
        "install",
        "Add contextflow to an MCP client's config",
        (
            string("client", enum=CLIENTS, required=True, positional=True),
            boolean("project", "Configure this project folder instead of the user."),
            boolean("dry_run", "Show the changes without writing them."),
        ),
        clients.install,
        cli_description="Merge the contextflow MCP server into a client's config (plus the hooks for Claude Code, "
        "Codex and "
        "Gemini CLI, and the skill file for Claude Code), keeping every other setting. The server and every "
        "hook get the store settings of this shell (CONTEXTFLOW_STORE as an absolute path, and "
        "CONTEXTFLOW_STATE / CONTEXTFLOW_WRITER when set). Shows a diff of each change; running it twice is a"
        " no-op.",
        needs_store=False,
        read_only=False,
    ),
)

TABLE = Table(operations=OPERATIONS)
