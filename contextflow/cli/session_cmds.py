"""note, handoff, read, sessions, resume, use: the session tools from a shell or a hook."""

from __future__ import annotations

import argparse
from typing import Any

from contextflow import render, sessions
from contextflow.app import App
from contextflow.cli.output import add_format, emit
from contextflow.events import as_dict


def register(sub: Any) -> None:
    note = sub.add_parser("note", help="append a progress note", description="Append a progress note.")
    note.add_argument("text", help="the note text")
    _writer_args(note)
    note.add_argument("--tag", action="append", dest="tags", help="a tag (repeatable)")
    add_format(note)
    note.set_defaults(func=cmd_note)

    handoff = sub.add_parser("handoff", help="write a structured handoff", description="Write a handoff.")
    handoff.add_argument("summary", help="what was done and the current state")
    _writer_args(handoff)
    handoff.add_argument("--next", action="append", dest="next_steps", help="a next step (repeatable)")
    handoff.add_argument("--question", action="append", dest="open_questions", help="an open question (repeatable)")
    handoff.add_argument("--file", action="append", dest="files", help="a relevant file (repeatable)")
    add_format(handoff)
    handoff.set_defaults(func=cmd_handoff)

    read = sub.add_parser("read", help="read recent notes and handoffs", description="Read recent entries.")
    _filter_args(read)
    read.add_argument("--session", dest="session_id", help="session id (default: the active session)")
    read.add_argument("--kind", choices=("note", "handoff"))
    add_format(read)
    read.set_defaults(func=cmd_read)

    listing = sub.add_parser("sessions", help="list resumable sessions", description="List sessions, newest first.")
    _filter_args(listing)
    listing.add_argument("--include-unsessioned", action="store_true", help="add the (no-session-id) bucket")
    add_format(listing)
    listing.set_defaults(func=cmd_sessions)

    resume = sub.add_parser(
        "resume", help="show a session's latest handoff and entries", description="Resume a session."
    )
    resume.add_argument("session_id", nargs="?", help="session id (default: the active session)")
    resume.add_argument("--project")
    resume.add_argument("--limit", type=int)
    add_format(resume)
    resume.set_defaults(func=cmd_resume)

    use = sub.add_parser("use", help="make a session the active one", description="Set the active session.")
    use.add_argument("session_id", nargs="?", help="session id (default: a new id from the git branch or time)")
    add_format(use)
    use.set_defaults(func=cmd_use)


def _writer_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", default="human", help="who writes it (default 'human')")
    parser.add_argument("--project")
    parser.add_argument("--session", dest="session_id", help="session id (default: the active session)")
    parser.add_argument("--task")


def _filter_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--project")
    parser.add_argument("--agent")
    parser.add_argument("--since", help="ISO-8601 time")
    parser.add_argument("--limit", type=int)


def cmd_note(args: argparse.Namespace, app: App) -> int:
    event = sessions.append_note(
        app,
        agent=args.agent,
        text=args.text,
        project=args.project,
        session_id=args.session_id,
        task=args.task,
        tags=args.tags,
    )
    emit(args, f"Appended note {event.id}", as_dict(event))
    return 0


def cmd_handoff(args: argparse.Namespace, app: App) -> int:
    event = sessions.write_handoff(
        app,
        agent=args.agent,
        summary=args.summary,
        next_steps=args.next_steps,
        open_questions=args.open_questions,
        files=args.files,
        project=args.project,
        session_id=args.session_id,
        task=args.task,
    )
    emit(args, f"Wrote handoff {event.id}", as_dict(event))
    return 0


def cmd_read(args: argparse.Namespace, app: App) -> int:
    where = sessions.entry_filter(
        app, project=args.project, agent=args.agent, session_id=args.session_id, kind=args.kind, since=args.since
    )
    entries = sessions.read_entries(app, where, args.limit)
    emit(args, render.entries_text(entries, f"Shared context (project={where.project})"), [as_dict(e) for e in entries])
    return 0


def cmd_sessions(args: argparse.Namespace, app: App) -> int:
    query = sessions.session_query(
        app,
        project=args.project,
        agent=args.agent,
        since=args.since,
        limit=args.limit,
        include_unsessioned=args.include_unsessioned,
    )
    found = sessions.list_sessions(app, query)
    emit(args, render.sessions_text(found, query.project), [s.as_dict() for s in found])
    return 0


def cmd_resume(args: argparse.Namespace, app: App) -> int:
    resume = sessions.resume_session(app, session_id=args.session_id, project=args.project, limit=args.limit)
    emit(args, render.resume_text(resume), render.resume_json(resume))
    return 0


def cmd_use(args: argparse.Namespace, app: App) -> int:
    session_id = args.session_id or sessions.suggest_session_id(app)
    path = sessions.set_active_session(app, session_id)
    emit(args, f"Active session: {session_id} (saved in {path})", {"session_id": session_id, "file": str(path)})
    return 0
