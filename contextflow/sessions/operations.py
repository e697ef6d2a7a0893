"""ContextFlowMCP's public API (a compatibility contract): the seven session tools, the session
prompts and three resources; and the session commands (note, handoff, read, sessions, resume, use)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from contextflow.operations.params import PROJECT, STRINGS, bare, boolean, integer, string, writer
from contextflow.operations.spec import FORMAT, Operation, Param, PromptArg, PromptSpec, ResourceSpec, Table, deferred
from contextflow.sessions import fields

if TYPE_CHECKING:
    from contextflow.admin import present as admin
    from contextflow.sessions import present
else:
    admin = deferred("contextflow.admin.present")  # the info resource: what doctor reports
    present = deferred("contextflow.sessions.present")


SESSION = string("session_id", "Default: the active session.", flag="--session")
AGENT_FILTER = string("agent", "Only entries by this agent.")
SINCE = string("since", "ISO-8601 time; activity since.")
LIMIT = integer("limit", *fields.LIMIT, f"How many, newest first. Default {fields.DEFAULT_LIMIT}.")
UNSESSIONED = boolean("include_unsessioned", "Add a '(no-session-id)' bucket.")
LIST_FILTERS = (PROJECT, AGENT_FILTER, SINCE, LIMIT, UNSESSIONED)
PROJECT_ARG = PromptArg("project", "Project key")


def _list(name: str, description: str, flag: str, help: str) -> Param:
    """A list argument: repeat the flag on the CLI."""
    return Param(name, {**STRINGS, "description": description}, flag=flag, cli_help=f"{help} (repeatable)")


OPERATIONS = (
    Operation(
        "read_shared_context",
        "Read recent shared notes and handoffs so you can pick up where another assistant left off.",
        (
            PROJECT,
            AGENT_FILTER,
            SESSION,
            string("kind", enum=fields.KINDS),
            SINCE,
            LIMIT,
            string("before", "An entry id: only entries older than it (the next page).", tool=False),
        ),
        present.read_shared_context,
        command=("read",),
    ),
    Operation(
        "append_shared_note",
        "Append a progress note to shared memory while you work.",
        (
            writer("Your name, e.g. claude, codex, gemini.", required=True),
            string("text", "The note.", positional=True, cli_help="the note"),
            string("content", "Alias of `text`.", cli=False),
            bare(PROJECT),  # read_shared_context explains it, as the shared filters below
            bare(SESSION),
            string("task", "Current task title."),
            Param("tags", STRINGS, flag="--tag", cli_help="a tag (repeatable)"),
        ),
        present.append_shared_note,
        command=("note",),
        read_only=False,
    ),
    Operation(
        "write_shared_handoff",
        "Write a structured handoff so the next assistant can continue your work.",
        (
            bare(writer(required=True)),  # append_shared_note explains it
            string("summary", "What was done and the current state.", required=True, positional=True),
            _list("next_steps", "Ordered next actions.", "--next", "a next step"),
            _list("open_questions", "Unknowns and blockers.", "--question", "an open question"),
            _list("files", "Relevant files.", "--file", "a relevant file"),
            bare(PROJECT),
            bare(SESSION),
            string("task", "Task title."),
        ),
        present.write_shared_handoff,
        command=("handoff",),
        read_only=False,
    ),
    Operation(
        "get_latest_handoff",
        "Get the most recent handoff.",
        tuple(map(bare, (PROJECT, AGENT_FILTER, SESSION))),
        present.get_latest_handoff,
        command=("latest",),
    ),
    Operation(
        "list_sessions",
        "List resumable work sessions, most recently active first.",
        (*map(bare, (PROJECT, AGENT_FILTER, SINCE, LIMIT)), UNSESSIONED),  # read_shared_context explains them
        present.list_sessions,
        command=("sessions",),
    ),
    Operation(
        "choose_session",
        "Make a session active, by its 1-based index in list_sessions or by session_id.",
        (
            integer("index", *fields.LIMIT, "1-based index from list_sessions.", positional=True),
            string("session_id", "Choose by id instead of index.", flag="--session"),
            *map(bare, LIST_FILTERS),  # list_sessions explains them
            FORMAT,  # a write, so always structured; ContextFlowMCP's callers pass format too
        ),
        present.choose_session,
        command=("choose",),
        read_only=False,
    ),
    Operation(
        "resume_session",
        "Load a session's latest handoff and recent entries to resume its exact work item.",
        (bare(Param("session_id", SESSION.schema, positional=True)), bare(PROJECT), bare(LIMIT)),
        present.resume_session,
        command=("resume",),
    ),
    Operation(
        "use_session",
        "Make a session the active one (default: a new id from the git branch or the time).",
        (string("session_id", "Session id; default a new one from the git branch or time.", positional=True),),
        present.use_session,
        command=("use",),
        read_only=False,
        tool=False,
    ),
    Operation(
        "mark_handoff_wrong",
        "Mark a handoff as wrong: it stops being any session's latest handoff.",
        (
            string("handoff_id", "The handoff's id.", required=True, positional=True),
            writer("Who marks it."),
            string("reason", "Why it is wrong (the next agent reads it)."),
        ),
        present.mark_handoff_wrong,
        command=("mark-wrong",),
        read_only=False,
        tool=False,
    ),
    Operation(
        "list_projects",
        "List the projects that have notes or handoffs, most recently active first.",
        (),
        present.list_projects,
        command=("projects",),
        tool=False,
    ),
)

TABLE = Table(
    operations=OPERATIONS,
    prompts=(
        PromptSpec(
            "new_session",
            "Start a new session (default id: the current git branch) and make it active",
            present.new_session_prompt,
            (PromptArg("session_id", "Session id; default the git branch or a timestamp"), PROJECT_ARG),
            describe=present.new_session_description,
        ),
        PromptSpec(
            "resume_by_id",
            "Resume a session by explicit session_id",
            present.resume_by_id_prompt,
            (PromptArg("session_id", "Session id to activate and resume", True), PROJECT_ARG),
        ),
    ),
    resources=(
        ResourceSpec(
            "shared-context://raw",
            "Raw shared context",
            "Recent events of the default project as JSON lines.",
            "application/x-ndjson",
            present.read_raw,
        ),
        ResourceSpec(
            "shared-context://latest",
            "Latest handoff",
            "Latest handoff and recent entries, for a quick resume.",
            "text/plain",
            present.read_latest,
        ),
        ResourceSpec(
            "shared-context://info",
            "Store info",
            "Store path and the rule that chose it, writer, logs, counts.",
            "application/json",
            admin.read_info,
        ),
    ),
    dynamic_prompts=(present.resume_prompts,),
    prompt_signature=present.resume_signature,
)
