"""The saved conversations read from their table on disk (conversations/table.py): what
`conversations/core.py` and search's hits read of a `ConversationsState`, each conversation queried when
a call touches it. One object serves one call; a store scoped to some projects (an HTTP grant's,
`Store.read_projects`) reads the same table, each query keeping to those projects.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from contextflow.conversations.table import entry_of
from contextflow.conversations.view import ConversationEntry, ConversationKey
from contextflow.core.project import within
from contextflow.core.tables import Tables


class _Entries(Mapping[ConversationKey, ConversationEntry]):
    """(project, conversation id) -> its latest save, loaded when asked for."""

    def __init__(self, tables: Tables, projects: frozenset[str] | None) -> None:
        self.tables, self.projects = tables, projects
        self._loaded: dict[ConversationKey, ConversationEntry | None] = {}

    def peek(self, sql: str, params: Sequence[Any] = (), tail: str = "") -> list[tuple[Any, ...]]:
        """Rows of `sql` (ending in its WHERE condition) within this store's projects, then `tail`."""
        scope, projects = within(self.projects)
        return self.tables.peek(f"{sql}{scope} {tail}", (*params, *projects))

    def __getitem__(self, key: ConversationKey) -> ConversationEntry:
        if key not in self._loaded:
            sql = "SELECT data FROM conversations_rows WHERE project = ? AND conversation_id = ?"
            found = self.peek(sql, key)
            self._loaded[key] = entry_of(found[0][0]) if found else None
        entry = self._loaded[key]
        if entry is None:
            raise KeyError(key)
        return entry

    def __iter__(self) -> Iterator[ConversationKey]:
        found = self.peek("SELECT project, conversation_id FROM conversations_rows WHERE 1")
        return iter([(project, cid) for project, cid in found])

    def __len__(self) -> int:
        return int(self.peek("SELECT count(*) FROM conversations_rows WHERE 1")[0][0])


class StoredConversations:
    """The conversations as their table holds them now (the caller brought it up to date: `ondisk.served`)."""

    def __init__(self, tables: Tables, projects: frozenset[str] | None = None) -> None:
        self.records = _Entries(tables, projects)

    def newest_first(self, project: str | None = None, count: int | None = None) -> list[ConversationEntry]:
        where, params = ("project = ?", [project]) if project is not None else ("1", [])
        tail = f"ORDER BY hlc DESC, w DESC, seq DESC LIMIT {-1 if count is None else int(count)}"
        return [
            entry_of(blob)
            for (blob,) in self.records.peek(f"SELECT data FROM conversations_rows WHERE {where}", params, tail)
        ]
