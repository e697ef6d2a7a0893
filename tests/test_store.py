import shutil

import orjson

from contextflow.app import App
from contextflow.core.events import decode
from contextflow.core.log import log_path
from contextflow.sessions.core import EntryFilter, append_note, read_entries
from tests.conftest import open_app


def texts(app: App, project: str = "shared") -> list[str]:
    return [e.data["text"] for e in read_entries(app, EntryFilter(project), 200)]


def test_each_writer_appends_only_to_its_own_log(app, store_dir):
    other = open_app("writer-b")
    append_note(app, agent="a", text="from a")
    append_note(other, agent="b", text="from b")
    assert sorted(p.name for p in store_dir.glob("*.jsonl")) == ["events.writer-a.jsonl", "events.writer-b.jsonl"]
    assert texts(app) == ["from a", "from b"] and texts(other) == ["from a", "from b"]


def test_sequence_numbers_count_up_per_writer_across_processes_on_one_machine(app, store_dir):
    twin = open_app("writer-a")  # a second process on the same machine
    append_note(app, agent="a", text="1")
    append_note(twin, agent="a", text="2")
    append_note(app, agent="a", text="3")
    lines = log_path(store_dir, "writer-a").read_bytes().splitlines()
    assert [decode(line).seq for line in lines] == [1, 2, 3]


def test_a_conflict_copy_is_read_and_its_duplicates_apply_once(app, store_dir):
    append_note(app, agent="a", text="kept")
    log = log_path(store_dir, "writer-a")
    shutil.copy(log, store_dir / "events.writer-a.sync-conflict-20260101-000000-ABC.jsonl")
    fresh = open_app("writer-c")
    assert texts(fresh) == ["kept"]
    assert fresh.store.event_count == 1  # (folds in memory too)
    assert fresh.store.duplicates == 1


def test_bad_lines_are_skipped_counted_and_reported(app, store_dir):
    append_note(app, agent="a", text="good")
    with open(log_path(store_dir, "writer-a"), "ab") as handle:
        handle.write(b"{broken\n")
    append_note(app, agent="a", text="after")
    health = app.store.health()
    assert texts(app) == ["good", "after"]
    assert health.bad_line_count == 1 and health.bad_lines[0].line == 2


def test_another_writers_appends_are_picked_up_without_rescanning(app, store_dir):
    other = open_app("writer-b")
    append_note(app, agent="a", text="one")
    assert texts(other) == ["one"] and other.store.event_count == 1
    before = other.store.scan  # the scan survives an incremental read
    append_note(app, agent="a", text="two")
    assert texts(other) == ["one", "two"] and other.store.event_count == 2
    assert other.store.scan is before


def test_a_log_rewritten_in_place_is_refolded_from_scratch(app, store_dir):
    append_note(app, agent="a", text="old")
    reader = open_app("writer-b")
    assert texts(reader) == ["old"]
    log = log_path(store_dir, "writer-a")
    record = orjson.loads(log.read_bytes())
    record["data"]["text"] = "rewritten"
    log.write_bytes(orjson.dumps(record) + b"\n")
    assert texts(reader) == ["rewritten"]


def test_a_log_read_before_is_caught_up_or_refolded(app, store_dir):
    append_note(app, agent="a", text="one")
    reader = open_app("writer-x")
    assert texts(reader) == ["one"]
    append_note(app, agent="a", text="two")  # read incrementally
    assert texts(reader) == ["one", "two"]
    log = log_path(store_dir, "writer-a")
    log.write_bytes(log.read_bytes().splitlines(keepends=True)[1])  # history changed: refold
    assert texts(reader) == ["two"]


def test_deleting_the_state_folder_loses_nothing(app, tmp_path):
    append_note(app, agent="a", text="durable")
    shutil.rmtree(tmp_path / "state")
    assert texts(open_app("writer-a")) == ["durable"]


def test_a_legacy_contextflowmcp_file_is_read_and_never_rewritten(tmp_path, monkeypatch):
    legacy = tmp_path / "old" / "shared.jsonl"
    legacy.parent.mkdir()
    line = {
        "id": "l1",
        "ts": "2025-01-01T00:00:00Z",
        "kind": "note",
        "project": "shared",
        "agent": "codex",
        "session_id": "s",
        "text": "from the node server",
    }
    legacy.write_bytes(orjson.dumps(line) + b"\n")
    monkeypatch.delenv("CONTEXTFLOW_STORE")
    monkeypatch.setenv("MCP_SHARED_CONTEXT_FILE", str(legacy))
    before = legacy.read_bytes()
    app = App.open()
    append_note(app, agent="claude", text="new")
    assert texts(app) == ["from the node server", "new"]
    assert legacy.read_bytes() == before
    assert (legacy.parent / "events.writer-a.jsonl").exists()


def test_a_new_process_lists_sessions_from_the_tables_without_folding(app):
    from contextflow.sessions.core import SessionQuery, list_sessions

    append_note(app, agent="a", text="x", session_id="indexed")
    assert [s.session_id for s in list_sessions(app, SessionQuery("shared"))] == ["indexed"]
    fresh = open_app("writer-a")
    assert [s.session_id for s in list_sessions(fresh, SessionQuery("shared"))] == ["indexed"]
    assert not fresh.store.scanned  # answered by the derived tables alone


def test_stale_or_deleted_tables_are_brought_up_to_date(app):
    from contextflow.sessions.core import SessionQuery, list_sessions

    append_note(app, agent="a", text="x", session_id="one")
    list_sessions(app, SessionQuery("shared"))
    append_note(open_app("writer-b"), agent="b", text="y", session_id="two")  # the tables are now behind
    fresh = open_app("writer-a")
    assert [s.session_id for s in list_sessions(fresh, SessionQuery("shared"))] == ["two", "one"]
    assert not fresh.store.scanned
    fresh.close()
    (app.store.state_dir / "views.sqlite3").unlink()
    assert [s.session_id for s in list_sessions(open_app("writer-a"), SessionQuery("shared"))] == ["two", "one"]


def test_given_ids_are_the_event_ids_another_process_reads(app):
    events = app.store.append_many([("note", {"text": "one"}), ("note", {"text": "two"})], ids=["id-one", "id-two"])
    assert [event.id for event in events] == ["id-one", "id-two"]
    other = open_app("writer-b")
    try:
        other.store.refresh()
        assert {"id-one", "id-two"} <= other.store.scan.seen and "id-three" not in other.store.scan.seen
    finally:
        other.close()
