"""The first write after a large write the fold did not take in (an import into this machine's log) reads
only what it needs of its own log: the mark the import left and the bytes after it, folding nothing,
while seqs, the clock, torn ends, concurrent writers and every read stay as they were."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import orjson
import pytest

from contextflow.app import App
from contextflow.core import own_end
from contextflow.core import store as store_module
from contextflow.core.clock import stamp_from_ms
from contextflow.core.events import decode
from contextflow.core.log import log_path, read_whole
from contextflow.core.timeutil import now_ms
from contextflow.imports.run import run_import

ENTITIES = 1000  # a server-memory graph of 1,000 entities and 1,000 relations: 2,000 events


def memory_json(folder: Path, entities: int = ENTITIES) -> Path:
    path = folder / "memory.json"
    with path.open("w") as handle:
        for n in range(entities):
            entity = {"type": "entity", "name": f"Entity {n}", "entityType": "component", "observations": [f"obs {n}"]}
            handle.write(json.dumps(entity) + "\n")
        for n in range(entities):
            relation = {"type": "relation", "from": f"Entity {n}", "to": f"Entity {(n * 7 + 1) % entities}"}
            handle.write(json.dumps({**relation, "relationType": "depends_on"}) + "\n")
    return path


def own_events(store_dir: Path) -> list:
    return [decode(raw) for _, raw in read_whole(log_path(store_dir, "writer-a"))[1]]


def assert_log_continues(store_dir: Path) -> None:
    """Seqs 1..n without gaps or repeats, and every event read by a fresh fold."""
    events = own_events(store_dir)
    assert [event.seq for event in events] == list(range(1, len(events) + 1))
    assert App.open(use_snapshot=False).store.event_count == len(events)


@pytest.fixture
def imported(app: App, tmp_path: Path, store_dir: Path) -> int:
    """A store whose snapshot covers one note, then an import by another process: the events in the log."""
    app.store.append("note", {"text": "before the import", "project": "shared"})
    assert app.store.save_snapshot(force=True)
    report = run_import(App.open(), str(memory_json(tmp_path)))
    assert report.stored["node"] == ENTITIES
    return len(own_events(store_dir))


def test_the_first_write_after_an_import_folds_nothing_and_reads_only_past_the_mark(imported, store_dir):
    newest = max(event.hlc for event in own_events(store_dir))
    fresh = App.open()  # a new process: its snapshot predates the import
    event = fresh.store.append("note", {"text": "after the import", "project": "shared"})
    assert fresh.store.from_snapshot and fresh.store.fold.count == 1  # the snapshot's note: today's code folded 2,001
    assert fresh.store.bytes_read < 64 * 1024  # the mark's check, never the import's 0.5 MB
    assert event.seq == imported + 1 and event.hlc > newest
    again = App.open()  # a later process: the mark moved past the first write
    second = again.store.append("note", {"text": "again", "project": "shared"})
    assert second.seq == imported + 2 and again.store.fold.count == 1 and again.store.bytes_read < 64 * 1024
    assert fresh.store.event_count == imported + 2  # a read catches the fold up: every event
    assert_log_continues(store_dir)


def test_the_writes_own_signature_moves_though_it_is_not_folded(imported):
    fresh = App.open()
    fresh.store.append("note", {"text": "one", "project": "shared"})
    seen = fresh.store.signatures()
    fresh.store.append("note", {"text": "two", "project": "shared"})
    assert fresh.store.signatures() != seen  # a server's resume_N list is looked at again


def test_without_a_mark_the_first_write_reads_the_rest_but_folds_nothing(imported, store_dir, monkeypatch):
    (App.open().store.state_dir / own_end.MARK_FILE).unlink(missing_ok=True)  # as if an older contextflow imported
    monkeypatch.setattr(store_module, "OWN_FOLD_BYTES", 10_000, raising=False)
    fresh = App.open()
    event = fresh.store.append("note", {"text": "after", "project": "shared"})
    assert fresh.store.fold.count == 1 and fresh.store.bytes_read > 100_000  # read once, nothing kept
    assert event.seq == imported + 1
    later = App.open()
    later.store.append("note", {"text": "later", "project": "shared"})
    assert later.store.bytes_read < 64 * 1024  # the first write left a mark
    assert_log_continues(store_dir)


def test_a_little_unfolded_and_no_mark_is_folded_as_before(app, store_dir):
    app.store.append("note", {"text": "one", "project": "shared"})
    assert app.store.save_snapshot(force=True)
    App.open().store.append("note", {"text": "two", "project": "shared"})  # folded by its writer: no mark
    fresh = App.open()
    fresh.store.append("note", {"text": "three", "project": "shared"})
    assert fresh.store.fold.count == 3  # the snapshot's one, the other process's and its own
    assert_log_continues(store_dir)


def test_a_write_killed_before_it_moved_the_mark_is_read_from_the_old_mark(imported, store_dir):
    log = log_path(store_dir, "writer-a")
    stamp = stamp_from_ms(now_ms() + 10 * 60 * 1000)  # its clock ran ahead (within the drift bound)
    line = {"v": 1, "id": "killed-before-mark", "w": "writer-a", "seq": imported + 1, "hlc": stamp, "kind": "note"}
    with log.open("ab") as handle:
        handle.write(orjson.dumps({**line, "data": {"text": "written, then killed"}}) + b"\n")
    fresh = App.open()
    event = fresh.store.append("note", {"text": "after the kill", "project": "shared"})
    assert event.seq == imported + 2 and event.hlc > stamp  # the line after the mark was read
    assert fresh.store.fold.count == 1 and fresh.store.bytes_read < 64 * 1024
    assert_log_continues(store_dir)


def test_a_torn_last_line_after_an_import_is_quarantined_by_the_next_write(imported, store_dir):
    log = log_path(store_dir, "writer-a")
    with log.open("ab") as handle:
        handle.write(b'{"v":1,"id":"torn","w":"writer-a","seq":')  # a crash mid-line
    event = App.open().store.append("note", {"text": "after the crash", "project": "shared"})
    assert event.seq == imported + 1
    assert [p.read_bytes() for p in (store_dir / "quarantine").iterdir()] == [
        b'{"v":1,"id":"torn","w":"writer-a","seq":'
    ]
    assert_log_continues(store_dir)


def test_a_batch_a_kill_cut_short_after_an_import_is_closed_by_the_next_write(imported, store_dir):
    log = log_path(store_dir, "writer-a")
    lines = [
        f'{{"v":1,"id":"held{n}","w":"writer-a","seq":{imported + n},"hlc":1,"kind":"note","data":{{}}}}\n'
        for n in (1, 2)
    ]
    begin = orjson.dumps({"batch": "begin", "id": "killed", "events": 2, "bytes": sum(map(len, lines))}) + b"\n"
    with log.open("ab") as handle:
        handle.write(begin + lines[0].encode())  # killed before its second line and its commit
    event = App.open().store.append("note", {"text": "after the kill", "project": "shared"})
    assert event.seq == imported + 1  # the held batch's events were never applied
    assert not (store_dir / "quarantine").exists()  # its complete line stays in the log, closed by an abort line
    assert b'{"batch":"abort","id":"killed"' in log.read_bytes()
    assert all(e.id not in ("held1", "held2") for e in own_events(store_dir))
    assert_log_continues(store_dir)


def test_a_log_that_no_longer_continues_the_mark_is_not_trusted(imported, store_dir):
    log = log_path(store_dir, "writer-a")
    _, lines, _ = read_whole(log)
    kept = lines[: len(lines) // 2]  # a copy restored from an older backup: a new file, shorter
    restored = log.with_name("restored")
    restored.write_bytes(b"".join(raw + b"\n" for _, raw in kept))
    os.replace(restored, log)
    event = App.open().store.append("note", {"text": "after the restore", "project": "shared"})
    assert event.seq == decode(kept[-1][1]).seq + 1  # from the log, not from the mark (imported + 1)
    events = own_events(store_dir)
    assert App.open(use_snapshot=False).store.event_count == len(events)


def test_a_log_cut_in_place_does_not_continue_the_mark_either(imported, store_dir):
    for n in range(3):
        App.open().store.append("note", {"text": f"after {n}", "project": "shared"})  # each moves the mark
    log = log_path(store_dir, "writer-a")
    _, lines, _ = read_whole(log)
    os.truncate(log, log.stat().st_size - sum(len(raw) + 1 for _, raw in lines[-2:]))  # same file, two lines cut
    event = App.open().store.append("note", {"text": "after the cut", "project": "shared"})
    assert event.seq == imported + 2  # from the log (the mark says imported + 3)
    assert_log_continues(store_dir)


def test_the_clock_follows_every_stamp_of_the_import_not_only_its_last(app, store_dir):
    app.store.append("note", {"text": "before", "project": "shared"})
    assert app.store.save_snapshot(force=True)
    ahead = stamp_from_ms(now_ms() + 30 * 60 * 1000)  # within the drift bound: the clock must follow it
    past = stamp_from_ms(now_ms() - 86_400_000)
    items = [("note", {"text": f"imported {n}", "project": "shared"}) for n in range(3)]
    App.open().store.append_many(items, stamps=[ahead, past, past], fold=False)  # its last line is a day old
    event = App.open().store.append("note", {"text": "after", "project": "shared"})
    assert event.hlc > ahead


def test_an_imported_stamp_beyond_the_drift_bound_is_bounded_by_the_next_write(app, store_dir):
    app.store.append("note", {"text": "before", "project": "shared"})
    assert app.store.save_snapshot(force=True)
    far = stamp_from_ms(now_ms() + 3 * 3600 * 1000)
    [imported] = App.open().store.append_many(
        [("note", {"text": "far", "project": "shared"})], stamps=[far], fold=False
    )
    App.open().store.append("note", {"text": "after", "project": "shared"})
    bounds = [e for e in own_events(store_dir) if e.kind == "clock.bound"]
    assert [b.data["ids"] for b in bounds] == [[imported.id]]


@pytest.mark.parametrize("mark", [b"not json", b'{"log": "events.writer-a.jsonl"}', None])
def test_a_damaged_mark_or_a_fifo_in_its_place_costs_a_read_never_a_wrong_write(imported, store_dir, mark, monkeypatch):
    monkeypatch.setattr(store_module, "OWN_FOLD_BYTES", 10_000, raising=False)  # the import is read, not folded
    path = App.open().store.state_dir / own_end.MARK_FILE
    path.unlink(missing_ok=True)
    if mark is None:
        os.mkfifo(path)  # never opened blocking
    else:
        path.write_bytes(mark)
    fresh = App.open()
    event = fresh.store.append("note", {"text": "after", "project": "shared"})
    assert event.seq == imported + 1 and fresh.store.fold.count == 1
    assert own_end.read_mark(path.parent, log_path(store_dir, "writer-a")) is not None  # replaced by a good one
    assert_log_continues(store_dir)


def test_a_temp_file_of_a_writer_killed_while_marking_is_removed(imported, store_dir):
    state = App.open().store.state_dir
    dead = state / f".{own_end.MARK_FILE}.999999999.1.tmp"  # no such process
    dead.write_bytes(b"half a mark")
    App.open().store.append_many([("note", {"text": "unfolded", "project": "shared"})], fold=False)
    assert not dead.exists() and (state / own_end.MARK_FILE).exists()


def _write_notes(worker: int, env: dict[str, str]) -> None:
    app = App.open(env)
    for n in range(30):
        app.store.append("note", {"text": f"{worker}:{n}", "project": "shared"})
    app.close()


def test_processes_writing_at_once_after_an_import_lose_nothing(imported, store_dir):
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_write_notes, args=(n, dict(os.environ))) for n in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=120)
        assert process.exitcode == 0
    texts = {e.data["text"] for e in own_events(store_dir) if e.kind == "note"}
    assert {f"{w}:{n}" for w in range(4) for n in range(30)} <= texts
    assert_log_continues(store_dir)
