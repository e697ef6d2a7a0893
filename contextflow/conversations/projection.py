"""The saved conversations' state in tables (a folding `Projection`, core/projections.py): each conversation's latest
save, first save and version count as the pure fold (`conversations/view.py`) leaves them, so a call
reads the conversations it shows (`conversations/stored.py`) instead of folding every save.

A batch is folded by loading the conversations its saves name into an empty `ConversationsState`,
applying the saves with `ConversationsView.apply` itself, and writing those back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from contextflow.core import jsonio
from contextflow.core.events import Event
from contextflow.core.formats import Format
from contextflow.core.projections import CHUNK, Projection, Writer, by_project, chunks, db_stamp, merged_by
from contextflow.core.scan import overwritten

if TYPE_CHECKING:  # (the fold is imported when a chunk is folded or a row read: every process names this projection)
    from contextflow.conversations.view import ConversationEntry

SCHEMA = (
    """CREATE TABLE conversations_rows(
    project TEXT NOT NULL, conversation_id TEXT NOT NULL, hlc INTEGER NOT NULL, w TEXT NOT NULL, seq INTEGER NOT NULL,
    data BLOB NOT NULL, PRIMARY KEY(project, conversation_id)) WITHOUT ROWID""",
    "CREATE INDEX conversations_newest ON conversations_rows(hlc, w, seq)",
    "CREATE INDEX conversations_id ON conversations_rows(conversation_id)",
    # the saves folded in: one read twice (from two copies of a log) is not counted as a version again
    "CREATE TABLE conversations_saves(id TEXT PRIMARY KEY) WITHOUT ROWID",
)


def entry_of(blob: bytes) -> ConversationEntry:
    """The entry a `conversations_rows.data` holds."""
    from contextflow.conversations.view import ConversationEntry

    (event_id, writer, seq, hlc, kind, data), first_key, first_ts, versions = jsonio.loads(blob)
    return ConversationEntry(Event(event_id, writer, seq, hlc, kind, data), tuple(first_key), first_ts, versions)


def _row(project: str, conversation_id: str, entry: ConversationEntry) -> tuple[Any, ...]:
    event = entry.event
    saved = [event.id, event.writer, event.seq, event.hlc, event.kind, event.data]
    blob = jsonio.dumps([saved, entry.first_key, entry.first_ts, entry.versions])
    return (project, conversation_id, db_stamp(event.hlc), event.writer, event.seq, blob)


def apply(db: Writer, events: list[Event]) -> None:
    """Fold a chunk's `conversation.*` events into the table (inside the catch-up's transaction)."""
    from contextflow.conversations.view import SAVE_KIND, ConversationsState, ConversationsView

    saves = list({event.id: event for event in events if event.kind == SAVE_KIND}.values())
    known: set[str] = set()
    for part in chunks([event.id for event in saves], CHUNK):
        sql = f"SELECT id FROM conversations_saves WHERE id IN ({', '.join('?' * len(part))})"
        known.update(found for (found,) in db.execute(sql, part))
    saves = [event for event in saves if event.id not in known]
    db.executemany("INSERT INTO conversations_saves(id) VALUES (?)", [(event.id,) for event in saves])
    named = sorted({cid for event in saves if isinstance(cid := event.data.get("conversation_id"), str)})
    state = ConversationsState()
    for part in chunks(named, CHUNK):  # (each project's conversation of that id: the fold keys them by both)
        sql = "SELECT project, conversation_id, data FROM conversations_rows WHERE conversation_id IN"
        for project, cid, blob in db.execute(f"{sql} ({', '.join('?' * len(part))})", part):
            state.records[(project, cid)] = entry_of(blob)
    fold = ConversationsView()
    for event in saves:
        fold.apply(state, event)
    db.executemany(
        "INSERT OR REPLACE INTO conversations_rows VALUES (?, ?, ?, ?, ?, ?)",
        [_row(project, cid, entry) for (project, cid), entry in state.records.items()],
    )


def unneeded(events: Sequence[Event]) -> dict[str, tuple[str, ...]]:
    """Compaction (scan.Unneeded): a save followed in the same log by a later save of the same conversation
    keeps only its conversation_id and project (it still counts as a version and may be the first save);
    the latest save stays whole."""
    from contextflow.conversations.view import identity_of

    older = overwritten(events, lambda event: [identity] if (identity := identity_of(event)) else [])
    found = {event.id: () for event in events if identity_of(event) is None}
    return found | dict.fromkeys(older, ("conversation_id", "project"))


PROJECTION = Projection(
    Format("conversations-state", 2, ("contextflow.conversations.projection",)),
    SCHEMA,
    tables=("conversations_rows", "conversations_saves"),
    ahead=False,
    kinds="conversation.",
    apply=apply,
    merged=(merged_by("conversations_rows", "project", "conversation_id"),),
    scoped=by_project("conversations_rows"),
    unneeded=unneeded,
)
