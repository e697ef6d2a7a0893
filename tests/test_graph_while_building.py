"""The graph is only queried: while the derived tables do not hold every log (another process builds them,
or holds their lock) the same queries read them as built with the rows of the logs' remaining bytes
(core/rest.py), folded by the graph's own `apply` and merged by each table's key onto the tables' rows;
nothing folds a whole view in memory, and over the rest's bound the reply says it is partial and how far
the build is."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from contextflow.app import App
from contextflow.core import projections
from contextflow.graph import explore, present, writes
from contextflow.graph.compose import compose
from tests.conftest import open_app
from tests.test_own_writes_while_building import building_elsewhere
from tests.test_records_stored import never_folded


def _contents(app: App, query: str) -> list[str]:
    return sorted(node.content for node in explore.run_query(app, query)[0])


def test_graph_writes_another_machine_made_are_read_whole_while_the_build_has_not_reached_them(
    app: App, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    built = writes.add_node(app, type="decision", content="use sqlite", tags=["tier:pinned", "task:old"])
    other_end = writes.add_node(app, type="fact", content="the other end")
    writes.link(app, built.id, other_end.id, "RELATES_TO")
    assert _contents(app, "tag:task:old") == ["use sqlite"]  # the tables hold them
    building_elsewhere(monkeypatch)
    other = open_app("writer-b", CONTEXTFLOW_STATE=str(tmp_path / "elsewhere"))
    try:
        writes.update_node(other, built.id, content="use sqlite, in WAL mode", remove_tags=["task:old"])
        writes.unlink(other, built.id, other_end.id)
        new = writes.add_node(other, type="fact", content="synced node", tags=["tier:pinned"])
        writes.link(other, new.id, built.id, "DEPENDS_ON")
    finally:
        other.close()
    never_folded(monkeypatch)
    assert app.tables().update() == -1 and not app.tables().current()
    # a node of the built state, updated and untagged by the logs' remaining bytes: merged by key
    assert _contents(app, "tag:task:old") == []
    assert _contents(app, "tag:tier:pinned") == ["synced node", "use sqlite, in WAL mode"]
    assert writes.graph(app).nodes[built.id].content == "use sqlite, in WAL mode"
    _, steps = explore.around(app, built.id)  # the neighbourhood: the new edge, not the removed one
    assert [(s.node.content, s.edge_type) for s in steps] == [("synced node", "DEPENDS_ON")]
    _, out, inc = explore.edges_of(app, built.id)
    assert out == [] and [e.source for e in inc] == [new.id]
    composed = compose(app, "tag:tier:pinned")
    assert "use sqlite, in WAL mode" in composed.text and "synced node" in composed.text
    shown = present.graph_recall(app, {"query": "tag:tier:pinned"})
    assert "PARTIAL" not in shown.text and "partial" not in shown.data  # every log read: complete
    assert explore.status(app)["nodes"] == 3


def test_a_node_and_an_edge_written_while_building_are_read_back_at_once(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    older = writes.add_node(app, type="fact", content="written before")
    app.tables().close()
    app.tables().path.unlink(missing_ok=True)  # a fresh machine: the tables hold nothing yet...
    building_elsewhere(monkeypatch)  # ...and another process builds them
    never_folded(monkeypatch)
    node = writes.add_node(app, type="fact", content="remembered while building", tags=["task:t1"])
    writes.link(app, node.id, older.id, "DEPENDS_ON")
    writes.tag(app, older.id, ["task:t1"])
    assert _contents(app, "tag:task:t1") == ["remembered while building", "written before"]
    assert [e.target for e in writes.graph(app).edges_out(node.id)] == [older.id]
    writes.untag(app, older.id, ["task:t1"])
    writes.delete_node(app, node.id)
    assert _contents(app, "tag:task:t1") == [] and _contents(app, "") == ["written before"]
    assert not app.tables().current()


def test_graph_writes_made_while_another_process_holds_the_lock_are_read(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = projections.Txn.__init__
    monkeypatch.setattr(projections.Txn, "__init__", lambda self, db, wait: real(self, db, min(wait, 0.05)))
    kept = writes.add_node(app, type="fact", content="before the lock")
    holder = sqlite3.connect(app.tables().path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process holds the write lock (past the reader's wait)
    try:
        never_folded(monkeypatch)
        writes.update_node(app, kept.id, content="under the lock")
        assert _contents(app, "") == ["under the lock"]
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_graph_reads_say_they_are_partial_and_how_far_the_build_is_when_too_much_remains(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextflow.core import rest

    node = writes.add_node(app, type="fact", content="the newest fact", tags=["tier:pinned"])
    app.tables().close()
    app.tables().path.unlink(missing_ok=True)
    building_elsewhere(monkeypatch)
    never_folded(monkeypatch)
    monkeypatch.setattr(rest, "REST_BYTES", 10)  # a new machine's backlog: too much to read per call
    reader = open_app("writer-a")
    for shown in (
        present.graph_recall(reader, {"query": "newest"}),
        present.graph_recall(reader, {"ids": [node.id]}),
        present.graph_recall(reader, {"around": node.id}),
        present.graph_compose(reader, {"query": "tag:tier:pinned"}),
        present.tags(reader, {}),
        present.show(reader, {"id": node.id}),
    ):
        assert shown.text.startswith("PARTIAL: this machine is still reading the store's logs into its local tables (")
        assert "indexed" in shown.text and (
            "newest" in shown.text or shown.data == [{"tag": "tier:pinned", "nodes": 1}]
        )
    assert present.graph_recall(reader, {"query": "newest"}).data["partial"]["log_bytes"] > 0
    assert isinstance(present.tags(reader, {}).data, list)  # its JSON keeps its shape
