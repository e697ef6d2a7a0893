"""Output helpers shared by the CLI commands."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import orjson

from contextflow.text import clean_data

FORMATS = ("text", "json", "markdown")


def add_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=FORMATS, default="text", help="output format (default text)")


def emit(args: argparse.Namespace, text: str, data: Any) -> None:
    """Print `data` as JSON when --format json (its strings cleaned as text is), else the text."""
    if getattr(args, "format", "text") == "json":
        options = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
        sys.stdout.write(orjson.dumps(clean_data(data), option=options).decode() + "\n")
    else:
        sys.stdout.write(text.rstrip("\n") + "\n")
