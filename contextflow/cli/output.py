"""How the CLI prints a reply: its text (also for markdown), or its data as JSON with every string cleaned."""

from __future__ import annotations

import sys

from contextflow.operations.spec import Reply
from contextflow.text import clean_data


def emit(fmt: str, reply: Reply) -> None:
    if fmt == "json":
        import orjson

        options = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
        sys.stdout.write(orjson.dumps(clean_data(reply.data), option=options).decode() + "\n")
    else:
        sys.stdout.write(reply.text.rstrip("\n") + "\n")
