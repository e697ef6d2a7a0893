"""A views.sqlite3 kept by an earlier version (its read positions in a table named "cursors") is
built again whole on upgrade: every format starts over, so no event is applied twice, the old table is
dropped, and the answers equal a fresh build's."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from contextflow.app import App
from contextflow.core import rest
from contextflow.graph import writes
from contextflow.records.core import set_record
from contextflow.sessions.core import EntryFilter, SessionQuery, append_note, list_sessions, read_entries
from tests.conftest import open_app


def _builds(path: Path) -> dict[str, str]:
    return dict(sqlite3.connect(path).execute("SELECT name, built FROM formats").fetchall())


def _as_kept_before(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE positions RENAME COLUMN position TO cursor")
    db.execute("ALTER TABLE positions RENAME TO cursors")
    db.commit()
    db.close()


def test_tables_kept_by_an_earlier_version_are_built_again_as_a_fresh_build(app: App) -> None:
    for n in range(3):
        append_note(app, agent="a", text=f"note {n}", session_id="s1")
    append_note(app, agent="a", text="elsewhere", session_id="s2")
    node = writes.add_node(app, type="fact", content="one", tags=["task:x"])
    writes.update_node(app, node.id, content="one again", add_tags=["task:y"])
    set_record(app, key="fact:k1", value={"v": 1})
    set_record(app, key="fact:k1", value={"v": 2})
    assert len(list_sessions(app, SessionQuery("shared"))) == 2
    app.tables().update(foreground=True)  # every format built
    app.close()
    path = app.store.state_dir / "views.sqlite3"
    before = _builds(path)
    _as_kept_before(path)
    upgraded = open_app("writer-a")
    tables = upgraded.tables()
    assert rest.build(tables, list(tables.sets.values())).built == set()  # until rebuilt, none counts as built
    append_note(upgraded, agent="a", text="after the upgrade", session_id="s1")
    sessions = list_sessions(upgraded, SessionQuery("shared"))
    entries = read_entries(upgraded, EntryFilter("shared", "s1"))
    assert upgraded.tables().differing() == []  # every table's rows: a fresh build's
    after = _builds(path)
    assert after.keys() == before.keys() and all(after[name] != before[name] for name in before)  # each rebuilt
    names = {name for (name,) in sqlite3.connect(path).execute("SELECT name FROM sqlite_master")}
    assert "cursors" not in names and "positions" in names
    upgraded.close()
    path.unlink()
    fresh = open_app("writer-a")
    assert list_sessions(fresh, SessionQuery("shared")) == sessions
    assert read_entries(fresh, EntryFilter("shared", "s1")) == entries
    assert sorted(s.entry_count for s in sessions) == [1, 4]
