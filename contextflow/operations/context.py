"""Keyed context records: context_set/get/list/delete, the whereami/wherewasi/remember prompts, and
the `contextflow context ...`, `whereami` and `wherewasi` commands."""

from __future__ import annotations

from contextflow.operations.spec import JSON, Feature, Operation, Param, PromptArg, PromptSpec, lazy

_RUN = "contextflow.present.memory:"
_S: JSON = {"type": "string"}
KEY = Param("key", {**_S, "description": "Namespaced key prefix:name, e.g. pr:owner/repo:1777, machine:chisel."},
            required=True, positional=True)
AGENT = Param("agent", {**_S, "description": "Your name, e.g. claude, codex."}, cli_default="human",
              cli_help="who writes it (default 'human')")
THREAD = Param("thread_id", {**_S, "description": "Thread id or a unique prefix of it."}, flag="--thread")
PROJECT = Param("project", {**_S, "description": "Project key. Default MCP_SHARED_CONTEXT_PROJECT or 'shared'."})

OPERATIONS = (
    Operation(
        "context_set",
        "Create or update a shared context record (facts, PRs, machines, things waited on). "
        "Omitted optional fields keep their current values.",
        (
            KEY,
            Param("value", {"type": "object", "description": "JSON object, at most 64 KB."}, required=True,
                  positional=True, cli_help='JSON object, e.g. \'{"ip": "10.0.0.2"}\'; - reads it from stdin'),
            Param("category", {"type": "string", "enum": ["project", "pr", "machine", "waiting", "fact", "clipboard"],
                               "description": "Default: the key prefix if it is one of these, else fact."}),
            Param("label", {**_S, "description": "Human-readable title."}),
            Param("thread_id", {**_S, "description": "Timeline thread to link (id or prefix); '' unlinks."},
                  flag="--thread"),
            Param("pinned", {"type": "boolean", "description": "Always show in /whereami."}, negatable=True),
            Param("expires_at", {**_S, "description": "ISO time or duration (24h, 7d); 'never' clears."},
                  flag="--expires"),
            AGENT,
            PROJECT,
        ),
        _RUN + "context_set",
        command=("context", "set"),
        group="context",
        read_only=False,
    ),
    Operation(
        "context_get", "Get one context record by exact key.", (KEY, PROJECT), _RUN + "context_get",
        command=("context", "get"), group="context",
    ),
    Operation(
        "context_list",
        "List context records, newest first.",
        (
            Param("category", _S),
            THREAD,
            Param("pinned_only", {"type": "boolean"}),
            Param("since_days", {"type": "integer", "minimum": 0, "maximum": 36500,
                                 "description": "Updated within N days; default 7, 0 = any time."}),
            Param("limit", {"type": "integer", "minimum": 1, "maximum": 500, "description": "Default 50."}),
            Param("prefix", {**_S, "description": "Key prefix, e.g. pr: or pr:owner/repo."}),
            Param("project", {**_S, "description": "Only this project's records."}),
        ),
        _RUN + "context_list",
        command=("context", "list"),
        group="context",
    ),
    Operation(
        "context_delete",
        "Delete a context record by exact key.",
        (KEY, AGENT, PROJECT),
        _RUN + "context_delete",
        command=("context", "delete"),
        group="context",
        read_only=False,
        destructive=True,
    ),
    Operation(
        "whereami", "Active threads, pinned context, waiting items, latest handoff.", (), _RUN + "whereami",
        command=("whereami",), tool=False, group="context",
    ),
    Operation(
        "wherewasi", "Paused threads with their last thought and linked context.", (), _RUN + "wherewasi",
        command=("wherewasi",), tool=False, group="context",
    ),
)

FEATURE = Feature(
    group="context",
    views=("contextflow.views.records:RecordsView",),
    operations=OPERATIONS,
    prompts=(
        PromptSpec("whereami", "Where am I: active threads, pinned context, waiting items, latest handoff",
                   lazy(_RUN + "whereami_prompt")),
        PromptSpec("wherewasi", "Where was I: paused threads, how long ago, their last thought and context",
                   lazy(_RUN + "wherewasi_prompt")),
        PromptSpec(
            "remember",
            "Remember something in shared context (stores it with context_set)",
            lazy(_RUN + "remember_prompt"),
            (PromptArg("what", "What to remember, in plain words", True),),
        ),
    ),
)
