"""What a new session is told (the SessionStart hook): the latest handoff, open threads, recent
sessions and the composed knowledge, most important first, sized for what clients show.

Claude Code and Codex show the model at most 10,000 characters of one hook's output (Claude Code
swaps the rest for a preview and a file path; Codex drops the middle), so the default budget
(`hooks.DEFAULT_BUDGET`) fits whole and a cut loses the least important part.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from contextflow.adapters.hooks import current_task
from contextflow.core.text import cut, estimate_tokens

if TYPE_CHECKING:
    from contextflow.app import App

# What each client shows the model of one hook's output, in characters (None: no documented cap).
# The web page (`contextflow ui`) and `contextflow start-preview` measure a session start against it.
CLIENT_LIMITS: tuple[tuple[str, str, int | None], ...] = (
    ("claude-code", "Claude Code", 10_000),
    ("codex", "Codex CLI", 10_000),
    ("gemini", "Gemini CLI", None),
)
CLIENT_LIMIT_CHARS = min(limit for _, _, limit in CLIENT_LIMITS if limit)
RECENT_SESSIONS = 5


def default_query(app: App, hooks: Path) -> tuple[str, int | None]:
    from contextflow.graph.compose import DEFAULT_QUERY
    from contextflow.graph.writes import graph

    saved = graph(app).saved_view("default")
    if saved is not None:
        return saved.query, saved.budget
    task = current_task(hooks)
    if task:
        working = f"(tag:tier:working AND tag:task:{task})"
        return DEFAULT_QUERY.replace("tag:tier:working", working), None
    return DEFAULT_QUERY, None


def handoff_text(app: App, project: str, budget_chars: int) -> str:
    """The latest handoff, written or automatic: the active session's when it has one, else the project's."""
    from contextflow.sessions import core as sessions
    from contextflow.sessions.present import entry_text

    session_id = sessions.active_session(app)
    event = None
    if session_id:
        event = sessions.latest_handoff(app, sessions.EntryFilter(project, session_id=session_id))
    title = "Latest handoff of the active session"
    if event is None:
        event = sessions.latest_handoff(app, sessions.EntryFilter(project))
        title = f"Latest handoff in project {project}"
    if event is None:
        return ""
    return f"## {title}\n\n" + clip_block(entry_text(event), budget_chars)


def threads_text(app: App, budget_chars: int) -> str:
    """Open timeline threads; empty when there are none."""
    from contextflow.core import timeutil
    from contextflow.timeline import core as timeline
    from contextflow.timeline import present  # not imported by hooks that need no threads

    found = timeline.where_am_i(app, status="active", limit=5)
    if not found:
        return ""
    now = timeutil.now()
    body = "\n\n".join(present.whereabouts_text(where, now) for where in found)
    return "## Open threads\n\n" + clip_block(body, budget_chars)


def sessions_text(app: App, project: str, budget_chars: int) -> str:
    """The last few sessions of the project, one line each with its id (more: list_sessions, resume_session)."""
    from contextflow.core.text import clip
    from contextflow.sessions import core as sessions

    found = sessions.list_sessions(app, sessions.SessionQuery(project=project, limit=RECENT_SESSIONS))
    if not found:
        return ""
    lines = [
        f"- {clip(s.session_id, 60)} | last {s.latest_ts[:16]} | {clip(', '.join(sorted(s.agents)), 80) or '?'}"
        + (f" | {clip(s.latest_handoff_summary, 120)}" if s.latest_handoff_summary else "")
        for s in found
    ]
    body = "\n".join(lines) + "\n(Full entries: resume_session with a session_id, or `contextflow resume ID`.)"
    return "## Recent sessions\n\n" + clip_block(body, budget_chars)


def clip_block(text: str, limit: int) -> str:
    return cut(text, limit, "\n[... clipped]", keep=max(0, limit - 20), tidy=True)


def session_start(app: App, hooks: Path, budget: int, project: str | None = None) -> str:
    """What a new session is told, most important first, so whatever a client cuts is the least of it:
    the latest handoff, open threads, recent sessions (one line each), then the composed knowledge
    (pinned first) in the room left. The whole fits `budget` tokens (about 4 characters each)."""
    project = project or app.settings.default_project
    chars = budget * 4
    parts = [handoff_text(app, project, chars // 3)]
    parts.append(threads_text(app, chars // 6))
    parts.append(sessions_text(app, project, chars // 6))
    parts = [part for part in parts if part]
    query, saved_budget = default_query(app, hooks)
    room = min(budget - sum(estimate_tokens(part) + 1 for part in parts), saved_budget or budget)
    if room >= 100:
        from contextflow.graph.compose import compose, scoped_query

        composed = compose(app, scoped_query(query, app.settings.default_project), room)  # this repo + shared + pinned
        if composed.included and composed.text:
            parts.append(composed.text)
    return clip_block("\n\n".join(parts), chars)
