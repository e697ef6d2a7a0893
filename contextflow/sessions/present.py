"""Session entries, handoffs and sessions as text and JSON, for every adapter; the session prompts and resources.

Stored text is untrusted: it is stripped of control sequences and quoted line by line under
a header that carries its provenance (kind, time, agent, writer).
"""

from __future__ import annotations

from typing import Any

from contextflow.app import App
from contextflow.core import checks, jsonio
from contextflow.core.errors import NotFoundError
from contextflow.core.events import Event, as_dict
from contextflow.core.text import DATA_NOTICE, clean, clip
from contextflow.operations.provenance import dumps, header, one_line, quoted
from contextflow.operations.spec import JSON, PromptSpec, Reply, given, partial
from contextflow.sessions import core as sessions
from contextflow.sessions import stored
from contextflow.sessions.core import Resume
from contextflow.sessions.entry import entry_text
from contextflow.sessions.view import SessionSummary


def entries_text(entries: list[Event], title: str, bad_lines: int = 0) -> str:
    bad = f" (skipped {bad_lines} malformed line(s); run `contextflow doctor`)" if bad_lines else ""
    if not entries:
        return f"{title}: no matching entries.{bad}"
    noun = "entry" if len(entries) == 1 else "entries"
    blocks = "\n\n".join(entry_text(event, n) for n, event in enumerate(entries, 1))
    return f"{title}: {len(entries)} {noun}. {DATA_NOTICE}{bad}\n\n{blocks}"


def session_text(summary: SessionSummary, index: int, with_handoff: bool = True) -> str:
    lines = [
        header(
            f"[{index}] session={one_line(summary.session_id)}",
            f"entries={summary.entry_count}",
            f"handoffs={summary.handoff_count}",
            ("last", summary.latest_ts),
            ("task", summary.task),
        )
    ]
    if summary.agents:
        lines.append("agents: " + ", ".join(one_line(agent) for agent in sorted(summary.agents)))
    if with_handoff and summary.latest_handoff_summary:
        lines.append(quoted("latest handoff: " + clip(summary.latest_handoff_summary, 180)))
    return "\n".join(lines)


def resume_text(resume: Resume) -> str:
    """The session line, the latest handoff in full, then the other recent entries: each said once."""
    lines = [f"Resume session {clean(resume.session_id, True)} (project={clean(resume.project, True)})"]
    if resume.not_in:
        lines.append(
            f"Found in project {clean(resume.project, True)}: this folder's project {clean(resume.not_in, True)} "
            "has no such session (pass project to choose)."
        )
    if resume.summary is None:
        lines.append("No entries yet for this session. Start working and write notes and handoffs.")
        return "\n".join(lines)
    lines += ["", session_text(resume.summary, 1, with_handoff=False), "", DATA_NOTICE, "", "latest_handoff:"]
    lines.append(entry_text(resume.latest_handoff) if resume.latest_handoff else "(none)")
    handoff_id = resume.latest_handoff.id if resume.latest_handoff else None
    others = [event for event in resume.entries if event.id != handoff_id]
    if others:
        lines += ["", "other recent entries:"]
        lines += [entry_text(event, n) + "\n" for n, event in enumerate(others, 1)]
    return "\n".join(lines).rstrip()


# -- operations ----------------------------------------------------------------------------


# Each reply below reads the malformed lines' count (`stored.bad_lines`) after its read of sessions, which
# brought the tables up to date for the call: they are not checked again.


def compat_keys(app: App, bad_lines: int) -> dict[str, Any]:
    """ContextFlowMCP's keys of a JSON reply, beside contextflow's own: the file its entries come from
    (its context file when in use, else this machine's log), its index (contextflow's derived tables),
    and the malformed lines skipped (`parseErrors`, as {file, line, error})."""
    legacy = app.store.location.legacy_files
    found = legacy[0] if legacy and legacy[0].exists() else app.store.log_writer.path
    errors: list[dict[str, Any]] = []
    if bad_lines:  # rare: only then are the logs read to name them
        errors = [{"file": r.file, "line": r.line, "error": r.reason} for r in app.store.health().bad_lines[:50]]
    return {"file": str(found), "indexFile": str(app.tables().path), "parseErrors": errors}


def _partial(app: App, reply: Reply, empty: bool = False) -> Reply:
    """`reply`, saying it is partial when the sessions were read while the build had not reached most of
    the logs (`stored.partial`: only their newest bytes were read beside the tables); `empty`: see `partial`."""
    return partial(reply, stored.partial(app), "older entries", empty)


def read_shared_context(app: App, args: JSON) -> Reply:
    where = sessions.entry_filter(app, **given(args, "project", "agent", "session_id", "kind", "since", "before"))
    entries = sessions.read_entries(app, where, args.get("limit"))
    bad_lines = stored.bad_lines(app)
    filters = {k: v for k, v in where._asdict().items() if v is not None and k != "skip"}
    keys = compat_keys(app, bad_lines)

    def payload() -> JSON:
        return {
            **keys,
            "store": str(app.store.folder),
            "filters": {**filters, "limit": args.get("limit") or sessions.DEFAULT_LIMIT},
            "count": len(entries),
            "bad_lines": bad_lines,
            "entries": [as_dict(event) for event in entries],
        }

    text = entries_text(entries, f"Shared context (project={where.project})", bad_lines)
    if entries:
        return _partial(app, Reply(text, payload))
    elsewhere = _entries_elsewhere(app, where) if not args.get("project") else ""
    named = checks.trimmed(args.get("session_id"), "session_id")
    missing = named is not None and not sessions.projects_holding(app, named) and named != sessions.active_session(app)
    remark = f"no session {clean(named or '', True)!r} in any project; list_sessions shows them" if missing else None
    return _partial(
        app,
        Reply(text + elsewhere, {**payload(), "elsewhere": elsewhere or None}, remark, exit=3 if missing else 0),
        empty=True,
    )


def _entries_elsewhere(app: App, where: sessions.EntryFilter) -> str:
    """Where the entries are when the default project has none matching: the projects with any."""
    others = [p for p in sessions.list_projects(app) if p.name != where.project]
    if not others:
        return ""
    listed = ", ".join(f"{clean(p.name, True)} ({p.entries})" for p in others[:5])
    return f" Entries are in other projects: {listed}; pass project (--project) to read one."


WHERE = ("project", "session_id", "task")  # where a note or handoff goes


def append_shared_note(app: App, args: JSON) -> Reply:
    started = _starts_session(app, args)
    event = sessions.append_note(app, agent=args["agent"], **given(args, "text", "content", "tags", *WHERE))
    return _written(app, "Appended note", event, started)


def write_shared_handoff(app: App, args: JSON) -> Reply:
    started = _starts_session(app, args)
    written = given(args, "next_steps", "open_questions", "files", *WHERE)
    event = sessions.write_handoff(app, agent=args["agent"], summary=args["summary"], **written)
    return _written(app, "Wrote handoff", event, started)


def _starts_session(app: App, args: JSON) -> bool:
    """Whether a write starts a new session: it names none and none is active."""
    return not args.get("session_id") and not sessions.active_session(app)


def _written(app: App, done: str, event: Event, started: bool = False) -> Reply:
    data = {"id": event.id, "ts": event.ts, **{k: event.data.get(k) for k in ("project", "agent", "session_id")}}
    fields = "\n".join(f"{key}={clean(value, True)}" for key, value in data.items() if value is not None)
    text = f"{done} {event.id} to {app.store.folder}\n{fields}"
    if started:
        data["new_session"] = True
        text += (
            f"\nNo session was active: this started session {clean(data['session_id'], True)}, now the active one "
            "(the next agent resumes it with resume_session; pass session_id to choose another)."
        )
    return Reply(text, data)


def mark_handoff_wrong(app: App, args: JSON) -> Reply:
    from contextflow.sessions.marks import mark_handoff_wrong as mark

    return _written(
        app,
        "Marked handoff wrong with note",
        mark(app, handoff_id=args["handoff_id"], agent=args.get("agent"), reason=args.get("reason")),
    )


def list_projects(app: App, args: JSON) -> Reply:
    found = sessions.list_projects(app)
    lines = [f"{clean(p.name, True)}  sessions={p.sessions}  entries={p.entries}  last={p.latest_ts}" for p in found]
    data = {"count": len(found), "projects": [p._asdict() for p in found]}
    return _partial(app, Reply("\n".join(lines) or "No projects yet.", data), empty=not found)


def get_latest_handoff(app: App, args: JSON) -> Reply:
    where = sessions.entry_filter(app, **given(args, "project", "agent", "session_id"))
    event = sessions.latest_handoff(app, where)
    text = "Latest handoff:\n" + entry_text(event) if event else f"No handoff found for project={where.project}."
    data: JSON = {
        **compat_keys(app, stored.bad_lines(app)),
        "store": str(app.store.folder),
        "handoff": as_dict(event) if event else None,
    }
    if event is None and where.session_id and not args.get("session_id"):  # only the active session was looked at
        wider = sessions.latest_handoff(app, where._replace(session_id=None))
        active = clean(where.session_id, True)
        data.update(active_session=where.session_id, looked_in="active session")
        if wider is None:
            text = (
                f"No handoff found for project={where.project} (the active session {active} has none, nor any other)."
            )
        else:
            data.update(handoff=as_dict(wider), looked_in="project")
            text = (
                f"The active session {active} has no handoff yet; the project's latest handoff "
                f"(project={where.project}, session {clean(str(wider.data.get('session_id')), True)}):\n"
                + entry_text(wider)
            )
            event = wider
    if event is None and (progress := stored.partial(app)) is not None:  # never "none" from an unfinished build
        raise NotFoundError(
            f"no handoff for project={where.project} among the newest entries read so far: this machine is still "
            f"indexing ({progress.text()}); ask again shortly"
        )
    return _partial(app, Reply(text, data, exit=0 if event else 3))


def _query(app: App, args: JSON) -> sessions.SessionQuery:
    """The listing filters among `args` (choose_session's index and session_id pick within them)."""
    return sessions.session_query(app, **given(args, "project", "agent", "since", "limit", "include_unsessioned"))


def list_sessions(app: App, args: JSON) -> Reply:
    query = _query(app, args)
    found = sessions.list_sessions(app, query)
    project = query.project
    filters = {"agent": query.agent, "since": query.since, "limit": query.limit}
    keys = compat_keys(app, stored.bad_lines(app))

    def payload() -> JSON:
        return {
            **keys,
            "project": project,
            "filters": {**filters, "include_unsessioned": query.include_unsessioned},
            "count": len(found),
            "sessions": [s.as_dict() for s in found],
        }

    if not found:
        return _partial(
            app,
            Reply(
                f"No resumable sessions for project={project}. A session starts with its first note or handoff "
                "(the new_session prompt, or `contextflow use NAME` in a shell).",
                payload,
            ),
            empty=True,
        )
    body = "\n\n".join(session_text(summary, n) for n, summary in enumerate(found, 1))
    return _partial(app, Reply(f"Sessions for project={project}, most recent first: {len(found)}.\n\n{body}", payload))


def choose_session(app: App, args: JSON) -> Reply:
    query = _query(app, args)
    selected = sessions.choose_session(app, query, index=args.get("index"), session_id=args.get("session_id"))
    resume_args = {"session_id": selected.session_id, "project": query.project}
    choice = {"index": args["index"]} if args.get("index") is not None else {"session_id": selected.session_id}
    payload = {
        **compat_keys(app, stored.bad_lines(app)),
        "project": query.project,
        "selected_session": selected.as_dict(),
        "choice": choice,
        "resume_tool": "resume_session",
        "resume_args": resume_args,
    }
    text = (
        f"Active session is now {clean(selected.session_id, True)}.\n{session_text(selected, 1)}\n\n"
        f"Next: resume it (resume_session with {jsonio.dumps(resume_args).decode()}, "
        f"or `contextflow resume {clean(selected.session_id, True)}` in a shell)"
    )
    return Reply(text, payload)


def resume_session(app: App, args: JSON) -> Reply:
    resume = sessions.resume_session(app, **given(args, "session_id", "project", "limit"))
    keys = compat_keys(app, stored.bad_lines(app))

    def payload() -> JSON:
        return {
            **keys,
            "project": resume.project,
            "session_id": resume.session_id,
            "summary": resume.summary.as_dict() if resume.summary else None,
            "latest_handoff": as_dict(resume.latest_handoff) if resume.latest_handoff else None,
            "entries": [as_dict(event) for event in resume.entries],
        }

    return _partial(app, Reply(resume_text(resume), payload), empty=resume.summary is None)


def use_session(app: App, args: JSON) -> Reply:
    session_id = args.get("session_id") or sessions.suggest_session_id(app)
    path = sessions.set_active_session(app, session_id)
    return Reply(f"Active session: {session_id} (saved in {path})", {"session_id": session_id, "file": str(path)})


# -- prompts -------------------------------------------------------------------------------


def new_session_description(app: App) -> str:
    """As ContextFlowMCP lists it: the id it would start, e.g. `New session (feature-login)`."""
    described = f"New session ({clean(sessions.suggest_session_id(app), True)}): start it and make it active"
    return described + (_listing_note(app) if stored.current(app) else "")


def _listing_note(app: App) -> str:
    """Said after a prompt's description when the sessions listed were read while the build had not reached
    most of the logs (`stored.partial`): the resume_N list may miss sessions, and their counts entries."""
    progress = stored.partial(app)
    return f" | PARTIAL: older sessions not listed yet ({progress.text()})" if progress else ""


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
    text = resume_text(resume) + (
        "\n\nContinue from the latest handoff (this is the whole resume: no need to call resume_session again). "
        "Record progress with append_shared_note and finish with write_shared_handoff."
    )
    return _partial(app, Reply(text)).text  # (as resume_session says it: read during a build)


def resume_by_id_prompt(app: App, args: dict[str, str]) -> str:
    session_id = args["session_id"].strip()  # required: the server checks it is given
    project = args.get("project", "").strip() or app.settings.default_project
    return _resume_prompt_text(app, session_id, project)


def _session_description(summary: SessionSummary) -> str:
    """Last active time, entry count, task and latest handoff, as ContextFlowMCP describes them."""
    parts = [summary.latest_ts[:19].replace("T", " ") or "unknown", f"entries:{summary.entry_count}"]
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

    def resumer(session_id: str) -> Any:
        return lambda app, args: _resume_prompt_text(app, session_id, app.settings.default_project)

    recent = _recent_sessions(app)
    note = _listing_note(app)
    return [
        PromptSpec(f"resume_{n}", _session_description(summary) + note, resumer(summary.session_id))
        for n, summary in enumerate(recent, 1)
    ]


def resume_signature(app: App) -> object:
    """Changes exactly when resume_prompts' names or descriptions would, without rendering them."""
    stored.ready(app)  # one query, however many sessions the list shows
    listed = stored.listing_signature(app, app.settings.default_project, sessions.PROMPT_SESSIONS)
    return listed, stored.partial(app) is None  # (the descriptions say whether the list is partial)


# -- resources -----------------------------------------------------------------------------


def read_raw(app: App) -> str:
    entries = sessions.read_entries(app, sessions.EntryFilter(app.settings.default_project), 200)
    lines = [dumps(as_dict(event)).replace("\n", "") + "\n" for event in entries]
    if (progress := stored.partial(app)) is not None:  # a JSON line first, so every line stays JSON
        note = partial(Reply(""), progress, "older entries").text.strip()
        lines.insert(0, dumps({"partial": progress._asdict(), "note": note}).replace("\n", "") + "\n")
    return "".join(lines)


def read_latest(app: App) -> str:
    where = sessions.EntryFilter(app.settings.default_project)
    handoff = sessions.latest_handoff(app, where)
    recent = sessions.read_entries(app, where, 10)
    handoff_text = entry_text(handoff) if handoff else "(none)"
    text = "\n".join(
        [
            f"store: {app.store.folder}",
            f"default_project: {where.project}",
            "",
            f"latest_handoff:\n{handoff_text}",
            "",
            entries_text(recent, "recent_entries"),
        ]
    )
    return _partial(app, Reply(text)).text  # (as get_latest_handoff says it: read during a build)
