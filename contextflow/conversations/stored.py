"""The saved conversations read from their table on disk (conversations/projection.py), the one way
`conversations/core.py` and search's hits read them: each conversation queried when a call touches it. One
object serves one call. While the tables do not hold every log the same queries read them as built with the
rows of the logs' remaining bytes (`core/rest.py`; `read.partial` when over its bound).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from contextflow.conversations.projection import entry_of
from contextflow.conversations.view import ConversationEntry, ConversationKey
from contextflow.core.rest import Reading


class _Entries(Mapping[ConversationKey, ConversationEntry]):
    """(project, conversation id) -> its latest save, loaded when asked for."""

    def __init__(self, read: Reading) -> None:
        self.read = read
        self._loaded: dict[ConversationKey, ConversationEntry | None] = {}

    def __getitem__(self, key: ConversationKey) -> ConversationEntry:
        if key not in self._loaded:
            sql = "SELECT data FROM conversations_rows WHERE project = ? AND conversation_id = ?"
            found = self.read.query(sql, key)
            self._loaded[key] = entry_of(found[0][0]) if found else None
        entry = self._loaded[key]
        if entry is None:
            raise KeyError(key)
        return entry

    def __iter__(self) -> Iterator[ConversationKey]:
        found = self.read.query("SELECT project, conversation_id FROM conversations_rows")
        return iter([(project, cid) for project, cid in found])

    def __len__(self) -> int:
        return int(self.read.query("SELECT count(*) FROM conversations_rows")[0][0])


class StoredConversations:
    """The conversations as `read` finds them (`ondisk.reading`)."""

    def __init__(self, read: Reading) -> None:
        self.read = read
        self.records = _Entries(read)

    def newest_first(self, project: str | None = None, count: int | None = None) -> list[ConversationEntry]:
        where, params = ("WHERE project = ?", [project]) if project is not None else ("", [])
        sql = f"SELECT data FROM conversations_rows {where} ORDER BY hlc DESC, w DESC, seq DESC LIMIT ?"
        return [entry_of(blob) for (blob,) in self.read.query(sql, [*params, -1 if count is None else count])]
