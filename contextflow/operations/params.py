"""Parameter shapes and parameters that several feature tables share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contextflow.operations.spec import JSON, Param

STRING: JSON = {"type": "string"}
STRINGS: JSON = {"type": "array", "items": STRING}


def _param(name: str, schema: JSON, description: str | None, options: dict[str, Any]) -> Param:
    return Param(name, {**schema, "description": description} if description else schema, **options)


def string(name: str, description: str | None = None, enum: Sequence[str] = (), **options: Any) -> Param:
    """A string parameter, one of `enum` when given; `options` as for `Param`."""
    return _param(name, {**STRING, "enum": list(enum)} if enum else STRING, description, options)


def integer(name: str, low: int, high: int, description: str | None = None, **options: Any) -> Param:
    """A whole number from `low` to `high`."""
    return _param(name, {"type": "integer", "minimum": low, "maximum": high}, description, options)


def boolean(name: str, description: str | None = None, **options: Any) -> Param:
    return _param(name, {"type": "boolean"}, description, options)


def writer(description: str = "Your name, e.g. claude, codex.", required: bool = False) -> Param:
    """Who writes: `agent`, which the CLI defaults to 'human'."""
    help = "who writes it (default 'human')"
    return string("agent", description, required=required, cli_default="human", cli_help=help)


PROJECT = string(
    "project",
    "Default: this repository's.",
    cli_help="project key (default: the working folder's project: its repository's, else the folder's "
    "path; MCP_SHARED_CONTEXT_PROJECT overrides it)",
)


def bare(param: Param) -> Param:
    """`param` without its description, where another tool of the same list already explains it (each
    description is paid for in every model turn)."""
    from dataclasses import replace

    schema = {key: value for key, value in param.schema.items() if key != "description"}
    return replace(param, schema=schema, cli_help=param.cli_help or _cli_help(param.description))


def _cli_help(text: str) -> str | None:
    return text[:1].lower() + text[1:].rstrip(".") if text else None
