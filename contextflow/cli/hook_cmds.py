"""hook (Claude Code's SessionStart, UserPromptSubmit and Stop) and install (client configuration)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from contextflow.cli.output import add_format, emit
from contextflow.hooks import EVENTS, run
from contextflow.install import AFTER_INSTALL, CLIENTS, install


def register(sub: Any) -> None:
    hook = sub.add_parser(
        "hook", help="run a client hook (Claude Code, Codex, Gemini CLI; reads its JSON on stdin)",
        description="Run a client hook: session-start injects composed memory, prompt-submit injects waiting "
        "recall/status results, stop carries out <ctx:...> directives in the turn's replies. Always exits 0; "
        "problems are logged to stderr and hooks.log in the state folder.",
    )
    hook.add_argument("event", metavar="EVENT", help=", ".join(EVENTS))
    add_format(hook)
    hook.set_defaults(func=cmd_hook, no_app=True)

    inst = sub.add_parser(
        "install", help="add contextflow to an MCP client's config",
        description="Merge the contextflow MCP server into a client's config (plus the hooks for Claude Code, "
        "Codex and Gemini CLI, and the skill file for Claude Code), keeping every other setting. "
        "The server and every hook get the store settings of this shell (CONTEXTFLOW_STORE as an "
        "absolute path, and CONTEXTFLOW_STATE / CONTEXTFLOW_WRITER when set). "
        "Shows a diff of each change; running it twice is a no-op.",
    )
    inst.add_argument("client", choices=CLIENTS)
    inst.add_argument("--project", action="store_true", help="configure this project folder instead of the user")
    inst.add_argument("--dry-run", action="store_true", help="show the changes without writing them")
    add_format(inst)
    inst.set_defaults(func=cmd_install, no_app=True)


def cmd_hook(args: argparse.Namespace, app: None) -> int:
    try:
        raw = sys.stdin.buffer.read()
    except Exception:
        raw = b""
    output = run(args.event, raw)
    try:
        if output:
            sys.stdout.write(output + "\n")
            sys.stdout.flush()
    except OSError:  # the client stopped listening: still never fail it
        pass
    return 0


def cmd_install(args: argparse.Namespace, app: None) -> int:
    changes = install(args.client, project=args.project, dry_run=args.dry_run)
    blocks: list[str] = []
    for change in changes:
        if not change.changed:
            blocks.append(f"unchanged  {change.path}")
            continue
        verb = "would " if args.dry_run else ""
        action = "create" if change.before is None else "update"
        done = action if args.dry_run else action.rstrip("e") + "ed"
        blocks.append(f"{verb}{done}  {change.path}\n{change.diff()}".rstrip())
    if any(change.changed for change in changes) and not args.dry_run:
        note = AFTER_INSTALL.get(args.client, "")
        blocks.append(f"Restart {args.client} to load contextflow. {note}".rstrip())
    elif not any(change.changed for change in changes):
        blocks.append("contextflow is already installed; nothing changed.")
    data = [{"path": str(c.path), "changed": c.changed, "created": c.before is None and c.changed, "diff": c.diff()}
            for c in changes]
    emit(args, "\n\n".join(blocks), {"client": args.client, "dry_run": args.dry_run, "changes": data})
    return 0
