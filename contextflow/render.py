"""Text and JSON renderings of session entries, shared by the MCP tools and the CLI.

Stored text is untrusted: it is stripped of control sequences and quoted line by line under
a header that carries its provenance (kind, time, agent, writer).
"""

from __future__ import annotations

from typing import Any

from contextflow.events import Event, as_dict
from contextflow.sessions import Resume
from contextflow.text import DATA_NOTICE, clean, clip, quote
from contextflow.views.sessions import SessionSummary


def entry_header(event: Event, index: int | None = None) -> str:
    data = event.data
    parts = [f"{event.ts} {event.kind} by {clean(data.get('agent') or 'unknown-agent', True)}"]
    parts.append(f"writer={clean(event.writer, True)}")
    parts.append(f"project={clean(data.get('project') or 'shared', True)}")
    if data.get("session_id"):
        parts.append(f"session={clean(data['session_id'], True)}")
    if data.get("task"):
        parts.append(f"task={clip(data['task'], 120)}")
    parts.append(f"id={event.id}")
    prefix = f"[{index}] " if index is not None else ""
    return prefix + " | ".join(parts)


def entry_text(event: Event, index: int | None = None) -> str:
    data = event.data
    body: list[str] = []
    if event.kind == "note":
        body.append(quote(data.get("text", "")))
    else:
        body.append("summary:")
        body.append(quote(data.get("summary", "")))
        for name in ("next_steps", "open_questions", "files"):
            items = data.get(name) or []
            if items:
                body.append(f"{name}:")
                body.append(quote("\n".join(f"{n}. {clean(item, True)}" for n, item in enumerate(items, 1))))
    if data.get("tags"):
        body.append("tags: " + ", ".join(clip(tag, 60) for tag in data["tags"]))
    return entry_header(event, index) + "\n" + "\n".join(body)


def entries_text(entries: list[Event], title: str, bad_lines: int = 0) -> str:
    if not entries:
        return f"{title}: no matching entries." + _bad_note(bad_lines)
    noun = "entry" if len(entries) == 1 else "entries"
    blocks = [entry_text(event, n) for n, event in enumerate(entries, 1)]
    return f"{title}: {len(entries)} {noun}. {DATA_NOTICE}{_bad_note(bad_lines)}\n\n" + "\n\n".join(blocks)


def _bad_note(bad_lines: int) -> str:
    return f" (skipped {bad_lines} malformed line(s); run `contextflow doctor`)" if bad_lines else ""


def session_text(summary: SessionSummary, index: int) -> str:
    parts = [
        f"[{index}] session={clean(summary.session_id, True)}",
        f"entries={summary.entry_count}",
        f"handoffs={summary.handoff_count}",
    ]
    if summary.latest_ts:
        parts.append(f"last={summary.latest_ts}")
    if summary.task:
        parts.append(f"task={clip(summary.task, 120)}")
    lines = [" | ".join(parts)]
    if summary.agents:
        lines.append("agents: " + ", ".join(clean(agent, True) for agent in sorted(summary.agents)))
    if summary.latest_handoff_summary:
        lines.append(quote("latest handoff: " + clip(summary.latest_handoff_summary, 180)))
    return "\n".join(lines)


def sessions_text(sessions: list[SessionSummary], project: str) -> str:
    if not sessions:
        return f"No resumable sessions for project={project}. Start one with the new_session prompt."
    body = "\n\n".join(session_text(summary, n) for n, summary in enumerate(sessions, 1))
    return f"Sessions for project={project}, most recent first: {len(sessions)}.\n\n{body}"


def resume_text(resume: Resume) -> str:
    lines = [f"Resume session {clean(resume.session_id, True)} (project={clean(resume.project, True)})"]
    if resume.summary is None:
        lines.append("No entries yet for this session. Start working and write notes and handoffs.")
        return "\n".join(lines)
    lines += ["", session_text(resume.summary, 1), "", DATA_NOTICE, "", "latest_handoff:"]
    lines.append(entry_text(resume.latest_handoff) if resume.latest_handoff else "(none)")
    lines += ["", "recent_entries:"]
    lines += [entry_text(event, n) + "\n" for n, event in enumerate(resume.entries, 1)]
    return "\n".join(lines).rstrip()


def resume_json(resume: Resume) -> dict[str, Any]:
    return {
        "project": resume.project,
        "session_id": resume.session_id,
        "summary": resume.summary.as_dict() if resume.summary else None,
        "latest_handoff": as_dict(resume.latest_handoff) if resume.latest_handoff else None,
        "entries": [as_dict(event) for event in resume.entries],
    }
