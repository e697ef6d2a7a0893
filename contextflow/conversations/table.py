"""The saved conversations' state in tables (a `Stage`, core/table_stages.py): each conversation's latest
save, first save and version count as the pure fold (`conversations/view.py`) leaves them, so a call
reads the conversations it shows (`conversations/stored.py`) instead of folding every save.

A batch is folded by loading the conversations its saves name into an empty `ConversationsState`,
applying the saves with `ConversationsView.apply` itself, and writing those back.
"""

from __future__ import annotations

from typing import Any

import orjson

from contextflow.conversations.view import SAVE_KIND, ConversationEntry, ConversationsState, ConversationsView
from contextflow.core.events import Event
from contextflow.core.formats import Format
from contextflow.core.table_sets import Stage, StageWriter, db_stamp
from contextflow.core.table_stages import CHUNK, chunks

SCHEMA = (
    """CREATE TABLE conversations_rows(
    project TEXT NOT NULL, conversation_id TEXT NOT NULL, hlc INTEGER NOT NULL, w TEXT NOT NULL, seq INTEGER NOT NULL,
    data BLOB NOT NULL, PRIMARY KEY(project, conversation_id)) WITHOUT ROWID""",
    "CREATE INDEX conversations_newest ON conversations_rows(hlc, w, seq)",
    "CREATE INDEX conversations_id ON conversations_rows(conversation_id)",
)
TABLES = ("conversations_rows",)


def entry_of(blob: bytes) -> ConversationEntry:
    """The entry a `conversations_rows.data` holds."""
    (event_id, writer, seq, hlc, kind, data), first_key, first_ts, versions = orjson.loads(blob)
    return ConversationEntry(Event(event_id, writer, seq, hlc, kind, data), tuple(first_key), first_ts, versions)


def _row(project: str, conversation_id: str, entry: ConversationEntry) -> tuple[Any, ...]:
    event = entry.event
    saved = [event.id, event.writer, event.seq, event.hlc, event.kind, event.data]
    blob = orjson.dumps([saved, entry.first_key, entry.first_ts, entry.versions])
    return (project, conversation_id, db_stamp(event.hlc), event.writer, event.seq, blob)


def apply(db: StageWriter, events: list[Event]) -> None:
    """Fold `events` into the table (inside the stage's transaction)."""
    saves = [event for event in events if event.kind == SAVE_KIND]
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


STAGE = Stage(
    Format("conversations-state", 1, ("contextflow.conversations.table",)), "conversations", SCHEMA, TABLES, apply
)
