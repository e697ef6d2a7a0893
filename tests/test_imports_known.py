"""An import learns which of its items are here from the graph's tables (`graph.stored.known`), never by
folding every log: importing a file again adds nothing, also while this machine's derived tables are not
built (deleted, built part-way, another process building them, more left than a call reads), and a node
deleted here after its import is not brought back."""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from contextflow import ondisk
from contextflow.app import App
from contextflow.core import rest
from contextflow.core.ids import derived_id
from contextflow.core.store import Store
from contextflow.graph import stored, transfer, writes
from contextflow.graph.projection import PROJECTION
from contextflow.graph.view import Node
from contextflow.imports.run import run_import
from tests.conftest import open_app
from tests.test_graph_transfer import import_graph
from tests.test_imports import BEADS, CLAUDE_MEM, MEMORY, NOTES, nodes_by
from tests.test_own_writes_while_building import building_elsewhere


@pytest.fixture(autouse=True)
def no_fold(monkeypatch: pytest.MonkeyPatch) -> None:
    """An import never reads every log to learn which events are here (the store keeps no `known` for it)."""

    def refused(self: Store) -> None:
        raise AssertionError("an import read every log to learn which events are here")

    assert not hasattr(Store, "known")
    monkeypatch.setattr(Store, "refresh", refused)


def lines_in(app: App) -> int:
    """The lines of every log (read here: the store may not read them all in these tests)."""
    return sum(len(path.read_bytes().splitlines()) for path in app.store.folder.glob("*.jsonl"))


@pytest.fixture
def opened() -> Iterator[list[App]]:
    apps: list[App] = []
    yield apps
    for app in apps:
        app.close()


def unbuilt(app: App, opened: list[App], monkeypatch: pytest.MonkeyPatch, **env: str) -> App:
    """This machine's derived tables deleted, and another process building them (it never gets far here):
    the next process (`env`: its store's) reads the logs' rows beside the empty tables."""
    path = app.tables().path
    app.close()
    path.unlink()
    building_elsewhere(monkeypatch)
    opened.append(open_app(app.store.writer, **env))
    return opened[-1]


def building_from(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    """The derived tables hold the logs as they are now; from here on another process builds them (it never
    gets far here): what is written next is in the logs' rest only, the tables built part-way."""
    app.tables().update()
    building_elsewhere(monkeypatch)


def part_way(app: App) -> bool:
    built, total = app.tables().built()
    return 0 < built < total and not app.tables().serves(("graph-state",))


def test_an_import_asks_the_graphs_tables_not_the_stores_fold(app: App, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    shutil.copytree(NOTES, notes)
    for path in (MEMORY, BEADS, notes, CLAUDE_MEM):
        assert run_import(app, str(path)).stored
        assert not run_import(app, str(path)).stored
    doc = transfer.export_graph(app)
    assert import_graph(app, doc).nodes_added == 0


def test_the_same_file_imported_again_adds_nothing_though_the_tables_were_deleted(
    app: App, opened: list[App], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run_import(app, str(MEMORY)).stored == {"node": 5, "edge": 5}
    again = unbuilt(app, opened, monkeypatch)
    assert not again.tables().serves(("graph-state",))
    report = run_import(again, str(MEMORY))
    assert report.stored == {} and report.present == {"node": 5, "edge": 5}
    zoe = derived_id("server-memory", "node", "Zoë")  # (a node's id: its event's)
    assert writes.graph(again).nodes[zoe].content.startswith("Zoë")
    assert stored.known(again, ["no-such-event", zoe]) == {zoe}


def first_lines(tmp_path: Path, source: Path, count: int) -> Path:
    part = tmp_path / source.name
    part.write_bytes(b"".join(source.read_bytes().splitlines(keepends=True)[:count]))
    return part


def test_the_same_file_imported_again_adds_nothing_while_the_tables_are_built_part_way(
    app: App, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    issues = BEADS / ".beads" / "issues.jsonl"
    assert run_import(app, str(first_lines(tmp_path, issues, 2))).stored == {"node": 2, "edge": 1}
    building_from(app, monkeypatch)
    assert run_import(app, str(BEADS)).stored == {"node": 2, "edge": 3}
    assert part_way(app)  # the tables hold the first import, the logs' rest the second
    report = run_import(app, str(BEADS))
    assert report.stored == {} and report.present == {"node": 4, "edge": 4}
    assert part_way(app)  # read beside the tables as built, not by building them


def test_more_left_to_read_than_a_call_reads_has_the_import_build_the_tables_first(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    writes.add_node(app, type="fact", content="written before the import")
    building_from(app, monkeypatch)
    assert run_import(app, str(MEMORY)).stored == {"node": 5, "edge": 5}
    assert part_way(app)  # the tables hold the node, not the import
    monkeypatch.setattr(rest, "REST_BYTES", 0)  # past it, a call reads only the logs' newest bytes: partial
    monkeypatch.setattr(rest, "TAIL_BYTES", 200)  # (too few to hold the import)
    monkeypatch.setattr(rest, "TAIL_BUDGET", 200)
    writes.graph(app)
    assert ondisk.partial(app, PROJECTION) is not None
    report = run_import(app, str(MEMORY))
    assert report.stored == {} and report.present == {"node": 5, "edge": 5}
    assert app.tables().serves(("graph-state",))


def test_a_node_deleted_here_is_not_brought_back_by_importing_its_file_again(
    app: App, opened: list[App], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_import(app, str(MEMORY))
    writes.delete_node(app, derived_id("server-memory", "node", "Zoë"))
    again = unbuilt(app, opened, monkeypatch)
    report = run_import(again, str(MEMORY))
    assert report.stored == {} and report.skipped["deleted here"] == 1
    assert "Zoë" not in nodes_by(again, "name")


def test_an_export_imported_again_brings_back_no_edge_or_view_deleted_here(
    app: App, opened: list[App], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    a = writes.add_node(app, type="fact", content="a fact")
    b = writes.add_node(app, type="decision", content="a decision", links=[writes.Link(a.id, "DEPENDS_ON")])
    writes.create_view(app, "facts", "type:fact", 1000)
    doc = transfer.export_graph(app)
    env = {"CONTEXTFLOW_STORE": str(tmp_path / "other"), "CONTEXTFLOW_STATE": str(tmp_path / "state")}
    other = open_app("writer-b", **env)  # another store: the export is imported there
    first = import_graph(other, doc)
    assert (first.nodes_added, first.edges_added, first.views_added) == (2, 1, 1)
    new_a, new_b = first.id_map[a.id], first.id_map[b.id]
    writes.unlink(other, new_b, new_a, "DEPENDS_ON")
    writes.delete_view(other, "facts")
    again = unbuilt(other, opened, monkeypatch, **env)
    result = import_graph(again, doc)
    assert (result.nodes_added, result.edges_added, result.views_added) == (0, 0, 0)
    assert (result.nodes_present, result.edges_present, result.views_present) == (2, 1, 1)
    state = writes.graph(again)
    assert not state.edge_live(new_b, new_a, "DEPENDS_ON") and state.saved_view("facts") is None


def test_an_import_that_cannot_read_the_tables_whole_stores_nothing_and_says_why(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextflow.core import catchup
    from contextflow.core.errors import StoreError
    from contextflow.core.lock import WriterLock

    writes.add_node(app, type="fact", content="written before the import")
    building_from(app, monkeypatch)
    run_import(app, str(MEMORY))
    monkeypatch.setattr(rest, "REST_BYTES", 0)
    monkeypatch.setattr(catchup, "BUILD_WAIT_S", 0.1)
    lines = lines_in(app)
    with WriterLock(app.tables().path.with_name(catchup.BUILD_LOCK), 0), pytest.raises(StoreError) as raised:
        run_import(app, str(MEMORY))  # another process builds the tables and holds on
    said = str(raised.value)
    assert "still building its derived tables" in said and "indexed" in said and "Ask again shortly" in said
    assert lines_in(app) == lines and part_way(app)


def test_the_ids_kept_are_those_of_the_kinds_an_import_writes() -> None:
    from contextflow.graph import model
    from contextflow.graph.projection import KNOWN_KINDS

    assert {model.NODE, model.NODE_UPDATE, model.NODE_DELETE, model.EDGE, model.VIEW} == KNOWN_KINDS


def test_an_import_holds_the_nodes_of_one_chunk_at_a_time(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    from contextflow.graph.stored import StoredGraph
    from contextflow.imports import graphplan

    run_import(app, str(MEMORY))
    held: list[int] = []
    load = StoredGraph.load

    def counted(self: StoredGraph, ids: Iterable[str]) -> dict[str, Node]:
        found = load(self, ids)
        held.append(len(self._loaded))
        return found

    monkeypatch.setattr(StoredGraph, "load", counted)
    monkeypatch.setattr(graphplan, "CHUNK", 1)  # an item a chunk: its node, or an edge's two ends
    assert run_import(app, str(MEMORY)).present == {"node": 5, "edge": 5}
    assert held and max(held) <= 2


def test_the_graph_keeps_the_ids_of_its_node_update_delete_edge_and_view_events_and_no_others(
    app: App, opened: list[App], monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextflow.core.events import decode
    from contextflow.core.log import read_new
    from contextflow.graph.projection import KNOWN_KINDS

    a = writes.add_node(app, type="fact", content="a fact")
    b = writes.add_node(app, type="fact", content="another fact", links=[writes.Link(a.id, "RELATES_TO")])
    writes.update_node(app, a.id, content="a fact, changed")
    writes.tag(app, a.id, ["project:x"])
    writes.link(app, a.id, b.id, "DEPENDS_ON")
    writes.unlink(app, a.id, b.id, "DEPENDS_ON")
    writes.create_view(app, "facts", "type:fact", 1000)
    writes.delete_view(app, "facts")
    writes.delete_node(app, b.id)
    events = [decode(raw, n) for log in app.store.folder.glob("events.*.jsonl") for n, raw in read_new(log, None).lines]
    kinds = {event.kind for event in events}
    assert kinds > KNOWN_KINDS  # (tags, unlinks and view deletions too: not kept)
    ids = [event.id for event in events]
    kept = {event.id for event in events if event.kind in KNOWN_KINDS}
    assert stored.known(app, ids) == kept
    again = unbuilt(app, opened, monkeypatch)  # the same, read beside tables that hold none of them
    assert stored.known(again, ids) == kept
