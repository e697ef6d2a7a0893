"""The `activity` command: what a session did, turn by turn, as captured (contextflow.capture)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from contextflow.app import App
from contextflow.capture import stored
from contextflow.core.errors import InputError, arg, tool
from contextflow.core.events import as_dict
from contextflow.core.text import DATA_NOTICE, clean, quote
from contextflow.operations.provenance import header
from contextflow.operations.spec import JSON, Reply, partial
from contextflow.sessions import core as sessions

if TYPE_CHECKING:
    from contextflow.core.rest import Progress


def session_activity(app: App, args: JSON) -> Reply:
    """A session's captured turns (contextflow.capture), oldest first: request, files, tests, errors."""
    where = sessions.entry_filter(app, project=args.get("project"), session_id=args.get("session_id"))
    if not where.session_id:
        raise InputError(
            f"{tool('session_activity')} needs a {arg('session_id')} (no active session is set). {sessions.PICK_HINT}"
        )
    limit = args.get("limit") or sessions.DEFAULT_LIMIT
    turns = stored.turns(app, where.project).session(where.session_id)[-limit:]  # (that session's only)
    blocks = []
    for event in turns:
        raw = event.data.get("turn")
        turn: dict[str, Any] = raw if isinstance(raw, dict) else {}
        files: dict[str, Any] = turn["files"] if isinstance(turn.get("files"), dict) else {}
        lines = [
            header(("turn", event.ts), ("agent", event.data.get("agent")), ("writer", event.writer), ("id", event.id))
        ]
        lines += [quote(f"{name}: {turn[name]}") for name in ("request", "final") if turn.get(name)]
        lines += [quote(f"{kind}: {', '.join(map(str, paths))}") for kind, paths in files.items() if paths]
        lines += [quote(f"error: {error}") for error in turn.get("errors") or []]
        blocks.append("\n".join(lines))
    title = f"Activity of session {clean(where.session_id, True)} (project={clean(where.project, True)})"
    text = f"{title}: {len(turns)} turn(s). {DATA_NOTICE}\n\n" + "\n\n".join(blocks) if turns else f"{title}: none."
    data = {
        "project": where.project,
        "session_id": where.session_id,
        "count": len(turns),
        "turns": [as_dict(event) for event in turns],
    }
    return partial(Reply(text, data), _progress(app), "turns captured earlier")


def _progress(app: App) -> Progress | None:
    """How far the build is, when the captured turns were read from the logs' newest bytes only (never "none"
    from an unfinished build)."""
    from contextflow import ondisk
    from contextflow.capture.projection import PROJECTION

    return ondisk.partial(app, PROJECTION)
