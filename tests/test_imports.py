"""`contextflow import`: every format from real files (fixtures), idempotence, all or nothing per file,
redaction, detection; `export --to server-memory` and the round trip back.

Fixtures (tests/fixtures/imports/): server-memory/memory.json was written by the real
`@modelcontextprotocol/server-memory` (scripts/make_import_fixtures.py) and basic-memory-real/ by
basic-memory 0.24.1 (`basic-memory tool write-note`, Python 3.13); beads, basic-memory (edge cases:
no front matter, custom fields, a link in a code block) and claude-mem were made by hand from each
project's own format definitions (beads' internal/types, basic-memory's note format reference,
claude-mem's scripts/export-memories.ts and import/bulk.ts).
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import orjson
import pytest

from contextflow.adapters.cli import main
from contextflow.app import App
from contextflow.core.errors import InputError
from contextflow.graph import writes
from contextflow.imports import detect, operations
from contextflow.imports.progress import Progress
from contextflow.imports.run import run_import
from contextflow.imports.servermemory import entity_content, observations_of
from tests.conftest import open_app

FIXTURES = Path(__file__).parent / "fixtures" / "imports"
MEMORY = FIXTURES / "server-memory" / "memory.json"
BEADS = FIXTURES / "beads"
NOTES = FIXTURES / "basic-memory"
CLAUDE_MEM = FIXTURES / "claude-mem" / "export.json"


def nodes_by(app: App, field: str) -> dict[str, object]:
    state = writes.graph(app)
    return {state.nodes[i].metadata.get(field): state.nodes[i] for i in state.live}


def graph_lines(raw: bytes) -> tuple[list[dict[str, object]], set[tuple[str, str, str]]]:
    items = [orjson.loads(line) for line in raw.splitlines() if line.strip()]
    entities = sorted((i for i in items if i["type"] == "entity"), key=lambda e: str(e["name"]))
    relations = {(str(r["from"]), str(r["to"]), str(r["relationType"])) for r in items if r["type"] == "relation"}
    return entities, relations


# -- server-memory -------------------------------------------------------------------------------


def test_server_memory_entities_become_nodes_and_relations_edges(app):
    report = run_import(app, str(MEMORY))
    assert report.format == "server-memory" and report.stored == {"node": 5, "edge": 5}
    state = writes.graph(app)
    alice = nodes_by(app, "name")["Alice Moreau"]
    assert alice.type == "fact" and alice.origin == "server-memory:Alice Moreau"
    assert alice.content == "Alice Moreau (person)\n- Leads the payments team\n- Prefers Go\n- On call this week"
    assert state.tags_of(alice.id) == {"imported:server-memory", "kind:person"}
    api, db = nodes_by(app, "name")["Payments API"], nodes_by(app, "name")["Ledger DB"]
    assert state.edge_live(api.id, db.id, "DEPENDS_ON") and state.edge_live(api.id, db.id, "RELATES_TO")
    assert [e.metadata for e in state.edges_out(api.id)] == [
        {"relations": ["depends_on"]},
        {"relations": ["writes to"]},
    ]


def test_importing_the_same_file_again_stores_nothing(app, store_dir):
    run_import(app, str(MEMORY))
    size = sum(p.stat().st_size for p in store_dir.glob("*.jsonl"))
    again = run_import(app, str(MEMORY))
    assert again.stored == {} and again.present == {"node": 5, "edge": 5}
    assert sum(p.stat().st_size for p in store_dir.glob("*.jsonl")) == size


def test_another_machine_importing_the_same_source_writes_the_same_ids(app, tmp_path):
    run_import(app, str(MEMORY))
    elsewhere = tmp_path / "elsewhere" / "memory.json"  # the path is not part of an item's identity
    elsewhere.parent.mkdir()
    shutil.copy(MEMORY, elsewhere)
    other = open_app("writer-b", CONTEXTFLOW_STORE=str(tmp_path / "b"), CONTEXTFLOW_STATE=str(tmp_path / "sb"))
    try:
        run_import(other, str(elsewhere))
        assert writes.graph(other).live == writes.graph(app).live
    finally:
        other.close()


def test_a_changed_item_is_updated_once_and_a_deleted_one_stays_deleted(app, tmp_path):
    run_import(app, str(MEMORY))
    changed = tmp_path / "memory.json"
    changed.write_text(MEMORY.read_text().replace("Prefers Go", "Prefers Rust"))
    report = run_import(app, str(changed))
    assert report.stored == {"update": 1} and report.present == {"node": 4, "edge": 5}
    assert "Prefers Rust" in nodes_by(app, "name")["Alice Moreau"].content
    assert run_import(app, str(changed)).stored == {}
    writes.delete_node(app, nodes_by(app, "name")["Zoë"].id)
    again = run_import(app, str(MEMORY))
    assert "Zoë" not in nodes_by(app, "name") and again.skipped["deleted here"] == 1


def test_a_bad_line_names_the_file_and_line_and_nothing_of_the_file_is_stored(app, tmp_path):
    bad = tmp_path / "memory.json"
    lines = MEMORY.read_text().split("\n")
    lines[2] = '{"type":"entity","name":"Broken"'
    bad.write_text("\n".join(lines))
    before = app.store.event_count
    with pytest.raises(InputError, match=rf"{bad}:3: not valid JSON .*; nothing of this file was stored"):
        run_import(app, str(bad))
    lines[2] = '{"type":"entity","name":""}'
    bad.write_text("\n".join(lines))
    with pytest.raises(InputError, match=rf'{bad}:3: "name" must be a non-empty string'):
        run_import(app, str(bad))
    assert app.store.event_count == before


def test_secrets_in_an_import_are_redacted_as_for_every_write(app, tmp_path):
    token = "ghp_" + "Ab3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3gH5"
    source = tmp_path / "memory.json"
    source.write_text(json.dumps({"type": "entity", "name": "CI", "entityType": "bot", "observations": [token]}))
    run_import(app, str(source))
    content = nodes_by(app, "name")["CI"].content
    assert token not in content and "[REDACTED:GitHub token]" in content
    assert token.encode() not in b"".join(p.read_bytes() for p in app.store.folder.glob("*.jsonl"))


def test_a_dry_run_lists_what_would_be_stored_and_stores_nothing(app, capsys):
    assert main(["import", str(MEMORY), "--dry-run", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["would_store"] == {"node": 5, "edge": 5} and len(report["events"]) == 10
    assert app.store.event_count == 0
    assert main(["import", str(MEMORY), "--dry-run"]) == 0
    assert "Would store 5 nodes, 5 edges" in capsys.readouterr().out


def test_observations_round_trip_through_the_node_content():
    observations = ["plain", "two\nlines", "a\n- dash inside", "  indented"]
    content = entity_content("N", "t", observations)
    assert observations_of(content, "N", "t") == observations
    assert observations_of("edited by hand", "N", "t") == ["edited by hand"]


# -- export --to server-memory --------------------------------------------------------------------


def test_export_to_server_memory_gives_back_the_same_entities_and_relations(app, capsys, tmp_path):
    run_import(app, str(MEMORY))
    out = tmp_path / "out.json"
    assert main(["export", "--to", "server-memory", "-o", str(out)]) == 0
    assert "Exported 5 entities, 5 relations" in capsys.readouterr().out
    assert graph_lines(out.read_bytes()) == graph_lines(MEMORY.read_bytes())
    # and the exported file imports into a fresh store as the same graph
    other = open_app("writer-b", CONTEXTFLOW_STORE=str(tmp_path / "b"), CONTEXTFLOW_STATE=str(tmp_path / "sb"))
    try:
        assert run_import(other, str(out)).stored == {"node": 5, "edge": 5}
        assert writes.graph(other).live == writes.graph(app).live
    finally:
        other.close()


def test_any_node_exports_as_an_entity_named_by_its_id(app, capsys):
    fact = writes.add_node(app, type="fact", content="Prices in cents", tags=["project:shop"], summary="cents")
    decision = writes.add_node(app, type="decision", content="Use Go", links=[writes.Link(fact.id, "DEPENDS_ON")])
    assert main(["export", "--to", "server-memory", "--query", "type:fact OR type:decision"]) == 0
    entities, relations = graph_lines(capsys.readouterr().out.encode())
    assert {
        "name": fact.id,
        "entityType": "fact",
        "observations": ["Prices in cents", "summary: cents", "tags: project:shop"],
        "type": "entity",
    } in entities
    assert relations == {(decision.id, fact.id, "DEPENDS_ON")}


# -- beads ----------------------------------------------------------------------------------------


def test_beads_issues_become_tasks_with_status_priority_and_dependencies(app):
    report = run_import(app, str(BEADS))  # the repository folder: .beads/issues.jsonl is found
    assert report.format == "beads" and report.stored == {"node": 4, "edge": 4}
    assert report.skipped == {"deleted in the source": 1, "link to an item not imported": 1}
    issues = nodes_by(app, "beads_id")
    state = writes.graph(app)
    bug = issues["shop-2"]
    assert bug.type == "task" and bug.summary == "shop-2: Retry failed card charges"
    assert bug.metadata["status"] == "in_progress" and bug.metadata["priority"] == 0
    assert state.tags_of(bug.id) == {
        "imported:beads",
        "kind:bug",
        "status:in_progress",
        "priority:p0",
        "label:payments",
        "label:reliability",
    }
    assert "## Notes" in bug.content and "alice (2025-11-03T12:00:00Z): Use exponential backoff" in bug.content
    assert issues["shop-3"].metadata["priority"] == 0  # bd leaves priority 0 out of the line
    assert state.edge_live(bug.id, issues["shop-1.1"].id, "DEPENDS_ON")  # blocks
    assert state.edge_live(bug.id, issues["shop-1"].id, "CHILD_OF")  # parent-child
    assert state.edge_live(issues["shop-3"].id, bug.id, "DERIVED_FROM")  # discovered-from
    assert "## Design" in issues["shop-1.1"].content and issues["shop-1.1"].metadata["closed_at"]


def test_a_beads_tombstone_deletes_the_node_an_earlier_import_made(app, tmp_path):
    issues = tmp_path / "issues.jsonl"
    lines = (BEADS / ".beads" / "issues.jsonl").read_text().splitlines()
    issues.write_text("\n".join(lines[:4]) + "\n")
    run_import(app, str(issues), fmt="beads")
    gone = json.loads(lines[2]) | {"status": "tombstone", "deleted_at": "2025-12-01T00:00:00Z"}
    issues.write_text("\n".join([*lines[:2], json.dumps(gone), lines[3]]) + "\n")
    assert run_import(app, str(issues)).stored == {"delete": 1}
    assert "shop-2" not in nodes_by(app, "beads_id")
    assert run_import(app, str(issues)).stored == {}


# -- basic-memory ---------------------------------------------------------------------------------


def test_a_basic_memory_folder_becomes_notes_linked_by_their_relations(app):
    report = run_import(app, str(NOTES))
    assert report.format == "basic-memory" and report.files == 4
    assert report.stored == {"node": 4, "edge": 5} and report.skipped == {"link to a note not in the folder": 1}
    notes = nodes_by(app, "title")
    state = writes.graph(app)
    brewing, origins = notes["Coffee Brewing Methods"], notes["Coffee Bean Origins"]
    grinding, inbox = notes["Proper Grinding Technique"], notes["inbox"]
    assert brewing.content.startswith("# Coffee Brewing Methods") and "[method] Pour over" in brewing.content
    assert state.tags_of(brewing.id) == {"imported:basic-memory", "kind:note", "label:coffee", "label:brewing"}
    assert origins.metadata == {
        "title": "Coffee Bean Origins",
        "path": "coffee/coffee-bean-origins",
        "permalink": "coffee-bean-origins",
        "region": "East Africa",
        "rating": 4,
        "source_version": origins.metadata["source_version"],
    }
    assert grinding.type == "decision" and grinding.content.startswith("# Proper Grinding Technique")
    assert state.edge_live(brewing.id, grinding.id, "DEPENDS_ON")  # requires
    assert state.edge_live(grinding.id, brewing.id, "CHILD_OF")  # part_of, by permalink
    assert state.edge_live(origins.id, brewing.id, "RELATES_TO")  # a [[link|alias]] in prose
    assert state.edge_live(inbox.id, origins.id, "RELATES_TO")
    assert "Not A Real Note" in origins.content and not any("Not A Real" in str(e.metadata) for e in state.all_edges())


def test_notes_written_by_basic_memory_itself_import_with_their_relations(app):
    """tests/fixtures/imports/basic-memory-real: written by basic-memory 0.24.1 (`basic-memory tool write-note`)."""
    report = run_import(app, str(FIXTURES / "basic-memory-real"))
    assert report.format == "basic-memory" and report.stored == {"node": 4, "edge": 6}
    assert report.skipped == {"link to a note not in the folder": 1}  # [[Tea Brewing Methods]] was never written
    notes = nodes_by(app, "title")
    state = writes.graph(app)
    brewing, origins = notes["Coffee Brewing Methods"], notes["Coffee Bean Origins"]
    grinding, inbox = notes["Proper Grinding Technique"], notes["Inbox"]
    assert origins.metadata["permalink"] == "main/coffee/coffee-bean-origins" and grinding.type == "decision"
    assert state.tags_of(origins.id) == {"imported:basic-memory", "kind:note", "label:coffee", "label:origins"}
    assert state.edge_live(brewing.id, origins.id, "RELATES_TO") and state.edge_live(
        brewing.id, grinding.id, "DEPENDS_ON"
    )
    assert state.edge_live(origins.id, brewing.id, "CHILD_OF") and state.edge_live(origins.id, brewing.id, "RELATES_TO")
    assert state.edge_live(grinding.id, origins.id, "DEPENDS_ON") and state.edge_live(
        inbox.id, origins.id, "RELATES_TO"
    )


def test_a_note_with_bad_front_matter_is_left_out_and_the_rest_is_stored(app, tmp_path, capsys):
    folder = tmp_path / "notes"
    shutil.copytree(NOTES, folder)
    (folder / "broken.md").write_text("---\ntitle: Broken\nkey: !!python/object:os.system x\n---\nbody\n")
    code = main(["import", str(folder)])
    out, err = capsys.readouterr()
    assert code == 2 and "Stored 4 nodes, 5 edges" in out
    assert f"{folder / 'broken.md'}:3: front matter: unsupported YAML here" in out
    assert "1 file(s) were not imported" in err
    assert "Broken" not in nodes_by(app, "title")


def test_front_matter_is_a_safe_subset_of_yaml():
    from contextflow.imports.frontmatter import FrontMatterError, split

    meta, body, _ = split("---\ntitle: 'It''s'\ntags:\n  - a\n  - b\nn: 3\nflag: true\nnone:\n---\nbody")
    assert meta == {"title": "It's", "tags": ["a", "b"], "n": 3, "flag": True, "none": None} and body == "body"
    for bad, line in (("x: &anchor 1", 2), ("x:\n  nested: map", 3), ("- item", 2), ("x: [a, [b]]", 2)):
        with pytest.raises(FrontMatterError) as caught:
            split(f"---\n{bad}\n---\n")
        assert caught.value.line == line
    with pytest.raises(FrontMatterError, match="no closing ---"):
        split("---\ntitle: x\n")


# -- claude-mem -----------------------------------------------------------------------------------


def test_claude_mem_observations_and_summaries(app):
    report = run_import(app, str(CLAUDE_MEM))
    assert report.format == "claude-mem" and report.stored == {"node": 4, "edge": 3}
    assert report.skipped == {"prompt": 2, "session record": 1}
    state = writes.graph(app)
    found = {state.nodes[i].summary or state.nodes[i].type: state.nodes[i] for i in state.live}
    decision = found["Prices are integers in cents"]
    assert decision.type == "decision" and "- Column price_cents is BIGINT" in decision.content
    assert decision.metadata["files_modified"] == ["src/models/price.py", "migrations/0042_cents.sql"]
    assert state.tags_of(decision.id) >= {"project:shop", "kind:decision", "concept:trade-off"}
    assert found["Gateway supports idempotency keys"].type == "observation"
    summary = found["summary"]
    assert summary.content.startswith("Request: Fix lost cents") and len(state.edges_out(summary.id)) == 3


# -- contextflow's own export ---------------------------------------------------------------------


def test_an_own_export_imports_through_the_same_command_and_only_once(app, tmp_path, capsys):
    writes.add_node(app, type="fact", content="exported fact")
    path = tmp_path / "graph.json"
    assert main(["export", "-o", str(path)]) == 0
    other = open_app("writer-b", CONTEXTFLOW_STORE=str(tmp_path / "b"), CONTEXTFLOW_STATE=str(tmp_path / "sb"))
    try:
        assert run_import(other, str(path)).stored == {"node": 1}
        assert run_import(other, str(path)).present == {"node": 1}
        assert run_import(app, str(path)).stored == {}
    finally:
        other.close()


# -- detection, errors, progress ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "fmt"),
    [(MEMORY, "server-memory"), (BEADS / ".beads" / "issues.jsonl", "beads"), (CLAUDE_MEM, "claude-mem")],
)
def test_the_format_is_detected_from_the_content(path, fmt):
    assert detect.detect_bytes(str(path), path.read_bytes()) == fmt


def test_folders_are_detected_too():
    assert detect.detect_folder(BEADS) == "beads" and detect.detect_folder(BEADS / ".beads") == "beads"
    assert detect.detect_folder(NOTES) == "basic-memory"


def test_from_forces_a_format_and_unknown_content_says_what_is_expected(app, tmp_path):
    with pytest.raises(InputError, match=r"expected \"type\": \"entity\" or \"relation\""):
        run_import(app, str(BEADS / ".beads" / "issues.jsonl"), fmt="server-memory")
    odd = tmp_path / "odd.txt"
    odd.write_text("hello")
    with pytest.raises(InputError, match=r"cannot tell what .* holds; expected contextflow's own export"):
        run_import(app, str(odd))
    odd.write_text("")
    with pytest.raises(InputError, match="is empty"):
        run_import(app, str(odd))
    with pytest.raises(InputError, match="no such file or folder"):
        run_import(app, str(tmp_path / "missing"))


def test_the_table_names_the_detectors_formats():
    assert operations.IMPORT_FORMATS == detect.FORMATS


def test_an_import_reads_standard_input(app, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(MEMORY.read_bytes())))
    assert run_import(app, "-").stored == {"node": 5, "edge": 5}


def test_the_progress_bar_draws_only_on_a_terminal():
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    shown, hidden = Terminal(), io.StringIO()
    for stream in (shown, hidden):
        bar = Progress(stream)
        bar.start(4, "planning")
        bar.advance(4)
        bar.close()
    assert "[" + "#" * 30 + "] 100%" in shown.getvalue() and hidden.getvalue() == ""


def test_front_matter_lines_are_read_in_linear_time():
    """A crafted key line (a letter, then spaces without a colon) once took quadratic time."""
    import time

    from contextflow.imports.frontmatter import FrontMatterError, parse

    def cost(n: int) -> float:
        start = time.thread_time()
        with pytest.raises(FrontMatterError):
            parse(["a" + " " * n + "x"])
        return time.thread_time() - start

    cost(1000)
    assert cost(400_000) < 0.5  # quadratic: minutes


def test_odd_values_never_refuse_a_file(app, tmp_path):
    """A type with no usable characters gets no kind: tag; a field too long for metadata is cut or left out."""
    source = tmp_path / "memory.json"
    source.write_text(json.dumps({"type": "entity", "name": "Odd", "entityType": "!!!", "observations": ["x"]}))
    run_import(app, str(source))
    odd = nodes_by(app, "name")["Odd"]
    assert writes.graph(app).tags_of(odd.id) == {"imported:server-memory"}
    from contextflow.imports.model import MAX_META_VALUE, fitted

    kept = fitted({"files": [f"src/{n:05d}.py" for n in range(5000)], "long": "x" * 30_000, "short": "y"})
    assert set(kept) == {"files", "short"} and 0 < len(kept["files"]) < 5000
    assert len(str(kept["files"])) <= MAX_META_VALUE


def test_notes_and_sessions_are_read_from_their_files_not_standard_input(app, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"---\ntitle: x\n---\nbody\n")))
    with pytest.raises(InputError, match="basic-memory is read from its files"):
        run_import(app, "-")


def test_a_basic_memory_tag_in_any_script_is_kept(app, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "n.md").write_text("---\ntitle: Ünï note\ntags: [ünï, café au lait]\n---\n# Ünï note\nbody\n")
    run_import(app, str(folder), fmt="basic-memory")
    note = nodes_by(app, "title")["Ünï note"]
    assert {"label:ünï", "label:café-au-lait"} <= writes.graph(app).tags_of(note.id)


def test_a_claude_mem_body_without_exported_at_imports_with_from(app, tmp_path):
    doc = json.loads(CLAUDE_MEM.read_text())
    doc.pop("exportedAt", None)
    doc.pop("totalObservations", None)
    doc.pop("summaries", None)
    bare = tmp_path / "observations.json"
    bare.write_text(json.dumps(doc))
    report = run_import(app, str(bare), fmt="claude-mem")
    assert report.stored["node"] == len(doc["observations"]) and not report.errors


def test_a_server_memory_relation_named_supersedes_does_not_hide_its_target(app, tmp_path):
    memory = tmp_path / "memory.json"
    lines = [
        {"type": "entity", "name": "v2 plan", "entityType": "decision", "observations": ["ship v2"]},
        {"type": "entity", "name": "v1 plan", "entityType": "decision", "observations": ["ship v1"]},
        {"type": "relation", "from": "v2 plan", "to": "v1 plan", "relationType": "supersedes"},
        {"type": "relation", "from": "v2 plan", "to": "ghost", "relationType": "knows"},
    ]
    memory.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    report = run_import(app, str(memory))
    assert report.skipped == {"link to an item not imported": 1}  # said, not dropped silently
    state = writes.graph(app)
    v1 = nodes_by(app, "name")["v1 plan"]
    assert not state.superseded_by(v1.id)
    assert "Left out: link to an item not imported (1)." in report.text()


def test_a_beads_issue_keeps_its_owner_times_pin_and_metadata(app, tmp_path):
    issue = {
        "id": "bd-9",
        "title": "Ship it",
        "status": "open",
        "owner": "ana",
        "created_by": "bo",
        "started_at": "2026-01-02T10:00:00Z",
        "due_at": "2026-02-01T00:00:00Z",
        "defer_until": "2026-01-10T00:00:00Z",
        "pinned": True,
        "metadata": {"sprint": 4},
    }
    path = tmp_path / "issues.jsonl"
    path.write_text(json.dumps(issue) + "\n")
    run_import(app, str(path), fmt="beads")
    meta = nodes_by(app, "beads_id")["bd-9"].metadata
    assert meta["owner"] == "ana" and meta["created_by"] == "bo" and meta["pinned"] is True
    assert meta["started_at"] == "2026-01-02T10:00:00Z" and meta["due_at"] and meta["defer_until"]
    assert meta["beads_metadata"] == {"sprint": 4}


def test_a_beads_export_with_memories_imports_its_issues_and_memories(app, tmp_path):
    lines = [
        {"_type": "issue", "id": "bd-1", "title": "Fix login", "status": "open"},
        {"_type": "memory", "key": "deploy-order", "value": "migrate before deploy"},
        {"_type": "schema", "version": 3},
    ]
    path = tmp_path / "beads.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    report = run_import(app, str(path))
    assert report.format == "beads" and report.stored == {"node": 2} and not report.errors
    assert report.skipped == {"beads schema record": 1}
    memory = nodes_by(app, "beads_memory")["deploy-order"]
    assert memory.content == "migrate before deploy" and "kind:memory" in writes.graph(app).tags_of(memory.id)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"_type": "memory", "key": "k"}) + "\n")
    with pytest.raises(InputError, match='a memory needs "key" and "value" strings'):
        run_import(app, str(bad), fmt="beads")
