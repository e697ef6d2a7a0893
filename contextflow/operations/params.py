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


PROJECT = string("project", "Project key. Default MCP_SHARED_CONTEXT_PROJECT, else the working folder's project.")
