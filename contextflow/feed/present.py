"""The `feed` command's reply: one line an item, its provenance first (contextflow.feed.core)."""

from __future__ import annotations

from dataclasses import asdict

from contextflow.app import App
from contextflow.core.text import DATA_NOTICE, clean, quote
from contextflow.feed import core
from contextflow.feed.fields import DEFAULT_LIMIT
from contextflow.operations.provenance import header
from contextflow.operations.spec import JSON, Reply, given, partial


def recent_activity(app: App, args: JSON) -> Reply:
    """The newest feed items matching the filters given, and the filters' choices."""
    filters = given(args, "project", "agent", "machine", "kind", "session_id")
    found = core.page(app, filters, args.get("before"), args.get("limit") or DEFAULT_LIMIT)
    items = found.items
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
        if found.partial is None
        else "Recent activity: nothing matches in what is read so far."
    )
    if count == (args.get("limit") or DEFAULT_LIMIT):
        text += f"\n\nOlder: pass before={clean(items[-1].id, True)}."
    data: JSON = {"items": [asdict(item) for item in items], "facets": found.facets}
    return partial(Reply(text, data), found.partial, "items")
