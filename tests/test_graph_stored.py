"""The graph's tables on disk (graph/projection.py, graph/stored.py) answer every read as the whole fold does:
random graphs from two writers, read in batches of any size, updates before creations, deletes, tags,
edges, views, imports' origins, a clock bound; and only the rows a call touches are read."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from contextflow.app import App
from contextflow.core import catchup, rest
from contextflow.core.clock import stamp_from_ms
from contextflow.core.events import Event
from contextflow.core.rest import Reading
from contextflow.core.tables import Tables
from contextflow.graph import explore, model, writes
from contextflow.graph.compose import Composed, compose
from contextflow.graph.projection import PROJECTION
from contextflow.graph.query import parse
from contextflow.graph.stored import StoredGraph
from tests.graph_fold import FoldedGraph, fold, read_rows, scratch
from tests.raw import write_events

TYPES = ["fact", "decision", "observation"]
TAGS = [
    "tier:pinned",
    "tier:working",
    "tier:reference",
    "tier:off-context",
    "project:web",
    "status:archived",
    "archived",
]
EDGES = ["DEPENDS_ON", "SUPERSEDES", "DERIVED_FROM", "RELATES_TO"]
WORDS = ["lexer", "Parser", "cache", "TOKEN", "Straße", "graph", "sqlite"]
QUERIES = [
    "",
    "type:fact",
    "tag:tier:pinned",
    "tag:archived",
    "tag:project:*",
    "tag:tier:* AND NOT type:observation",
    "lexer",
    '"parser cache"',
    "straße OR token",
    "has:summary",
    "has:edges",
    "NOT has:edges OR type:decision",
    "tokens:>3",
    "created:>2020-01-01",
    "updated:<1h",
    "created:2026-01-02",
]


def _events(seed: int, count: int) -> list[Event]:
    rng = random.Random(seed)
    made: list[Event] = []
    ids: list[str] = []
    base = stamp_from_ms(1_767_225_600_000)  # 2026-01-01
    seqs = {"wx": 0, "wy": 0}
    for n in range(count):
        writer = rng.choice(["wx", "wy"])
        seqs[writer] += 1
        stamp = base + (rng.randrange(50_000) << 16) + n  # writers' clocks interleave, never equal
        pick = rng.random()
        node = rng.choice(ids) if ids else "nosuchnode000000"
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 5)))
        if pick < 0.3 or not ids:
            kind, data = "graph.node", {"type": rng.choice(TYPES), "content": text, "agent": "a"}
            if rng.random() < 0.3:
                data["tags"] = rng.sample(TAGS, 2)
            if rng.random() < 0.2:
                data["origin"] = f"memory:{rng.randrange(5)}"
            if rng.random() < 0.2 and ids:
                data["links"] = [{"to": rng.choice(ids), "type": rng.choice(EDGES)}]
            if rng.random() < 0.2:
                data["metadata"] = {"k": rng.randrange(3), "path": text}
        elif pick < 0.45:
            kind, data = "graph.node_update", {"node": node, rng.choice(["content", "summary", "type"]): text}
            if rng.random() < 0.3:
                data["metadata"] = {"k": None if rng.random() < 0.5 else text}
        elif pick < 0.5:
            kind, data = "graph.node_delete", {"node": node}
        elif pick < 0.65:
            kind, data = rng.choice(["graph.tag", "graph.untag"]), {"node": node, "tags": rng.sample(TAGS, 2)}
        elif pick < 0.85:
            edge = {"from": node, "to": rng.choice(ids), "type": rng.choice(EDGES)}
            kind, data = rng.choice(["graph.edge", "graph.edge", "graph.edge_delete"]), edge
        else:
            name = rng.choice(["default", "focus"])
            kind = rng.choice(["graph.view", "graph.view_delete"])
            data = {"name": name, "query": text, "budget": rng.randrange(500, 3000)}
        event = Event(f"{n:04d}{rng.getrandbits(40):012x}"[:16], writer, seqs[writer], stamp, kind, data)
        if kind == "graph.node":
            ids.append(event.id)
        made.append(event)
    return made


def _folded(app: App) -> FoldedGraph:
    return fold(app)


def _same(app: App, at_ms: int) -> None:
    folded = _folded(app)
    assert app.tables().serves((PROJECTION.name,))
    stored = StoredGraph(app.tables())
    assert set(stored.live) == folded.live
    assert set(stored.nodes) == set(folded.nodes)
    for node_id in folded.nodes:
        assert stored.nodes[node_id] == folded.nodes[node_id]
        assert stored.node(node_id) == folded.node(node_id)
        assert stored.tags_of(node_id) == folded.tags_of(node_id)
        assert stored.edges_out(node_id) == folded.edges_out(node_id)
        assert stored.edges_in(node_id) == folded.edges_in(node_id)
        assert stored.superseded_by(node_id) == folded.superseded_by(node_id)
        assert stored.walk(node_id, 3, forward=True, backward=True) == folded.walk(
            node_id, 3, forward=True, backward=True
        )
    assert stored.all_edges() == folded.all_edges()
    assert stored.saved_views() == folded.saved_views()
    for origin, first in folded.origins.items():
        assert stored.origin(origin) == first
    assert stored.origin("memory:none") is None
    for name in TYPES:
        assert stored.of_type(name) == folded.by_type.get(name, set()) & folded.live
    for name in TAGS:
        assert stored.tagged(name) == folded.by_tag.get(name, set())
    for query in QUERIES:
        expected = folded.matching(parse(query), at_ms)
        assert stored.matching(parse(query), at_ms) == expected, query
        assert stored.newest(expected, 5) == folded.newest(expected, 5)
    for prefix in {i[:1] for i in folded.live} | {"", "zz"}:
        assert stored.prefixed(prefix, 20) == folded.prefixed(prefix, 20)


def _whole_graph_reads(app: App) -> list[object]:
    """status, tag counts, queries' newest, and compose at several budgets (text, what fit and what did not)."""
    found: list[object] = [explore.status(app), explore.tag_counts(app), explore.tag_counts(app, "tier:")]
    for query in QUERIES[:8]:
        found.append(explore.run_query(app, query, 7, at_ms=0))
        for budget in (120, 400, 3000):
            found.append(compose(app, query, budget, at_ms=1_767_225_600_000, include_superseded=budget == 400))
    return found


@pytest.mark.parametrize("seed", range(6))
def test_the_tables_answer_every_read_as_the_fold_does(app: App, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catchup, "READ_BYTES", 300 + seed * 700)  # chunks of one to a few dozen events
    events = _events(seed, 400)
    rng = random.Random(seed)
    half = rng.randrange(len(events))
    write_events(app.store.folder, events[:half])
    at_ms = 1_767_225_600_000 + 3_600_000
    _same(app, at_ms)  # folded part way: the rest lands on top of it
    write_events(app.store.folder, events[half:])
    _same(app, at_ms)
    stored = _whole_graph_reads(app)
    monkeypatch.setattr(Tables, "serves", lambda *_a, **_k: False)  # the same calls over the tables and their rest
    assert _whole_graph_reads(app) == stored
    monkeypatch.setattr(rest, "_attach", lambda *_: ({}, set()))  # and over the logs' rows alone (nothing built)
    assert _whole_graph_reads(app) == stored


def test_a_clock_bound_rebuilds_the_graphs_tables(app: App) -> None:
    node = writes.add_node(app, type="fact", content="first")
    future = Event(
        "F" * 16,
        "writer-z",
        1,
        stamp_from_ms(253_000_000_000_000),
        "graph.node_update",
        {"node": node.id, "content": "from the future"},
    )
    write_events(app.store.folder, [future])
    assert writes.graph(app).nodes[node.id].content == "from the future"
    writes.update_node(app, node.id, content="fixed")  # the write bounds the future stamp first
    assert app.tables().peek("SELECT id FROM bounds") == [(future.id,)]
    _same(app, 0)
    assert writes.graph(app).nodes[node.id].content == "fixed"


def test_a_call_reads_only_the_rows_it_touches(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    nodes = [writes.add_node(app, type="fact", content=f"fact n{n}x") for n in range(300)]
    writes.link(app, nodes[0].id, nodes[1].id, "DEPENDS_ON")
    writes.graph(app)  # the stage is current
    read: list[str] = []
    original = StoredGraph.load

    def counting(self: StoredGraph, ids: object) -> dict[str, model.Node]:
        found = original(self, ids)  # type: ignore[arg-type]
        read.extend(found)
        return found

    monkeypatch.setattr(StoredGraph, "load", counting)
    shown, _, _ = explore.edges_of(app, nodes[0].id)
    assert shown.id == nodes[0].id
    assert len(set(read)) <= 2
    read.clear()
    found, total = explore.run_query(app, "n17x", 5)
    assert [n.content for n in found] == ["fact n17x"] and total == 1
    assert len(set(read)) == 1
    read.clear()
    assert explore.status(app)["nodes"] == 300
    assert not read  # counted by queries


def test_while_the_tables_are_not_current_a_call_reads_them_and_the_logs_rest(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = writes.add_node(app, type="fact", content="in the tables")
    writes.graph(app)
    tables = app.tables()
    monkeypatch.setattr(tables, "update", lambda *_args, **_kw: -1)  # another process holds the lock
    later = writes.add_node(app, type="fact", content="past the positions")
    assert tables.peek("SELECT count(*) FROM graph_nodes") == [(1,)]
    state = writes.graph(app)
    assert isinstance(state.read, Reading) and state.read.rest is not None
    assert state.nodes[kept.id].content == "in the tables"
    assert state.nodes[later.id].content == "past the positions"
    assert read_rows(app) == scratch(app).rows()  # the rows built plus the rest: every event's


def test_a_version_change_rebuilds_the_graphs_tables(app: App) -> None:
    node = writes.add_node(app, type="fact", content="kept")
    writes.graph(app)
    newer = PROJECTION._replace(format=PROJECTION.format._replace(version=PROJECTION.format.version + 1))
    app.tables().sets[newer.name] = newer
    assert app.tables().serves((newer.name,))
    assert StoredGraph(app.tables()).nodes[node.id].content == "kept"
    assert app.tables().peek("SELECT version FROM formats WHERE name = 'graph-state'") == [(newer.format.version,)]


def test_a_damaged_stage_row_is_found_by_doctor_and_rebuilt(app: App) -> None:
    node = writes.add_node(app, type="fact", content="true content")
    writes.graph(app)
    app.tables()._connect().execute("UPDATE graph_node_text SET lower = 'forged' WHERE id = ?", (node.id,))
    assert app.tables().differing() == ["graph_node_text"]
    assert writes.graph(app).nodes[node.id].lower == "true content\n"


def test_a_session_start_looks_at_the_first_ranked_candidates_only(app: App) -> None:
    """`compose(first=)` ranks in one query and reads only the first candidates: the same nodes as composing
    them all when the budget fills among them, and the same whole result when they are all."""
    write_events(app.store.folder, _events(11, 400))
    at = 1_767_225_600_000
    for query in ["", "type:fact OR tag:tier:*", "NOT has:edges"]:
        whole = compose(app, query, 400, at_ms=at)
        assert compose(app, query, 400, at_ms=at, first=10_000) == whole
        first = compose(app, query, 400, at_ms=at, first=40)
        assert first.included == whole.included and first.text.split("\n", 1)[1] == whole.text.split("\n", 1)[1]
        assert _matched(first) == _matched(whole)  # (copies past the first count as not fitting)


def _matched(composed: Composed) -> int:
    return len(composed.included) + composed.as_dict()["dropped_count"] + sum(composed.excluded.values())


def test_an_import_leaves_the_graphs_tables_current(app: App, tmp_path: Path) -> None:
    from contextflow.adapters.cli import main

    memory = tmp_path / "memory.json"
    lines = [
        f'{{"type": "entity", "name": "e{n}", "entityType": "service", "observations": ["o{n}"]}}' for n in range(30)
    ]
    memory.write_text("\n".join([*lines, '{"type": "relation", "from": "e1", "to": "e2", "relationType": "calls"}']))
    writes.graph(app)  # the tables made, holding nothing
    assert main(["import", str(memory)]) == 0  # (as a person runs it)
    assert app.tables().current()  # (checks, never updates)
    db = app.tables()._connect()
    assert db.execute("SELECT count(*) FROM graph_nodes").fetchone()[0] == 30
    assert explore.status(app)["nodes"] == 30
