"""Graph imports stream: a file is read an item at a time into a stage on disk, planned from it into a
staged batch, and written as one framed batch. What an import stores is what it stored when it read
whole files (a key given twice, links to items defined later, merged relation names, a second import);
nothing readable of the source lands in the state folder; a large JSON document is read in pieces.
Memory figures are printed by `scripts/bench_import.py --memory`, not asserted here."""

from __future__ import annotations

import io
import json
import subprocess
from array import array
from pathlib import Path

import orjson
import pytest

from contextflow.app import App
from contextflow.core import batches
from contextflow.core.batches import Stated
from contextflow.core.errors import StoreError
from contextflow.core.events import Event, encode
from contextflow.core.ids import derived_id
from contextflow.core.log import read_whole
from contextflow.core.staged import StagedBatch
from contextflow.graph import writes
from contextflow.imports import detect, jsondoc, stage
from contextflow.imports.model import EdgeRecord, GroupEdge, Member, SourceError
from contextflow.imports.run import run_import

FIXTURES = Path(__file__).parent / "fixtures" / "imports"
CLAUDE_MEM = FIXTURES / "claude-mem" / "export.json"
TOKEN = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"


def entity(name: str, *observations: str, kind: str = "person") -> str:
    return json.dumps({"type": "entity", "name": name, "entityType": kind, "observations": list(observations)})


def relation(source: str, target: str, name: str) -> str:
    return json.dumps({"type": "relation", "from": source, "to": target, "relationType": name})


def memory_file(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "memory.json"
    path.write_text("\n".join(lines))
    return path


def nodes(app: App) -> dict[str, object]:
    state = writes.graph(app)
    return {str(state.nodes[i].metadata.get("name")): state.nodes[i] for i in state.live}


def test_a_key_given_twice_keeps_the_last_record_and_a_link_may_come_before_its_ends(app, tmp_path):
    source = memory_file(
        tmp_path,
        relation("Alice", "Bob", "knows"),  # both ends are defined later in the file
        entity("Alice", "first"),
        entity("Bob", "builder"),
        entity("Alice", "second"),
        relation("Alice", "Nobody", "knows"),
    )
    report = run_import(app, str(source))
    assert dict(report.stored) == {"node": 2, "edge": 1}
    assert report.skipped == {"repeated item": 1, "link to an item not imported": 1}
    found = nodes(app)
    assert found["Alice"].content == "Alice (person)\n- second"
    state = writes.graph(app)
    assert state.edge_live(found["Alice"].id, found["Bob"].id, "RELATES_TO")
    again = run_import(App.open(), str(source))
    assert not again.stored and again.present == {"node": 2, "edge": 1}


def test_relation_names_between_the_same_ends_merge_into_one_edge(app, tmp_path):
    source = memory_file(
        tmp_path,
        entity("Alice"),
        entity("Bob"),
        relation("Alice", "Bob", "requires"),
        relation("Alice", "Bob", "depends_on"),
        relation("Alice", "Bob", "requires"),
    )
    report = run_import(app, str(source), dry_run=True)
    edges = [event for event in report.planned if event.what == "edge"]
    assert len(edges) == 1
    assert edges[0].data["metadata"] == {"relations": ["depends_on", "requires"]}
    fmt = "server-memory"
    assert edges[0].id == derived_id(fmt, "edge", "Alice", "Bob", "DEPENDS_ON", "depends_on", "requires")


def test_an_edge_comes_back_from_the_stage_with_its_keys_and_names_as_read(tmp_path):
    """An edge's keys and relation names are sealed together: keys holding colons, digits and odd letters
    come back exactly, and a claude-mem group's edges too."""
    keys = ["12:3:x", ":", "Zoë:東京\u2028", "a" * 300, "0"]
    with stage.Stage(tmp_path, "server-memory") as staged:
        at = staged.file("memory.json")
        for source, target in zip(keys, keys[1:] + keys[:1], strict=True):
            staged.add(at, EdgeRecord(source, target, "RELATES_TO", ("calls:1", "uses")))
        staged.add(at, GroupEdge("s:1", "g", "DERIVED_FROM"))
        staged.add(at, Member("g", "o:1"))
        staged.add(at, Member("g", "o:2"))
        staged.finish()
        read = [(row.record.source, row.record.target, row.record.relations) for row in staged.edges()]
    expected = [(s, t, ("calls:1", "uses")) for s, t in zip(keys, keys[1:] + keys[:1], strict=True)]
    assert read == [*expected, ("s:1", "o:1", ()), ("s:1", "o:2", ())]


def test_a_changed_item_gets_update_and_tag_ids_derived_from_its_key_and_new_version(app, tmp_path):
    """Whether its key is read back from its origin or was redacted there (derived as it was staged)."""
    secret = "Deploy " + TOKEN
    run_import(app, str(memory_file(tmp_path, entity("Alice", "Leads"), entity(secret, "Runs"))))
    changed = memory_file(tmp_path, entity("Alice", "Leads payments", kind="team"), entity(secret, "Ran", kind="job"))
    planned = run_import(app, str(changed), dry_run=True).planned
    assert [event.what for event in planned] == ["update", "tag", "update", "tag"]
    for (update, tag), key in zip([planned[:2], planned[2:]], ["Alice", secret], strict=True):
        version = update.data["metadata"]["source_version"]
        assert update.id == derived_id("server-memory", "update", key, version)
        assert tag.id == derived_id("server-memory", "tag", key, version)
    assert TOKEN not in json.dumps([event.data for event in planned])


def test_an_import_is_one_framed_batch_in_the_log(app, tmp_path, store_dir):
    source = memory_file(tmp_path, *(entity(f"e{n}", f"fact {n}") for n in range(300)))
    run_import(app, str(source))
    data, lines, rest = read_whole(next(store_dir.glob("events.*.jsonl")))
    markers = [batches.parse(raw) for raw in data.splitlines() if raw.startswith(batches.PREFIX)]
    assert [(m.kind, m.events) for m in markers if m] == [("begin", 300), ("commit", 300)]
    assert len(lines) == 300 and rest == b""


def test_nothing_readable_of_the_source_lands_in_the_state_folder(app, tmp_path, monkeypatch):
    name = f"Deploy key {TOKEN}"
    source = memory_file(tmp_path, entity(name, f"the token is {TOKEN}"), relation(name, name, f"uses {TOKEN}"))
    seen: list[bytes] = []

    def everything_in_state() -> bytes:
        return b"".join(p.read_bytes() for p in (tmp_path / "state").rglob("*") if p.is_file())

    finish, append = stage.Stage.finish, type(app.store).append_staged

    def finish_and_look(self: stage.Stage) -> None:
        finish(self)
        seen.append(everything_in_state())

    def append_and_look(self: object, staged: StagedBatch) -> int:
        staged.lines(1, array("Q", [1] * len(staged)))  # all flushed to its file
        seen.append(staged.path.read_bytes())
        return append(self, staged)  # type: ignore[arg-type]

    monkeypatch.setattr(stage.Stage, "finish", finish_and_look)
    monkeypatch.setattr(type(app.store), "append_staged", append_and_look)
    report = run_import(app, str(source))
    assert report.stored["node"] == 1
    assert len(seen) == 2 and all(seen)
    assert not any(TOKEN.encode() in found for found in seen)
    assert b"the token is" in seen[-1]  # the staged batch holds the (redacted) events
    assert not list((app.store.state_dir / stage.FOLDER).iterdir())  # both removed at the end
    assert not list((app.store.state_dir / "staged").iterdir())


def test_a_staged_batch_writes_the_lines_encode_writes(tmp_path):
    events = [
        ("a" * 16, "graph.node", {"type": "fact", "content": "x é ✓", "tags": []}),
        ("b" * 16, "graph.edge", {"from": "a" * 16, "to": "c" * 16, "type": "RELATES_TO"}),
    ]
    with StagedBatch(tmp_path, "writer-1") as staged:
        staged.add_many(events)
        stamps = array("Q", [10**18, 10**18 + 7])
        size, pieces = staged.lines(41, stamps)
        written = b"".join(pieces)
    expected = b"".join(
        encode(Event(event_id, "writer-1", 41 + n, stamps[n], kind, data))
        for n, (event_id, kind, data) in enumerate(events)
    )
    assert written == expected and size == len(expected)
    assert not staged.path.exists()


def test_a_staged_batch_that_does_not_add_up_leaves_the_log_as_it_was(app, store_dir):
    app.store.append("graph.node", writes.node_item(type="fact", content="kept")[1])
    log = next(store_dir.glob("events.*.jsonl"))
    before = log.read_bytes()
    writer = app.store.log_writer
    with writer.locked(), pytest.raises(StoreError, match="Nothing already stored was changed"):
        end = writer.end()
        writer.append_framed(2, 999, iter([b'{"a":1}\n', b'{"b":2}\n']), end, Stated(end.seq + 2, end.newest))
    assert log.read_bytes() == before


def test_files_a_killed_import_left_are_removed_by_the_next(app, tmp_path):
    dead = _dead_pid()
    left = [app.store.state_dir / stage.FOLDER / f"{dead}.x.sqlite", app.store.state_dir / "staged" / f"{dead}.x.lines"]
    for path in left:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"left behind")
    run_import(app, str(memory_file(tmp_path, entity("Alice"))))
    assert not any(path.exists() for path in left)


def _dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


# -- a large JSON document, read in pieces ------------------------------------------------------


def test_a_document_read_in_small_pieces_gives_what_a_whole_read_gives(monkeypatch):
    doc = {
        "exportedAt": "2026-01-01",
        "n": 12345678901234567890,
        "observations": [{"t": "é✓ " * 5, "x": [1.5, -2e10, None, True]}, 7, "s", [], {}],
        "empty": [],
        "nested": {"a": [1, {"b": 2}]},
        "last": 3.25,
    }
    raw = json.dumps(doc, ensure_ascii=False).encode()
    monkeypatch.setattr(jsondoc, "READ_BYTES", 3)  # numbers and characters cut between reads
    found: dict[str, object] = {}
    for event, key, value in jsondoc.members(io.BytesIO(raw), "doc.json"):
        if event == "value":
            found[key] = value
        elif event == "array":
            found[key] = []
        else:
            found[key].append(value)  # type: ignore[union-attr]
    assert found == json.loads(raw)


@pytest.mark.parametrize(
    ("raw", "line", "problem"),
    [
        (b'{"observations": [1,\n2,\n}', 3, "not valid JSON"),
        (b'{"a": 1\n"b": 2}', 2, "expected ',' or '}'"),
        (b'{"a": [1, 2]} extra', 1, "more after the document's end"),
        (b'[{"a": 1}]', None, "expected a JSON object"),
        (b"   ", None, "empty"),
    ],
)
def test_a_document_that_is_not_an_object_of_json_says_where(raw, line, problem):
    with pytest.raises(SourceError, match=problem) as caught:
        list(jsondoc.members(io.BytesIO(raw), "doc.json"))
    assert caught.value.line == line


def test_a_claude_mem_export_on_one_long_line_is_told_and_imported_in_pieces(app, tmp_path, monkeypatch):
    expected = run_import(App.open(), str(CLAUDE_MEM), dry_run=True)
    one_line = tmp_path / "export.json"
    one_line.write_bytes(orjson.dumps(orjson.loads(CLAUDE_MEM.read_bytes())))
    monkeypatch.setattr(detect, "MAX_SOURCE_LINE", 64)  # its one line is then too long to be a JSON Lines line
    monkeypatch.setattr(jsondoc, "READ_BYTES", 50)
    assert detect.detect_file(one_line) == "claude-mem"
    report = run_import(app, str(one_line))
    assert report.stored == expected.stored and report.skipped == expected.skipped
    assert report.stored["edge"] > 0


def test_claude_mem_summaries_before_their_observations_still_derive_from_them(app, tmp_path):
    doc = orjson.loads(CLAUDE_MEM.read_bytes())
    reordered = {"summaries": doc["summaries"], **{k: v for k, v in doc.items() if k != "summaries"}}
    path = tmp_path / "export.json"
    path.write_bytes(orjson.dumps(reordered))
    expected = run_import(App.open(), str(CLAUDE_MEM), dry_run=True)
    found = run_import(app, str(path), dry_run=True)
    assert sorted((p.id, p.kind) for p in found.planned) == sorted((p.id, p.kind) for p in expected.planned)


def test_an_item_the_store_refuses_leaves_out_its_note_and_the_rest_is_planned_again(app, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("---\ntitle: A\n---\n# A\n\n- relates_to [[B]]\n")
    (folder / "b.md").write_text("---\ntitle: B\n---\n# B\n\n" + "x" * 500_001 + "\n")
    (folder / "c.md").write_text("---\ntitle: C\n---\n# C\n\n- relates_to [[A]]\n")
    report = run_import(app, str(folder))
    assert dict(report.stored) == {"node": 2, "edge": 1}  # A -> B is left out with B
    assert len(report.errors) == 1 and "b.md" in report.errors[0] and "500000" in report.errors[0]
    assert report.skipped == {"link to an item not imported": 1}


class _NeverWhole(io.BytesIO):
    """Standard input that fails the test when read whole."""

    def read(self, size: int | None = -1) -> bytes:
        assert size is not None and size >= 0, "standard input was read whole"
        return super().read(size)


def test_json_lines_on_standard_input_are_read_a_line_at_a_time(app, tmp_path, monkeypatch):
    raw = "\n".join([entity("Alice", "a"), entity("Bob", "b"), relation("Alice", "Bob", "knows")]).encode()
    stdin = io.TextIOWrapper(_NeverWhole(raw))
    monkeypatch.setattr("sys.stdin", stdin)
    assert run_import(app, "-").stored == {"node": 2, "edge": 1}
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(CLAUDE_MEM.read_bytes())))  # a document: whole
    assert run_import(app, "-").stored["node"] > 0


def test_the_progress_moves_while_one_large_file_is_read_and_planned(
    app: App, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One file is one step of the reading bar: its items are counted as they are read, and each step that
    moves no count (indexing the stage, reading the store's graph) says what it is doing."""
    from contextflow.imports import progress as bars
    from contextflow.imports.run import run_import

    monkeypatch.setattr(bars, "EVERY", 0.0)  # draw every change, not ten a second
    memory = tmp_path / "memory.json"
    lines = [{"type": "entity", "name": f"e{n}", "entityType": "thing", "observations": ["o"]} for n in range(2_500)]
    memory.write_text("".join(json.dumps(line) + "\n" for line in lines))
    screen = io.StringIO()
    run_import(app, str(memory), progress=bars.Progress(screen, enabled=True))
    drawn = screen.getvalue().split("\r")
    assert any("reading memory.json: 2,000 items" in frame and "0%" in frame for frame in drawn)
    assert any("indexing 2,500 staged items" in frame for frame in drawn)
    assert any("reading the store's graph first" in frame for frame in drawn)
    assert any("planning 2,500 items" in frame and " 100%" not in frame and "  0%" not in frame for frame in drawn)
