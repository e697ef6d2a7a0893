"""ContextFlowMCP's public API (a compatibility contract): the seven session tools, the session
prompts and three resources; and the session commands (note, handoff, read, sessions, resume, use)."""

from __future__ import annotations

from contextflow.operations.spec import JSON, Feature, Operation, Param, PromptArg, PromptSpec, ResourceSpec, lazy

_RUN = "contextflow.present.sessions:"
_S: JSON = {"type": "string"}
_LIST: JSON = {"type": "array", "items": {"type": "string"}}

PROJECT = Param("project", {**_S, "description": "Project key. Default MCP_SHARED_CONTEXT_PROJECT or 'shared'."})
SESSION = Param("session_id", {**_S, "description": "Session id. Default: the active session."}, flag="--session")
AGENT_FILTER = Param("agent", {**_S, "description": "Only entries by this agent."})
SINCE = Param("since", {**_S, "description": "ISO-8601 time; only activity at or after it."})
LIMIT = Param(
    "limit", {"type": "integer", "minimum": 1, "maximum": 200, "description": "How many, newest first. Default 20."}
)
UNSESSIONED = Param(
    "include_unsessioned", {"type": "boolean", "description": "Add a '(no-session-id)' bucket. Default false."}
)
LIST_FILTERS = (PROJECT, AGENT_FILTER, SINCE, LIMIT, UNSESSIONED)
TASK = Param("task", {**_S, "description": "Current task title."})


def _writer(description: str) -> Param:
    return Param("agent", {**_S, "description": description}, required=True, cli_default="human",
                 cli_help="who writes it (default 'human')")


OPERATIONS = (
    Operation(
        "read_shared_context",
        "Read recent shared notes and handoffs so you can pick up where another assistant left off.",
        (PROJECT, AGENT_FILTER, SESSION, Param("kind", {"type": "string", "enum": ["note", "handoff"]}), SINCE, LIMIT),
        _RUN + "read_shared_context",
        command=("read",),
    ),
    Operation(
        "append_shared_note",
        "Append a progress note to shared memory while you work.",
        (
            _writer("Your name, e.g. claude, codex, gemini."),
            Param("text", {**_S, "description": "The note. Or pass it as `content`."}, positional=True),
            Param("content", {**_S, "description": "Alias of `text`."}, cli=False),
            PROJECT,
            SESSION,
            TASK,
            Param("tags", _LIST, flag="--tag", cli_help="a tag (repeatable)"),
        ),
        _RUN + "append_shared_note",
        command=("note",),
        read_only=False,
    ),
    Operation(
        "write_shared_handoff",
        "Write a structured handoff so the next assistant can continue your work.",
        (
            _writer("Your name."),
            Param("summary", {**_S, "description": "What was done and the current state."}, required=True,
                  positional=True),
            Param("next_steps", {**_LIST, "description": "Ordered next actions."}, flag="--next",
                  cli_help="a next step (repeatable)"),
            Param("open_questions", {**_LIST, "description": "Unknowns and blockers."}, flag="--question",
                  cli_help="an open question (repeatable)"),
            Param("files", {**_LIST, "description": "Relevant files."}, flag="--file",
                  cli_help="a relevant file (repeatable)"),
            PROJECT,
            SESSION,
            Param("task", {**_S, "description": "Task title."}),
        ),
        _RUN + "write_shared_handoff",
        command=("handoff",),
        read_only=False,
    ),
    Operation(
        "get_latest_handoff",
        "Get the most recent handoff (optionally by project, agent or session).",
        (PROJECT, AGENT_FILTER, SESSION),
        _RUN + "get_latest_handoff",
        command=("latest",),
    ),
    Operation(
        "list_sessions",
        "List resumable work sessions, most recently active first.",
        LIST_FILTERS,
        _RUN + "list_sessions",
        command=("sessions",),
    ),
    Operation(
        "choose_session",
        "Make a session active, by its 1-based index in list_sessions or by session_id.",
        (
            Param("index", {"type": "integer", "minimum": 1, "maximum": 200,
                            "description": "1-based index from list_sessions."}, positional=True),
            Param("session_id", {**_S, "description": "Choose by id instead of index."}, flag="--session"),
            *LIST_FILTERS,
        ),
        _RUN + "choose_session",
        command=("choose",),
        read_only=False,
    ),
    Operation(
        "resume_session",
        "Load a session's latest handoff and recent entries to resume its exact work item.",
        (Param("session_id", SESSION.schema, positional=True), PROJECT, LIMIT),
        _RUN + "resume_session",
        command=("resume",),
    ),
    Operation(
        "use_session",
        "Make a session the active one (default: a new id from the git branch or the time).",
        (Param("session_id", {**_S, "description": "Session id; default a new one from the git branch or time."},
               positional=True),),
        _RUN + "use_session",
        command=("use",),
        tool=False,
        read_only=False,
    ),
)

FEATURE = Feature(
    group="sessions",
    views=("contextflow.views.sessions:SessionsView",),
    operations=OPERATIONS,
    prompts=(
        PromptSpec(
            "new_session",
            "Start a new session (default id: the current git branch) and make it active",
            lazy(_RUN + "new_session_prompt"),
            (
                PromptArg("session_id", "Session id; default the git branch or a timestamp"),
                PromptArg("project", "Project key"),
            ),
        ),
        PromptSpec(
            "resume_by_id",
            "Resume a session by explicit session_id",
            lazy(_RUN + "resume_by_id_prompt"),
            (PromptArg("session_id", "Session id to activate and resume", True), PromptArg("project", "Project key")),
        ),
    ),
    resources=(
        ResourceSpec(
            "shared-context://raw",
            "Raw shared context",
            "Recent events of the default project as JSON lines.",
            "application/x-ndjson",
            lazy(_RUN + "read_raw"),
        ),
        ResourceSpec(
            "shared-context://latest",
            "Latest handoff",
            "Latest handoff and recent entries, for a quick resume.",
            "text/plain",
            lazy(_RUN + "read_latest"),
        ),
        ResourceSpec(
            "shared-context://info",
            "Store info",
            "Store path and the rule that chose it, writer, logs, counts.",
            "application/json",
            lazy(_RUN + "read_info"),
        ),
    ),
    dynamic_prompts=(lazy(_RUN + "resume_prompts"),),
    prompt_signature=lazy(_RUN + "resume_signature"),
)

