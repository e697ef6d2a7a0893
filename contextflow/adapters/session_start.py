"""What a new session is told (the SessionStart hook): the latest handoff, recent decisions and open
questions, open threads, recent sessions and the composed knowledge, most important first, sized
for what clients show. The reads of earlier sessions are `capture.recall`'s.

Claude Code and Codex show the model at most 10,000 characters of one hook's output (Claude Code
swaps the rest for a preview and a file path; Codex drops the middle), so the default budget
(`hooks.DEFAULT_BUDGET`) fits whole and a cut loses the least important part.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from contextflow.capture.turn_directives import current_task
from contextflow.core.text import clean, cut, estimate_tokens, quote

if TYPE_CHECKING:
    from contextflow.app import App
    from contextflow.capture.filestate import Change
    from contextflow.capture.recall import Latest

# What each client shows the model of one hook's output, in characters (None: no documented cap).
# The web page (`contextflow ui`) and `contextflow start-preview` measure a session start against it.
CLIENT_LIMITS: tuple[tuple[str, str, int | None], ...] = (
    ("claude-code", "Claude Code", 10_000),
    ("codex", "Codex CLI", 10_000),
    ("gemini", "Gemini CLI", None),
)
CLIENT_LIMIT_CHARS = min(limit for _, _, limit in CLIENT_LIMITS if limit)
RECENT_SESSIONS = 5
AUTO_PREFIX = "[automatic handoff]"
PARTIAL_NOTE = (
    "(This machine is still reading the store's logs into its local views: the above is from the newest "
    "events only; older sessions show at the next session start.)"
)
# The graph is composed from its tables on disk (graph/stored.py). While they cannot serve (a build under
# way), it would be folded whole (about 30 us an event: a 100,000-node import's 200,000 events took 6 s
# and 580 MB): above this many events the session start then says where the knowledge is.
GRAPH_FOLD_MAX = 10_000
COMPOSE_FIRST = 500  # the graph's best-ranked candidates a session start looks at (the rest count as not fitting)
LARGE_GRAPH_NOTE = (
    "## Knowledge\n\nThe knowledge graph holds more than {events} events, too many to compose at each "
    "session start: call graph_compose (or run `contextflow compose`) for its pinned and working "
    "nodes, graph_recall to search it."
)
NOTHING_YET_NOTE = (
    "(This machine is still reading the store's logs into its local views, and nothing of project {project} is "
    "among the newest events read so far: its handoffs and sessions show at a later session start.)"
)


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


def handoff_text(app: App, project: str, budget_chars: int, root: str | None = None) -> str:
    """The repository's latest handoff (`capture.recall.latest_handoff`: the agent's word, or the
    automatic one derived from the captured turns of the session that worked last), with the files
    it cites checked against the code now."""
    from contextflow.capture import recall

    latest = recall.latest_handoff(app, project)
    if latest is None:
        return ""
    digest = latest.digest or {}
    state = (latest.state or {}) if latest.event is not None else digest.get("state", {})
    changed = _changes(root, state, app.store.writer)
    if latest.event is not None:
        from contextflow.sessions.entry import entry_text

        automatic = bool(latest.event.data.get("auto"))
        title = f"Latest handoff in project {project}" + (" (automatic)" if automatic else " (written by the agent)")
        body = entry_text(latest.event)
        if latest.session_id and not latest.event.data.get("session_id"):
            body += f"\n(written in session {clean(latest.session_id, True)})"
    else:
        title = f"Latest handoff in project {project} (automatic, from the captured turns of the session)"
        body = automatic_text(latest, changed)
    where = _where(root, state, app.store.writer)
    if where:
        body += "\nMade elsewhere: " + "; ".join(clean(note, True) for note in where)
    if changed:
        body += "\nChanged since this handoff (check before relying on it):\n" + "\n".join(
            f"- {clean(change.text(), True)}" for change in changed
        )
    return f"## {title}\n\n" + clip_block(body, budget_chars)


def _changes(root: str | None, state: dict[str, object], machine: str = "") -> list[Change]:
    """The files `state` cites that are not as captured, as seen from `root` on this machine (`machine`)."""
    from contextflow.capture.filestate import Here, changes

    return changes(root, state, here=Here(root, machine)) if root and state else []


def _where(root: str | None, state: dict[str, object], machine: str) -> list[str]:
    """Where a claim was made when not here: another branch, machine or checkout (`filestate.where_notes`)."""
    from contextflow.capture.filestate import Here, where_notes

    return where_notes(state, Here(root, machine)) if root and isinstance(state, dict) and state else []


def automatic_text(latest: Latest, changed: list[Change]) -> str:
    """An automatic handoff derived from a session's turns: a provenance header, then its fields
    quoted; a failing check whose files changed since is not shown as current."""
    from contextflow.capture.digest import auto_handoff, decision_text
    from contextflow.capture.outcomes import targets_of
    from contextflow.operations.provenance import header

    fields = auto_handoff(latest.digest or {})
    moved = {change.path for change in changed}
    head = header(
        f"{latest.ts} automatic handoff of {clean(latest.agent or 'a client', True)}",
        ("session", latest.session_id),
        ("turns", str(fields.get("turns", ""))),
    )
    lines = [head, "summary:", quote("[automatic handoff] " + str(fields["summary"]))]

    def block(label: str, items: list[str]) -> None:
        if items:
            lines.extend([f"{label}:", quote("\n".join(f"- {item}" for item in items))])

    block("files", [f + (" (changed since)" if f in moved else "") for f in fields.get("files", [])[:20]])
    block("tests", fields.get("tests", []))
    block("commands", fields.get("commands", []))
    current: list[str] = []
    stale: list[str] = []
    for failure in fields.get("failing", []):
        cited = set(targets_of(failure["command"])) or set(fields.get("files", []))
        text = f"`{failure['command'][:80]}` exited {failure['exit']}" + (
            f": {failure['error']}" if failure.get("error") else ""
        )
        (stale if cited & moved else current).append(text)
    block("failing now (as last run)", current)
    block("failed before files it covers changed (re-run to know)", stale)
    block("decisions", [decision_text(d) for d in fields.get("decisions", [])][::-1][:8])
    block("open questions", fields.get("open_questions", [])[::-1][:8])
    block("next steps", fields.get("next_steps", [])[:8])
    if latest.earlier is not None:
        lines.append("earlier in this session the agent handed off (later work followed):")
        lines.append(quote(str(latest.earlier.data.get("summary", ""))))
    return "\n".join(lines)


def decisions_text(app: App, project: str, budget_chars: int, root: str | None, shown: str) -> str:
    """Decisions, open questions and todos of the repository's recent sessions (newest first), the
    ones the handoff above shows left out, each marked when a file it cites (else a file its turn
    wrote) changed since."""
    from contextflow.capture import recall

    lines: list[str] = []
    used = 0
    checked: dict[int, list[Change]] = {}  # the files of one turn are checked once
    for said in recall.recent_substance(app, project):
        if said.text in shown:
            continue
        files = list(said.state.get("files") or {})
        named = [path for path in files if path in said.text or path.rsplit("/", 1)[-1] in said.text]
        cited = named or files  # a claim naming no file is about the files its turn wrote
        key = id(said.state)
        if key not in checked:
            checked[key] = _changes(root, said.state, app.store.writer)
        changed = [c for c in checked[key] if c.path in cited][:3]
        notes = [*_where(root, said.state, app.store.writer), *(c.text() for c in changed)]
        mark = ("; " + ", ".join(notes)) if notes else ""
        where = f"{said.ts[:10]}, {clean(said.agent, True)}, session {clean(said.session_id, True)[:40]}"
        line = f"- {said.kind}: {clean(said.text, True)} ({where}{mark})"
        if used + len(line) > budget_chars - 80:
            break
        lines.append(line)
        used += len(line) + 1
    if not lines:
        return ""
    return "## Decisions and open questions of recent sessions\n\n" + "\n".join(lines)


def threads_text(app: App, budget_chars: int) -> str:
    """Open timeline threads; empty when there are none."""
    from contextflow import ondisk

    if ondisk.empty(app, "timeline"):
        return ""  # (nothing of the timeline imported)
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
        + (f" | {clip(s.latest_handoff_summary, 120)}" if _written_summary(s.latest_handoff_summary) else "")
        for s in found
    ]
    body = "\n".join(lines) + "\n(Full entries: resume_session with a session_id, or `contextflow resume ID`.)"
    return "## Recent sessions\n\n" + clip_block(body, budget_chars)


def _written_summary(summary: str) -> bool:
    """Whether a session's latest handoff summary is shown in its line: an automatic one is a snapshot
    of the session's turns when it was written (the handoff and decisions above are derived now)."""
    return bool(summary) and not summary.startswith(AUTO_PREFIX)


def clip_block(text: str, limit: int) -> str:
    return cut(text, limit, "\n[... clipped]", keep=max(0, limit - 20), tidy=True)


def session_start(app: App, hooks: Path, budget: int, project: str | None = None, cwd: str | None = None) -> str:
    """What a new session is told, most important first, so whatever a client cuts is the least of it:
    the latest handoff, the recent decisions and open questions, open threads, recent sessions (one
    line each), then the composed knowledge (pinned first) in the room left. The whole fits `budget`
    tokens (about 4 characters each). `cwd`: the session's folder, whose repository the files
    cited are checked in."""
    from contextflow import ondisk
    from contextflow.core.project import repository_root

    project = project or app.settings.default_project
    chars = budget * 4
    found = repository_root(Path(cwd)) if cwd else None
    root = str(found) if found else None
    parts = [handoff_text(app, project, chars // 3, root)]
    parts.append(decisions_text(app, project, chars // 6, root, parts[0]))
    parts.append(threads_text(app, chars // 6))
    parts.append(sessions_text(app, project, chars // 6))
    parts = [part for part in parts if part]
    if ondisk.empty(app, "graph"):  # nothing to compose (and nothing of the graph imported)
        return clip_block("\n\n".join(parts), chars)
    from contextflow.graph.table import STAGE

    if not ondisk.staged(app, STAGE) and ondisk.holds_more_than(app, "graph", GRAPH_FOLD_MAX):  # (seconds to fold)
        parts.append(LARGE_GRAPH_NOTE.format(events=f"{GRAPH_FOLD_MAX:,}"))
        return clip_block("\n\n".join(parts), chars)
    query, saved_budget = default_query(app, hooks)
    room = min(budget - sum(estimate_tokens(part) + 1 for part in parts), saved_budget or budget)
    if room >= 100:
        from contextflow.graph.compose import compose, scoped_query

        scoped = scoped_query(query, app.settings.default_project)  # this repo + shared + pinned
        composed = compose(app, scoped, room, first=COMPOSE_FIRST)
        if composed.included and composed.text:
            parts.append(composed.text)
    return clip_block("\n\n".join(parts), chars)
