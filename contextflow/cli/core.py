"""serve, doctor, pick-session."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from contextflow import conflicts
from contextflow.app import App
from contextflow.cli.output import add_format, emit
from contextflow.diagnose import problems, store_info


def register(sub: Any) -> None:
    serve = sub.add_parser(
        "serve",
        help="run the MCP server (stdio, or HTTP with --http)",
        description="Run the MCP server on stdio, or with --http over streamable HTTP with bearer tokens "
        "scoped to projects (see docs/http-bridge.md).",
    )
    serve.add_argument("--http", action="store_true", help="serve streamable HTTP at /mcp instead of stdio")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on with --http (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8765, help="port with --http (default 8765; 0 picks a free one)")
    serve.add_argument(
        "--tokens", metavar="FILE", help="token grants JSON for --http (else CONTEXTFLOW_HTTP_TOKENS_FILE and friends)"
    )
    serve.set_defaults(func=cmd_serve)

    doctor = sub.add_parser(
        "doctor",
        help="check the store and say which rule chose it",
        description="Report the store location (and the rule that chose it), logs, counts, bad lines and problems.",
    )
    doctor.add_argument("--fix", action="store_true", help="fold sync-conflict copies into this writer's log, "
                        "then remove each copy once every event in it is verified (see docs/sync.md)")
    add_format(doctor)
    doctor.set_defaults(func=cmd_doctor)

    pick = sub.add_parser(
        "pick-session",
        help="choose the active session in a terminal picker",
        description="Pick a new or recent session in a terminal menu and make it the active session.",
    )
    pick.add_argument("--project", help="project key (default MCP_SHARED_CONTEXT_PROJECT or 'shared')")
    pick.set_defaults(func=cmd_pick)


def cmd_serve(args: argparse.Namespace, app: App) -> int:
    if args.http:
        import os

        from contextflow.server.auth import load_grants
        from contextflow.server.http import run_http

        run_http(app, load_grants(os.environ, args.tokens), args.host, args.port)
        return 0
    from contextflow.server.app import run_stdio

    run_stdio(app)
    return 0


def cmd_doctor(args: argparse.Namespace, app: App) -> int:
    fixed = conflicts.fix(app) if args.fix else None
    info = store_info(app)
    from contextflow.install_check import client_store_findings

    found = problems(info) + conflicts.findings(app) + client_store_findings()
    info["problems"] = found
    lines = [
        f"store:        {info['store']}",
        f"chosen by:    {info['chosen_by']}" + (f" ({info['chosen_detail']})" if info["chosen_detail"] else ""),
        f"writer:       {info['writer']}",
        f"state:        {info['state_dir']}",
        f"events:       {info['events']} (duplicates ignored: {info['duplicate_events_ignored']})",
        f"bad lines:    {info['bad_lines']}",
        f"active:       {info['active_session'] or '(none)'}",
        "logs:",
    ]
    for log in info["logs"]:
        tags = [t for t, on in (("legacy", log["legacy"]), ("conflict copy", log["conflict_copy"])) if on]
        extra = f" [{', '.join(tags)}]" if tags else ""
        lines.append(f"  {log['file']}: {log['events']} events, {log['bad_lines']} bad{extra}")
    lines.append("problems:" if found else "problems:     none")
    lines += [f"  - {problem}" for problem in found]
    if fixed is not None:
        info["fix"] = fixed.as_dict()
        lines += fixed.lines()
    emit(args, "\n".join(lines), info)
    return 0


def cmd_pick(args: argparse.Namespace, app: App) -> int:
    from contextflow.picker import run_picker

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print(
            "contextflow: pick-session needs an interactive terminal; in scripts use "
            "`contextflow use SESSION_ID` or the choose_session tool instead",
            file=sys.stderr,
        )
        return 2
    return run_picker(app, args.project)
