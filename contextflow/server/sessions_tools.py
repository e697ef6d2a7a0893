"""ContextFlowMCP's public API: seven session tools, the session prompts and three resources."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from contextflow import __version__, render, sessions
from contextflow.app import App
from contextflow.events import as_dict
from contextflow.server.tooling import JSON, Feature, PromptArg, PromptSpec, Reply, ResourceSpec, ToolSpec
from contextflow.text import clean, clip
from contextflow.views.sessions import SessionSummary

_S: JSON = {"type": "string"}
_LIST: JSON = {"type": "array", "items": {"type": "string"}}
_LIMIT: JSON = {"type": "integer", "minimum": 1, "maximum": 200, "description": "How many, newest first. Default 20."}
_FORMAT: JSON = {"type": "string", "enum": ["text", "json"], "description": "text (default) or json."}
_PROJECT: JSON = {**_S, "description": "Project key. Default MCP_SHARED_CONTEXT_PROJECT or 'shared'."}
_SESSION: JSON = {**_S, "description": "Session id. Default: the active session."}
_SINCE: JSON = {**_S, "description": "ISO-8601 time; only activity at or after it."}
_AGENT_FILTER: JSON = {**_S, "description": "Only entries by this agent."}
_LIST_FILTERS: JSON = {
    "project": _PROJECT,
    "agent": _AGENT_FILTER,
    "since": _SINCE,
    "limit": _LIMIT,
    "include_unsessioned": {"type": "boolean", "description": "Add a '(no-session-id)' bucket. Default false."},
    "format": _FORMAT,
}


def dumps(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def _reply(args: JSON, text: str, payload: JSON) -> Reply:
    return Reply(dumps(payload) if args.get("format") == "json" else text, payload)


def read_shared_context(app: App, args: JSON) -> Reply:
    where = sessions.entry_filter(
        app,
        project=args.get("project"),
        agent=args.get("agent"),
        session_id=args.get("session_id"),
        kind=args.get("kind"),
        since=args.get("since"),
    )
    entries = sessions.read_entries(app, where, args.get("limit"))
    bad_lines = sessions.bad_line_count(app)
    payload = {
        "store": str(app.store.folder),
        "filters": {k: v for k, v in vars(where).items() if v is not None},
        "count": len(entries),
        "bad_lines": bad_lines,
        "entries": [as_dict(event) for event in entries],
    }
    return _reply(
        args, render.entries_text(entries, f"Shared context (project={where.project})", bad_lines), payload
    )


def append_shared_note(app: App, args: JSON) -> Reply:
    event = sessions.append_note(app, **args)
    data = {"id": event.id, "ts": event.ts, **{k: event.data.get(k) for k in ("project", "agent", "session_id")}}
    return Reply(f"Appended note {event.id} to {app.store.folder}\n" + _fields(data), data)


def write_shared_handoff(app: App, args: JSON) -> Reply:
    event = sessions.write_handoff(app, **args)
    data = {"id": event.id, "ts": event.ts, **{k: event.data.get(k) for k in ("project", "agent", "session_id")}}
    return Reply(f"Wrote handoff {event.id} to {app.store.folder}\n" + _fields(data), data)


def _fields(data: JSON) -> str:
    return "\n".join(f"{key}={clean(value, True)}" for key, value in data.items() if value is not None)


def get_latest_handoff(app: App, args: JSON) -> Reply:
    where = sessions.entry_filter(
        app, project=args.get("project"), agent=args.get("agent"), session_id=args.get("session_id")
    )
    event = sessions.latest_handoff(app, where)
    payload: JSON = {"store": str(app.store.folder), "handoff": as_dict(event) if event else None}
    if event is None:
        return _reply(args, f"No handoff found for project={where.project}.", payload)
    return _reply(args, "Latest handoff:\n" + render.entry_text(event), payload)


def _query(app: App, args: JSON) -> sessions.SessionQuery:
    return sessions.session_query(
        app,
        project=args.get("project"),
        agent=args.get("agent"),
        since=args.get("since"),
        limit=args.get("limit"),
        include_unsessioned=args.get("include_unsessioned"),
    )


def list_sessions(app: App, args: JSON) -> Reply:
    query = _query(app, args)
    found = sessions.list_sessions(app, query)
    payload = {"project": query.project, "count": len(found), "sessions": [s.as_dict() for s in found]}
    return _reply(args, render.sessions_text(found, query.project), payload)


def choose_session(app: App, args: JSON) -> Reply:
    query = _query(app, args)
    selected = sessions.choose_session(app, query, index=args.get("index"), session_id=args.get("session_id"))
    resume_args = {"session_id": selected.session_id, "project": query.project}
    payload = {"selected_session": selected.as_dict(), "resume_tool": "resume_session", "resume_args": resume_args}
    text = (
        f"Active session is now {clean(selected.session_id, True)}.\n{render.session_text(selected, 1)}\n\n"
        f"Next: call resume_session with {orjson.dumps(resume_args).decode()}"
    )
    return _reply(args, text, payload)


def resume_session(app: App, args: JSON) -> Reply:
    resume = sessions.resume_session(
        app, session_id=args.get("session_id"), project=args.get("project"), limit=args.get("limit")
    )
    return _reply(args, render.resume_text(resume), render.resume_json(resume))


TOOLS = [
    ToolSpec(
        "read_shared_context",
        "Read recent shared notes and handoffs so you can pick up where another assistant left off.",
        {
            "project": _PROJECT,
            "agent": _AGENT_FILTER,
            "session_id": _SESSION,
            "kind": {"type": "string", "enum": ["note", "handoff"]},
            "since": _SINCE,
            "limit": _LIMIT,
            "format": _FORMAT,
        },
        read_shared_context,
    ),
    ToolSpec(
        "append_shared_note",
        "Append a progress note to shared memory while you work.",
        {
            "agent": {**_S, "description": "Your name, e.g. claude, codex, gemini."},
            "text": {**_S, "description": "The note. Or pass it as `content`."},
            "content": {**_S, "description": "Alias of `text`."},
            "project": _PROJECT,
            "session_id": _SESSION,
            "task": {**_S, "description": "Current task title."},
            "tags": _LIST,
        },
        append_shared_note,
        required=("agent",),
        read_only=False,
    ),
    ToolSpec(
        "write_shared_handoff",
        "Write a structured handoff so the next assistant can continue your work.",
        {
            "agent": {**_S, "description": "Your name."},
            "summary": {**_S, "description": "What was done and the current state."},
            "next_steps": {**_LIST, "description": "Ordered next actions."},
            "open_questions": {**_LIST, "description": "Unknowns and blockers."},
            "files": {**_LIST, "description": "Relevant files."},
            "project": _PROJECT,
            "session_id": _SESSION,
            "task": {**_S, "description": "Task title."},
        },
        write_shared_handoff,
        required=("agent", "summary"),
        read_only=False,
    ),
    ToolSpec(
        "get_latest_handoff",
        "Get the most recent handoff (optionally by project, agent or session).",
        {"project": _PROJECT, "agent": _AGENT_FILTER, "session_id": _SESSION, "format": _FORMAT},
        get_latest_handoff,
    ),
    ToolSpec(
        "list_sessions",
        "List resumable work sessions, most recently active first.",
        _LIST_FILTERS,
        list_sessions,
    ),
    ToolSpec(
        "choose_session",
        "Make a session active, by its 1-based index in list_sessions or by session_id.",
        {
            "index": {
                "type": "integer",
                "minimum": 1,
                "maximum": 200,
                "description": "1-based index from list_sessions.",
            },
            "session_id": {**_S, "description": "Choose by id instead of index."},
            **_LIST_FILTERS,
        },
        choose_session,
        read_only=False,
    ),
    ToolSpec(
        "resume_session",
        "Load a session's latest handoff and recent entries to resume its exact work item.",
        {"session_id": _SESSION, "project": _PROJECT, "limit": _LIMIT, "format": _FORMAT},
        resume_session,
    ),
]


# -- prompts -------------------------------------------------------------------------------


def new_session_prompt(app: App, args: dict[str, str]) -> str:
    session_id = args.get("session_id", "").strip() or sessions.suggest_session_id(app)
    sessions.set_active_session(app, session_id)
    project = args.get("project", "").strip() or app.settings.default_project
    return (
        f"Active session selected: {session_id}\nproject={project}\n\nNext steps:\n"
        "1. Call resume_session with no session_id (it uses the active session).\n"
        "2. If this session is new, start working; record progress with append_shared_note "
        "and finish with write_shared_handoff."
    )


def _resume_prompt_text(app: App, session_id: str, project: str) -> str:
    sessions.require_session(app, session_id, project)  # a typo is an error, not a new active session
    sessions.set_active_session(app, session_id)
    resume = sessions.resume_session(app, session_id=session_id, project=project, limit=8)
    return (
        render.resume_text(resume) + "\n\nnext_step: call resume_session with no session_id to load the full context."
    )


def resume_by_id_prompt(app: App, args: dict[str, str]) -> str:
    session_id = args.get("session_id", "").strip()
    if not session_id:
        from contextflow.errors import InputError

        raise InputError("resume_by_id needs the session_id argument")
    project = args.get("project", "").strip() or app.settings.default_project
    return _resume_prompt_text(app, session_id, project)


def _session_description(summary: SessionSummary) -> str:
    """Last active day, task and latest handoff: what tells sessions apart, and changes rarely
    (each change re-sends the prompt list to clients)."""
    parts = [summary.latest_ts[:10] or "unknown"]
    if summary.task:
        parts.append(f"task:{clip(summary.task, 36)}")
    if summary.latest_handoff_summary:
        parts.append(f"handoff:{clip(summary.latest_handoff_summary, 48)}")
    return f"{clip(summary.session_id, 60)} - " + " | ".join(parts)


def _recent_sessions(app: App) -> list[SessionSummary]:
    query = sessions.SessionQuery(project=app.settings.default_project, limit=sessions.PROMPT_SESSIONS)
    return sessions.list_sessions(app, query)


def resume_prompts(app: App) -> list[PromptSpec]:
    """resume_1..resume_N: one per recent session of the default project."""

    def resumer(session_id: str) -> Callable[[App, dict[str, str]], str]:
        return lambda app, args: _resume_prompt_text(app, session_id, app.settings.default_project)

    return [
        PromptSpec(f"resume_{n}", _session_description(summary), resumer(summary.session_id))
        for n, summary in enumerate(_recent_sessions(app), 1)
    ]


def resume_signature(app: App) -> object:
    """Changes exactly when resume_prompts' names or descriptions would, without rendering them."""
    return tuple(
        (s.session_id, s.latest_ts[:10], s.task, s.latest_handoff_summary) for s in _recent_sessions(app)
    )


# -- resources -----------------------------------------------------------------------------


def read_raw(app: App) -> str:
    entries = sessions.read_entries(app, sessions.EntryFilter(app.settings.default_project), 200)
    return "".join(dumps(as_dict(event)).replace("\n", "") + "\n" for event in entries)


def read_latest(app: App) -> str:
    where = sessions.EntryFilter(app.settings.default_project)
    handoff = sessions.latest_handoff(app, where)
    recent = sessions.read_entries(app, where, 10)
    lines = [f"store: {app.store.folder}", f"default_project: {where.project}", ""]
    lines.append("latest_handoff:\n" + (render.entry_text(handoff) if handoff else "(none)"))
    lines.append("")
    lines.append(render.entries_text(recent, "recent_entries"))
    return "\n".join(lines)


def read_info(app: App) -> str:
    from contextflow.diagnose import store_info

    return dumps({"server": {"name": "contextflow", "version": __version__}, **store_info(app)})


FEATURE = Feature(
    tools=TOOLS,
    prompts=[
        PromptSpec(
            "new_session",
            "Start a new session (default id: the current git branch) and make it active",
            new_session_prompt,
            (
                PromptArg("session_id", "Session id; default the git branch or a timestamp"),
                PromptArg("project", "Project key"),
            ),
        ),
        PromptSpec(
            "resume_by_id",
            "Resume a session by explicit session_id",
            resume_by_id_prompt,
            (PromptArg("session_id", "Session id to activate and resume", True), PromptArg("project", "Project key")),
        ),
    ],
    resources=[
        ResourceSpec(
            "shared-context://raw",
            "Raw shared context",
            "Recent events of the default project as JSON lines.",
            "application/x-ndjson",
            read_raw,
        ),
        ResourceSpec(
            "shared-context://latest",
            "Latest handoff",
            "Latest handoff and recent entries, for a quick resume.",
            "text/plain",
            read_latest,
        ),
        ResourceSpec(
            "shared-context://info",
            "Store info",
            "Store path and the rule that chose it, writer, logs, counts.",
            "application/json",
            read_info,
        ),
    ],
    dynamic_prompts=[resume_prompts],
    prompt_signature=resume_signature,
)
