"""The saved conversations read from their table on disk (conversations/projection.py): what
`conversations/core.py` and search's hits read of a `ConversationsState`, each conversation queried when
a call touches it. One object serves one call.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from contextflow.conversations.projection import entry_of
from contextflow.conversations.view import ConversationEntry, ConversationKey
from contextflow.core.tables import Tables


class _Entries(Mapping[ConversationKey, ConversationEntry]):
    """(project, conversation id) -> its latest save, loaded when asked for."""

    def __init__(self, tables: Tables) -> None:
        self.tables = tables
        self._loaded: dict[ConversationKey, ConversationEntry | None] = {}

    def __getitem__(self, key: ConversationKey) -> ConversationEntry:
        if key not in self._loaded:
            sql = "SELECT data FROM conversations_rows WHERE project = ? AND conversation_id = ?"
            found = self.tables.peek(sql, key)
            self._loaded[key] = entry_of(found[0][0]) if found else None
        entry = self._loaded[key]
        if entry is None:
            raise KeyError(key)
        return entry

    def __iter__(self) -> Iterator[ConversationKey]:
        found = self.tables.peek("SELECT project, conversation_id FROM conversations_rows")
        return iter([(project, cid) for project, cid in found])

    def __len__(self) -> int:
        return int(self.tables.peek("SELECT count(*) FROM conversations_rows")[0][0])


class StoredConversations:
    """The conversations as their table holds them now (the caller brought it up to date: `ondisk.served`)."""

    def __init__(self, tables: Tables) -> None:
        self.tables = tables
        self.records = _Entries(tables)

    def newest_first(self, project: str | None = None, count: int | None = None) -> list[ConversationEntry]:
        where, params = ("WHERE project = ?", [project]) if project is not None else ("", [])
        sql = f"SELECT data FROM conversations_rows {where} ORDER BY hlc DESC, w DESC, seq DESC LIMIT ?"
        return [entry_of(blob) for (blob,) in self.tables.peek(sql, [*params, -1 if count is None else count])]
