"""The records' and conversations' pure folds as test oracles: the whole views folded in memory
(`tests/folding.py`) and read by the same core functions the tables' queries serve, for a store that shares
no machine-local state (`shares_state=False`)."""

from __future__ import annotations

from typing import Any

import pytest

from contextflow.app import App
from contextflow.conversations import core as conversations
from contextflow.conversations.view import ConversationEntry, ConversationsState, ConversationsView
from contextflow.records import core as records
from contextflow.records.view import Record, RecordId, RecordsState, RecordsView
from tests.folding import view_of


class FoldedRecords:
    """What `records/stored.py`'s `StoredRecords` answers, from the whole fold."""

    def __init__(self, app: App) -> None:
        self.state: RecordsState = view_of(app.store, RecordsView)
        self.records = self.state.records
        self.by_category = {record.category for record in self.records.values() if not record.deleted}

    def live(self, identity: RecordId) -> Record | None:
        return self.state.live(identity)

    def holders(self, key: str) -> list[str]:
        return sorted(project for project, held in self.records if held == key)

    def select(
        self,
        now_ms: int,
        count: int,
        cutoff: int = 0,
        category: str | None = None,
        thread: str | None = None,
        pinned: bool = False,
        prefix: str | None = None,
        project: str | None = None,
    ) -> list[Record]:
        """Live, unexpired records passing every filter given, updated since `cutoff`, newest first, at most `count`."""
        found = [
            record
            for record in self.records.values()
            if not record.deleted
            and record.event_key[0] >= cutoff
            and not record.expired(now_ms)
            and (category is None or record.category == category)
            and (thread is None or record.thread_id == thread)
            and (not pinned or record.pinned)
            and (prefix is None or record.key.startswith(prefix))
            and (project is None or record.project == project)
        ]
        return sorted(found, key=lambda record: record.event_key, reverse=True)[:count]

    def left_out(self, now_ms: int, count: int, cutoff: int, *filters: Any) -> int:
        return len(self.select(now_ms, count, 0, *filters)) - len(self.select(now_ms, count, cutoff, *filters))


class FoldedConversations:
    """What `conversations/stored.py`'s `StoredConversations` answers, from the whole fold."""

    def __init__(self, app: App) -> None:
        state: ConversationsState = view_of(app.store, ConversationsView)
        self.records = state.records

    def newest_first(self, project: str | None = None, count: int | None = None) -> list[ConversationEntry]:
        found = [entry for (owner, _), entry in self.records.items() if project is None or owner == project]
        return sorted(found, key=lambda entry: entry.event.key, reverse=True)[:count]


def fold_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make a store that shares no machine-local state (`shares_state=False`) read the whole folds."""
    read_records, read_conversations = records.records_state, conversations.conversations_state
    monkeypatch.setattr(
        records, "records_state", lambda app: read_records(app) if app.store.shares_state else FoldedRecords(app)
    )
    monkeypatch.setattr(
        conversations,
        "conversations_state",
        lambda app: read_conversations(app) if app.store.shares_state else FoldedConversations(app),
    )
