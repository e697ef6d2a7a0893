"""How the CLI prints a reply: its text (also for markdown), or its data as JSON."""

from __future__ import annotations

import sys

from contextflow.operations.spec import Reply

FORMATS = ("text", "json", "markdown")


def emit(fmt: str, reply: Reply) -> None:
    if fmt == "json":
        import orjson

        sys.stdout.write(orjson.dumps(reply.data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n")
    else:
        sys.stdout.write(reply.text.rstrip("\n") + "\n")
