"""`contextflow` command line: each command parses, calls a core function, renders.

Command modules expose `register(subparsers)`; each command's handler takes the parsed
arguments and an `App` and returns an exit code. Errors go to stderr with a non-zero exit.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from contextflow import __version__
from contextflow.app import App
from contextflow.cli import (
    compose_cmds,
    conversation_cmds,
    core,
    graph_cmds,
    hook_cmds,
    memory_cmds,
    session_cmds,
    sync_cmds,
)
from contextflow.errors import ContextflowError
from contextflow.locate import STORE_OPTION_MARKER

COMMAND_MODULES = [core, session_cmds, memory_cmds, conversation_cmds, graph_cmds, compose_cmds, hook_cmds, sync_cmds]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="contextflow",
        description="Shared memory for AI coding agents: MCP server and CLI over append-only JSONL logs.",
    )
    parser.add_argument("--version", action="version", version=f"contextflow {__version__}")
    parser.add_argument("--store", help="store folder (overrides CONTEXTFLOW_STORE and discovery)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMAND_MODULES:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.store:
        os.environ["CONTEXTFLOW_STORE"] = args.store
        os.environ[STORE_OPTION_MARKER] = args.store  # so doctor can say the option chose it
    app: App | None = None
    try:
        if getattr(args, "no_app", False):
            return int(args.func(args, None))
        app = App.open()
        return int(args.func(args, app))
    except ContextflowError as exc:
        print(f"contextflow: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        if app is not None:
            app.close()
