"""Ranked search (tool group `recall`): the get_context tool and the `contextflow search` command."""

from __future__ import annotations

from typing import TYPE_CHECKING

from contextflow.operations.params import STRING, integer, string
from contextflow.operations.spec import Operation, Param, Table, deferred
from contextflow.search.fields import DEFAULT_BUDGET, DEFAULT_LIMIT, MAX_BUDGET, MAX_LIMIT, MIN_BUDGET, SEARCH_KINDS

if TYPE_CHECKING:
    from contextflow.search import present
else:
    present = deferred("contextflow.search.present")


OPERATIONS = (
    Operation(
        "get_context",
        "Search all shared memory; the best matches as markdown within a token budget. Call it at the start of a task.",
        (
            string(
                "query",
                "What you need to know: topics, files, components, decisions.",
                required=True,
                positional=True,
                cli_help="what to look for: topics, files, components, decisions",
            ),
            Param(
                "kinds",
                {"type": "array", "items": {**STRING, "enum": list(SEARCH_KINDS)}, "description": "Only these kinds."},
                flag="--kind",
                hint=f'e.g. ["conversation", "handoff"]; kinds are: {", ".join(SEARCH_KINDS)}',
                cli_help="only this kind (repeatable)",
            ),
            string(
                "project",
                "Only this project's (and project-less) records.",
                cli_help="only this project (plus records without a project)",
            ),
            integer("limit", 1, MAX_LIMIT, "Default 8.", cli_help=f"at most N matches (default {DEFAULT_LIMIT})"),
            integer(
                "budget_tokens",
                MIN_BUDGET,
                MAX_BUDGET,
                f"Most tokens to return. Default {DEFAULT_BUDGET}.",
                flag="--budget",
                metavar="BUDGET",
                cli_help=f"most tokens to print (default {DEFAULT_BUDGET})",
            ),
        ),
        present.get_context,
        command=("search",),
        cli_description="Ranked search across conversations, handoffs, notes, context records, thoughts and graph "
        "nodes; prints the best matches as markdown within a token budget.",
    ),
)

TABLE = Table(operations=OPERATIONS)
