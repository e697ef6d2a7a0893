"""The context records read from their table on disk (records/projection.py), the one way `records/core.py`
reads them: each record queried when a call touches it, a listing as one query (`select`; tests/records_oracle.py
holds the pure fold it is compared with). One object serves one call. While the tables do not hold every log
(a build, another process holding their lock) the same queries read them as built with the rows of the logs'
remaining bytes (`core/rest.py`); over its bound only the logs' newest bytes, and `read.partial` says how far
the build is.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from contextflow.core.projections import db_stamp
from contextflow.core.rest import Reading
from contextflow.records.projection import record_of
from contextflow.records.view import Record, RecordId


class _Records(Mapping[RecordId, Record]):
    """Every record the fold knows (deleted ones too), loaded when asked for."""

    def __init__(self, stored: StoredRecords) -> None:
        self.stored = stored

    def __getitem__(self, identity: RecordId) -> Record:
        found = self.stored.load(identity)
        if found is None:
            raise KeyError(identity)
        return found

    def __contains__(self, identity: object) -> bool:
        if not (isinstance(identity, tuple) and len(identity) == 2):
            return False
        project, key = identity
        return isinstance(project, str) and isinstance(key, str) and self.stored.load((project, key)) is not None

    def __iter__(self) -> Iterator[RecordId]:
        return iter([(p, k) for p, k in self.stored.read.query("SELECT project, key FROM records_rows")])

    def __len__(self) -> int:
        return int(self.stored.read.query("SELECT count(*) FROM records_rows")[0][0])


class _Categories:
    """The categories of live records (`check_category`'s `also`)."""

    def __init__(self, stored: StoredRecords) -> None:
        self.stored = stored

    def __contains__(self, name: object) -> bool:
        sql = "SELECT 1 FROM records_rows WHERE category = ? AND deleted = 0 LIMIT 1"
        return bool(self.stored.read.query(sql, (name,)))


class StoredRecords:
    """The records as `read` finds them (`ondisk.reading`)."""

    def __init__(self, read: Reading) -> None:
        self.read = read
        self._loaded: dict[RecordId, Record | None] = {}
        self.records = _Records(self)
        self.by_category = _Categories(self)

    def load(self, identity: RecordId) -> Record | None:
        if identity not in self._loaded:
            found = self.read.query("SELECT data FROM records_rows WHERE project = ? AND key = ?", identity)
            self._loaded[identity] = record_of(found[0][0]) if found else None
        return self._loaded[identity]

    def live(self, identity: RecordId) -> Record | None:
        record = self.load(identity)
        return None if record is None or record.deleted else record

    def holders(self, key: str) -> list[str]:
        return [
            project
            for (project,) in self.read.query("SELECT project FROM records_rows WHERE key = ? ORDER BY project", (key,))
        ]

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
        """One query: live, unexpired records passing every filter given, updated since
        `cutoff`, newest first, at most `count`."""
        where, params = _where(now_ms, cutoff, category, thread, pinned, prefix, project)
        sql = f"SELECT data FROM records_rows WHERE {where} ORDER BY hlc DESC, w DESC, seq DESC LIMIT ?"
        found = [record_of(blob) for (blob,) in self.read.query(sql, (*params, count))]
        self._loaded.update((record.identity, record) for record in found)
        return found

    def left_out(
        self,
        now_ms: int,
        count: int,
        cutoff: int = 0,
        category: str | None = None,
        thread: str | None = None,
        pinned: bool = False,
        prefix: str | None = None,
        project: str | None = None,
    ) -> int:
        """How many records `select` gives for these arguments with no `cutoff`, less how many it gives with it
        (each at most `count`): the records the window leaves out, nothing decoded, in one statement (the ones
        updated since `cutoff` are the newest, so among the `count` newest there are as many as it gives)."""
        where, params = _where(now_ms, 0, category, thread, pinned, prefix, project)
        sql = (
            "SELECT count(*), coalesce(sum(hlc >= ?), 0) FROM "
            f"(SELECT hlc FROM records_rows WHERE {where} ORDER BY hlc DESC LIMIT ?)"
        )
        found, recent = self.read.query(sql, (db_stamp(cutoff), *params, count))[0]
        return int(found) - int(recent)


def _where(
    now_ms: int,
    cutoff: int,
    category: str | None,
    thread: str | None,
    pinned: bool,
    prefix: str | None,
    project: str | None,
) -> tuple[str, list[object]]:
    """The condition of a listing (`StoredRecords.select`) and its parameters."""
    where = ["deleted = 0", "hlc >= ?", "(expires_ms IS NULL OR expires_ms > ?)"]
    params: list[object] = [db_stamp(cutoff), now_ms]
    for column, value in (("category", category), ("thread_id", thread), ("project", project)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if pinned:
        where.append("pinned")
    if prefix is not None:
        where.append("key >= ? AND key < ? AND substr(key, 1, ?) = ?")
        params += [prefix, prefix + "\U0010ffff", len(prefix), prefix]
    return " AND ".join(where), params
