"""Keyed context records: context_set/get/list/delete, the whereami/wherewasi/remember prompts, and
the `contextflow context ...`, `whereami` and `wherewasi` commands."""

from __future__ import annotations

from typing import TYPE_CHECKING

from contextflow.operations.params import PROJECT, bare, boolean, integer, string, writer
from contextflow.operations.spec import Operation, Param, PromptArg, PromptSpec, Table, cli_only, deferred
from contextflow.records.fields import (
    CATEGORIES,
    DEFAULT_CATEGORY,
    DEFAULT_LIMIT,
    DEFAULT_SINCE_DAYS,
    LIMIT,
    SINCE_DAYS,
)

if TYPE_CHECKING:
    from contextflow.records import present
else:
    present = deferred("contextflow.records.present")


KEY = string(
    "key", "Namespaced key prefix:name, e.g. pr:owner/repo:1777, machine:chisel.", required=True, positional=True
)
EXACT_KEY = string("key", "Exact key.", required=True, positional=True, cli_help=KEY.description)
AGENT = writer()


OPERATIONS = (
    Operation(
        "context_set",
        "Create or update a shared context record (facts, PRs, machines, things waited on). "
        "Omitted optional fields keep their current values.",
        (
            KEY,
            Param(
                "value",
                {"type": "object", "description": "JSON object, at most 64 KB."},
                required=True,
                positional=True,
                cli_help='JSON object, e.g. \'{"ip": "10.0.0.2"}\'; - reads it from stdin',
                hint='e.g. {"status": "waiting", "title": "MeshCore support"}; wrap plain text as {"text": "..."}',
            ),
            string(
                "category",
                "Default: the key's prefix if one of these, else fact.",
                list(CATEGORIES),
                hint=f"pick one of those, or leave it out to use the key's prefix (else {DEFAULT_CATEGORY})",
            ),
            string("label", "Human-readable title."),
            Param(
                "thread_id",
                {"type": ["string", "integer"], "description": "Timeline thread to link (id or prefix); '' unlinks."},
                flag="--thread",
            ),
            boolean("pinned", "Always show in /whereami.", negatable=True),
            string(
                "expires_at",
                "ISO time or duration (24h, 7d); 'never' clears.",
                flag="--expires",
                hint="pass a duration such as 24h or 7d, an ISO-8601 time such as 2026-02-10T09:00:00Z, or never",
            ),
            string("source", "Machine it is about or came from (default: this machine)."),
            AGENT,
            bare(PROJECT),  # read_shared_context explains it
        ),
        present.context_set,
        command=("context", "set"),
        read_only=False,
    ),
    Operation(
        "context_get",
        "Get one context record by exact key.",
        (EXACT_KEY, bare(PROJECT)),
        present.context_get,
        command=("context", "get"),
    ),
    Operation(
        "context_list",
        "List context records, newest first.",
        (
            string("category"),
            string("thread_id", "Thread id or a unique prefix of it.", flag="--thread"),
            boolean("pinned_only"),
            integer("since_days", *SINCE_DAYS, f"Updated within N days; default {DEFAULT_SINCE_DAYS}, 0 = any time."),
            integer("limit", *LIMIT, f"Default {DEFAULT_LIMIT}."),
            string("prefix", "Key prefix, e.g. pr: or pr:owner/repo."),
            string("project", "Only this project's records."),
        ),
        present.context_list,
        command=("context", "list"),
    ),
    Operation(
        "context_delete",
        "Delete a context record by exact key.",
        (bare(EXACT_KEY), bare(AGENT), bare(PROJECT)),  # context_get and context_set explain them
        present.context_delete,
        command=("context", "delete"),
        read_only=False,
        destructive=True,
    ),
    cli_only("whereami", "Active threads, pinned context, waiting items, latest handoff.", (), present.whereami),
    cli_only("wherewasi", "Paused threads with their last thought and linked context.", (), present.wherewasi),
)

TABLE = Table(
    operations=OPERATIONS,
    prompts=(
        PromptSpec(
            "whereami",
            "Where am I: active threads, pinned context, waiting items, latest handoff",
            present.whereami_prompt,
        ),
        PromptSpec(
            "wherewasi",
            "Where was I: paused threads, how long ago, their last thought and context",
            present.wherewasi_prompt,
        ),
        PromptSpec(
            "remember",
            "Remember something in shared context (stores it with context_set)",
            present.remember_prompt,
            (PromptArg("what", "What to remember, in plain words", True),),
        ),
    ),
)
