"""Session notes and handoffs (ContextFlowMCP's model): the core functions behind the tools and CLI.

A session is a `session_id` within a project. Where a call needs one and none is given, the
active session is used: `MCP_SHARED_CONTEXT_ACTIVE_SESSION`, else the active-session file.
"""

from __future__ import annotations

import os
import re
import unicodedata
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from contextflow.app import App
from contextflow.core import checks
from contextflow.core.ahead import Winner, confirm
from contextflow.core.errors import InputError, NotFoundError, arg, call, tool
from contextflow.core.events import Event
from contextflow.core.fsutil import atomic_write, read_regular
from contextflow.core.ids import new_id
from contextflow.sessions import stored
from contextflow.sessions.fields import DEFAULT_LIMIT as DEFAULT_LIMIT
from contextflow.sessions.view import NO_SESSION, Marks, SessionSummary, session_of, summarize

PROMPT_SESSIONS = 50
PICK_HINT = (
    f"Pick one first: {call('list_sessions')} then {tool('choose_session')}, use the new_session or resume_N prompts, "
    f"run `contextflow pick-session`, or pass {arg('session_id')} explicitly."
)


# -- active session ------------------------------------------------------------------------


def active_session(app: App) -> str | None:
    path = app.settings.active_session_file
    if app.settings.active_session or path is None:
        return app.settings.active_session or None
    try:  # a regular file only, never waiting on a FIFO; trimmed as ContextFlowMCP trims it
        return read_regular(path).decode("utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def set_active_session(app: App, session_id: str) -> Path:
    """Make a session active (it need not have entries yet). An id with a control character
    is refused unless it is a stored session's (older versions accepted such ids); a line
    break never fits the one-line active-session file."""
    chosen = checks.trimmed(session_id, "session_id", required=True, max_chars=200) or ""
    if any(c in chosen for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"):
        raise InputError(f"{arg('session_id')} contains a line break; use a single-line id, e.g. 'feature-login'")
    controls = any(unicodedata.category(c) in ("Cc", "Cf") for c in chosen)
    if controls and chosen not in known_session_ids(app, app.settings.default_project):
        checks.name(chosen, "session_id")  # raises, saying which character
    path = app.settings.active_session_file
    assert path is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (chosen + "\n").encode(), fsync=False)
    return path


def new_session(app: App, session_id: str | None = None, cwd: Path | None = None) -> str:
    """Start a session explicitly: check its id (or suggest one) and make it active (when `app` keeps an active
    session: the page's writes keep none, and leave this machine's active session as it is)."""
    chosen = checks.name(session_id, "session_id") or suggest_session_id(app, cwd)
    if app.settings.active_session_file is not None:
        set_active_session(app, chosen)
    return chosen


def known_session_ids(app: App, project: str) -> list[str]:
    """The ids of the sessions that have entries in `project`, most recent first."""
    stored.ready(app)
    return stored.session_ids(app, project)


def projects_holding(app: App, session_id: str) -> list[str]:
    """The projects with entries in session `session_id`, most recently active first."""
    stored.ready(app)
    return stored.projects_holding(app, session_id)


def session_project(app: App, session_id: str | None, project: str | None) -> tuple[str, str | None]:
    """(the project to read `session_id` in, the default project it was not in): a project given
    wins; else the default project when it holds the session; else the project that holds it (an
    explicitly named session is found in whichever project holds it, e.g. ContextFlowMCP's `shared`)."""
    named = checks.trimmed(project, "project")
    default = app.settings.default_project
    if named or not session_id or session_id == NO_SESSION or session_id in known_session_ids(app, default):
        return named or default, None
    holders = projects_holding(app, session_id)
    return (holders[0], default) if holders else (default, None)


def require_session(app: App, session_id: str, project: str) -> None:
    """An error listing the closest known ids when `session_id` has no entries in `project`
    and is not the active session (which `new_session` or `use` created explicitly)."""
    if session_id == NO_SESSION or session_id == active_session(app):
        return
    known = known_session_ids(app, project)
    if session_id in known:
        return
    import difflib

    close = difflib.get_close_matches(session_id, known, n=5, cutoff=0.5)
    if close:
        hint = "closest: " + ", ".join(repr(c) for c in close)
    elif known:
        hint = "recent: " + ", ".join(repr(c) for c in known[:5])
    else:
        hint = "it has no sessions yet"
    elsewhere = [p for p in projects_holding(app, session_id) if p != project]
    if elsewhere:
        hint = f"it is in project {elsewhere[0]!r}: pass {arg('project')}={elsewhere[0]!r}"
    if not elsewhere and (progress := stored.partial(app)) is not None:  # never "no session" from a build
        hint = f"not among the newest entries read so far: this machine is still indexing ({progress.text()})"
        raise NotFoundError(
            f"session {session_id!r} in project {project!r} is not read yet ({hint}); ask again shortly"
        )
    raise NotFoundError(
        f"no session {session_id!r} in project {project!r} ({hint}). To start it, use the new_session prompt "
        f"or `contextflow use {session_id}`; {tool('list_sessions')} shows the existing ones"
    )


def resolve_session(app: App, explicit: str | None, *, required: bool = False) -> str | None:
    given = checks.trimmed(explicit, "session_id", max_chars=200)
    if given:
        return given
    active = active_session(app)
    if active or not required:
        return active
    raise InputError(f"No {arg('session_id')} given and no active session is set. {PICK_HINT}")


def suggest_session_id(app: App, cwd: Path | None = None) -> str:
    """The current git branch inside a repo (read from `.git`, git is not run), else `<prefix>-<timestamp>-<random>`."""
    from contextflow.core import gitrepo

    branch = gitrepo.head(gitrepo.open_repo(cwd if cwd is not None else os.getcwd()))[0] or ""
    cleaned = re.sub(r"-+", "-", re.sub(r"[^\w./-]+", "-", branch)).strip("-")
    if cleaned:
        return cleaned
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return f"{app.settings.new_session_prefix}-{stamp}-{new_id()[:6]}"


# -- writing -------------------------------------------------------------------------------


def _base(app: App, agent: str, project: str | None, session_id: str | None, task: str | None) -> dict[str, object]:
    base: dict[str, object] = {
        "project": checks.name(project, "project") or app.settings.default_project,
        "agent": checks.trimmed(agent, "agent", required=True, max_chars=200),
    }
    # with no session named or active, a new one (as new_session names it), made active: the next agent can resume it
    base["session_id"] = checks.name(session_id, "session_id") or resolve_session(app, None) or new_session(app)
    task_text = checks.trimmed(task, "task", max_chars=app.settings.max_array_item_chars)
    if task_text:
        base["task"] = task_text
    return base


def _lists(app: App, **values: list[str] | None) -> dict[str, list[str]]:
    """The non-empty lists among `values`, each checked against the array limits."""
    limits = {"max_items": app.settings.max_array_items, "max_chars": app.settings.max_array_item_chars}
    checked = {name: checks.text_list(value, name, **limits) for name, value in values.items()}
    return {name: items for name, items in checked.items() if items}


def append_note(
    app: App,
    *,
    agent: str,
    text: str | None = None,
    content: str | None = None,
    project: str | None = None,
    session_id: str | None = None,
    task: str | None = None,
    tags: list[str] | None = None,
) -> Event:
    """Append a progress note. `content` is an alias for `text`, used when `text` is empty."""
    limit = app.settings.max_note_chars
    body = checks.trimmed(text, "text", max_chars=limit) or checks.trimmed(content, "content", max_chars=limit)
    if body is None:
        raise InputError(f"{arg('text')} is required: pass the note as {arg('text')}")
    data = {**_base(app, agent, project, session_id, task), "text": body, **_lists(app, tags=tags)}
    return app.store.append("note", data)


def write_handoff(
    app: App,
    *,
    agent: str,
    summary: str,
    next_steps: list[str] | None = None,
    open_questions: list[str] | None = None,
    files: list[str] | None = None,
    project: str | None = None,
    session_id: str | None = None,
    task: str | None = None,
) -> Event:
    data = _base(app, agent, project, session_id, task)
    data["summary"] = checks.trimmed(summary, "summary", required=True, max_chars=app.settings.max_summary_chars)
    data.update(_lists(app, next_steps=next_steps, open_questions=open_questions, files=files))
    if app.store.batching:  # stamped when the batch is written: nothing to confirm yet
        return app.store.append("handoff", data)
    return confirm(app.store, lambda: app.store.append("handoff", data), lambda event: _latest(app, event), "handoff")


def _latest(app: App, written: Event) -> Winner | None:
    """The latest handoff of the session (or project) `written` went to, unless it is `written`."""
    latest = latest_handoff(app, EntryFilter(str(written.data["project"]), session_id=session_of(written) or None))
    return None if latest is None or latest.id == written.id else Winner(latest.id, latest.writer, latest.hlc)


def wrong_marks(app: App) -> Marks:
    """Handoffs marked wrong, keyed by (project, session, handoff id)."""
    stored.ready(app)
    return stored.marks(app)


# -- projects ------------------------------------------------------------------------------


class Project(NamedTuple):
    name: str
    entries: int
    sessions: int
    latest_ts: str
    agents: list[str]


def list_projects(app: App) -> list[Project]:
    """Every project with entries, most recently active first."""
    stored.ready(app)
    return [Project(*found) for found in stored.projects(app)]


# -- reading -------------------------------------------------------------------------------


class EntryFilter(NamedTuple):
    project: str
    agent: str | None = None
    session_id: str | None = None
    kind: str | None = None
    since: str | None = None
    before: str | None = None  # an entry id: only entries older than it (the next page)
    skip: frozenset[str] = frozenset()  # entry ids left out (handoffs marked wrong)


def entry_filter(
    app: App,
    *,
    project: str | None = None,
    agent: str | None = None,
    session_id: str | None = None,
    kind: str | None = None,
    since: str | None = None,
    before: str | None = None,
) -> EntryFilter:
    """The filter of a read; `kind` is one of KINDS or None (any)."""
    session = resolve_session(app, session_id)
    return EntryFilter(
        project=session_project(app, session, project)[0],
        agent=checks.trimmed(agent, "agent"),
        session_id=session,
        kind=kind,
        since=checks.iso_time(since, "since"),
        before=checks.trimmed(before, "before", max_chars=200),
    )


def read_entries(app: App, where: EntryFilter, limit: int | None = None, *, superseded: bool = False) -> list[Event]:
    """The most recent matching entries (`limit`, default DEFAULT_LIMIT), oldest first. An automatic handoff
    a newer one of its session replaced is left out (one entry per session), unless `superseded`."""
    count = DEFAULT_LIMIT if limit is None else limit
    stored.ready(app)
    return stored.entries(app, where, count, superseded=superseded)


def bad_line_count(app: App) -> int:
    """Malformed lines skipped in the logs, as of the derived tables' last read."""
    stored.ready(app)
    return stored.bad_lines(app)


def latest_handoff(app: App, where: EntryFilter) -> Event | None:
    """The newest handoff no note marked wrong."""
    stored.ready(app)
    return stored.latest_handoff(app, where)


class SessionQuery(NamedTuple):
    project: str
    agent: str | None = None
    since: str | None = None
    limit: int = DEFAULT_LIMIT
    include_unsessioned: bool = False


def session_query(
    app: App,
    *,
    project: str | None = None,
    agent: str | None = None,
    since: str | None = None,
    limit: int | None = None,
    include_unsessioned: bool | None = None,
) -> SessionQuery:
    return SessionQuery(
        project=checks.trimmed(project, "project") or app.settings.default_project,
        agent=checks.trimmed(agent, "agent"),
        since=checks.iso_time(since, "since"),
        limit=DEFAULT_LIMIT if limit is None else limit,
        include_unsessioned=bool(include_unsessioned),
    )


def all_sessions(app: App, query: SessionQuery, limit: int | None = None) -> list[SessionSummary]:
    """The project's sessions, most recent first (the first `limit` of them, from the derived tables)."""
    stored.ready(app)
    if query.agent or query.since or query.include_unsessioned:  # summarize the matching entries
        where = EntryFilter(query.project, query.agent, since=query.since)
        return summarize(stored.entries(app, where, None, superseded=True), query.include_unsessioned, wrong_marks(app))
    return stored.summaries(app, query.project, limit)


def list_sessions(app: App, query: SessionQuery) -> list[SessionSummary]:
    return all_sessions(app, query, query.limit)[: query.limit]


def choose_session(
    app: App, query: SessionQuery, *, index: int | None = None, session_id: str | None = None
) -> SessionSummary:
    """Pick a session by 1-based index in `list_sessions` order or by id, and make it active."""
    wanted = checks.trimmed(session_id, "session_id")
    if index is None and wanted is None:
        raise InputError(
            f"{tool('choose_session')} needs either {arg('index')} (from {tool('list_sessions')}) "
            f"or {arg('session_id')}"
        )
    if index is not None and wanted is not None:
        raise InputError(f"{tool('choose_session')} takes {arg('index')} or {arg('session_id')}, not both")
    if wanted is not None:
        plain = not (query.agent or query.since or query.include_unsessioned)
        if plain:
            stored.ready(app)
        found = stored.summaries(app, query.project, session_id=wanted) if plain else all_sessions(app, query)
        selected = next((s for s in found if s.session_id == wanted), None)
        if selected is None:
            raise NotFoundError(
                f"session {wanted!r} not found in project {query.project!r}; {call('list_sessions')} to see them"
            )
    else:
        position = index or 1
        visible = list_sessions(app, query)
        if position > len(visible):
            raise NotFoundError(
                f"no session at index {position}: {tool('list_sessions')} shows {len(visible)} "
                f"for project {query.project!r}"
            )
        selected = visible[position - 1]
    set_active_session(app, selected.session_id)
    return selected


class Resume(NamedTuple):
    project: str
    session_id: str
    summary: SessionSummary | None
    latest_handoff: Event | None
    entries: list[Event]
    not_in: str | None = None  # the default project, when the session was found in another


def resume_session(
    app: App, *, session_id: str | None = None, project: str | None = None, limit: int | None = None
) -> Resume:
    """A session's latest handoff and recent entries. An id given explicitly must exist (or be
    the active session): a typo is an error listing the closest ids, never a new session. A
    session not in the default project is found in whichever project holds it."""
    chosen = resolve_session(app, session_id, required=True) or ""
    name, not_in = session_project(app, chosen, project)
    count = DEFAULT_LIMIT if limit is None else limit
    found = _resume(app, chosen, name, count, explicit=bool(checks.trimmed(session_id, "session_id")))
    return found._replace(not_in=not_in)


def _resume(app: App, chosen: str, name: str, count: int, *, explicit: bool) -> Resume:
    if explicit:
        require_session(app, chosen, name)
    stored.ready(app)
    where = EntryFilter(name, session_id=chosen)
    found = (
        summarize(stored.entries(app, where, None), include_unsessioned=True)
        if chosen == NO_SESSION
        else stored.summaries(app, name, session_id=chosen)
    )
    latest = stored.latest_handoff(app, where)
    return Resume(name, chosen, found[0] if found else None, latest, stored.entries(app, where, count))
