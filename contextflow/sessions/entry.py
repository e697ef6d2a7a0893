"""One note or handoff as text: its provenance header, then its text quoted line by line. Light
imports: the session-start hook shows the latest handoff with it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from contextflow.core.project import DEFAULT_PROJECT
from contextflow.core.text import clean, clip, quote
from contextflow.operations.provenance import header, one_line, quoted

if TYPE_CHECKING:
    from contextflow.core.events import Event


def entry_text(event: Event, index: int | None = None) -> str:
    """One note or handoff: its provenance header, then its text quoted line by line."""
    data = event.data
    title = f"{event.ts} {event.kind} by {one_line(data.get('agent') or 'unknown-agent')}"
    head = header(  # (the same whatever its place in a listing: "[n] " goes before it, as cleaning it would leave it)
        title,
        ("writer", event.writer),
        ("project", data.get("project") or DEFAULT_PROJECT),
        ("session", data.get("session_id")),
        ("task", data.get("task")),
        ("id", event.id),
    )
    if index is not None:
        head = f"[{index}] {head}"
    if event.kind == "note":
        body = [quoted(data.get("text", ""))]
    else:
        body = ["summary:", quoted(data.get("summary", ""))]
        for name in ("next_steps", "open_questions", "files"):
            if items := data.get(name):
                body += [f"{name}:", quote("\n".join(f"{n}. {clean(item, True)}" for n, item in enumerate(items, 1)))]
    if data.get("tags"):
        body.append("tags: " + ", ".join(clip(tag, 60) for tag in data["tags"]))
    return "\n".join([head, *body])
