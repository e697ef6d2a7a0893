"""The `feed` command's reply: one line an item, its provenance first (contextflow.feed.core)."""

from __future__ import annotations

from dataclasses import asdict

from contextflow.app import App
from contextflow.core.text import DATA_NOTICE, clean, quote
from contextflow.feed import core
from contextflow.feed.fields import DEFAULT_LIMIT
from contextflow.operations.provenance import header
from contextflow.operations.spec import JSON, Reply


def recent_activity(app: App, args: JSON) -> Reply:
    """The newest feed items matching the filters given, and the filters' choices."""
    items = core.recent(
        app,
        project=args.get("project"),
        agent=args.get("agent"),
        machine=args.get("machine"),
        kind=args.get("kind"),
        session_id=args.get("session_id"),
        before=args.get("before"),
        limit=args.get("limit") or DEFAULT_LIMIT,
    )
    blocks = [
        header(
            (item.kind, item.at),
            ("project", item.project),
            ("agent", item.agent),
            ("machine", item.machine),
            ("session", item.session_id),
            ("id", item.id),
        )
        + "\n"
        + quote(item.text)
        for item in items
    ]
    count = len(items)
    text = (
        f"Recent activity: {count} item{'s' if count != 1 else ''}, newest first. {DATA_NOTICE}\n\n"
        + "\n\n".join(blocks)
        if items
        else "Recent activity: nothing matches."
    )
    if count == (args.get("limit") or DEFAULT_LIMIT):
        text += f"\n\nOlder: pass before={clean(items[-1].id, True)}."
    return Reply(text, {"items": [asdict(item) for item in items], "facets": core.facets(app)})
