"""A write needs its writer's last seq, the log's newest stamp and where a batch a kill cut short begins:
all read from the end of its own log under the writer lock (`batches.log_end`), never from machine-local
state. So nothing planted in the state folder (an old `own-log.mark`, forged derived state) can make a
write reuse a sequence, and the first write after a large import reads a few KiB, never the import."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import orjson
import pytest

from contextflow.app import App
from contextflow.core import batches
from contextflow.core.clock import stamp_from_ms
from contextflow.core.events import decode
from contextflow.core.log import end_position, log_path, read_whole
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
    assert App.open().store.event_count == len(events)


@pytest.fixture
def imported(app: App, tmp_path: Path, store_dir: Path) -> int:
    """One note, then an import by another process: its events in this machine's log."""
    app.store.append("note", {"text": "before the import", "project": "shared"})
    report = run_import(App.open(), str(memory_json(tmp_path)))
    assert report.stored["node"] == ENTITIES
    return len(own_events(store_dir))


def test_the_first_write_after_an_import_reads_only_the_logs_last_bytes(imported, store_dir):
    newest = max(event.hlc for event in own_events(store_dir))
    fresh = App.open()
    event = fresh.store.append("note", {"text": "after the import", "project": "shared"})
    assert fresh.store.bytes_read <= 64 * 1024  # the log's end, never the import's 0.5 MB
    assert event.seq == imported + 1 and event.hlc > newest
    again = App.open()
    second = again.store.append("note", {"text": "again", "project": "shared"})
    assert second.seq == imported + 2 and again.store.bytes_read <= 64 * 1024
    assert fresh.store.event_count == imported + 2  # a read catches the fold up: every event
    assert_log_continues(store_dir)


def test_the_writes_own_signature_moves_though_it_is_not_folded(imported):
    fresh = App.open()
    fresh.store.append("note", {"text": "one", "project": "shared"})
    seen = fresh.store.signatures()
    fresh.store.append("note", {"text": "two", "project": "shared"})
    assert fresh.store.signatures() != seen  # a server's resume_N list is looked at again


@pytest.mark.parametrize("planted", ["own-log.mark", "views.sqlite3", "snapshot.cfsnap"])
def test_forged_machine_local_state_never_makes_a_write_reuse_a_sequence(imported, store_dir, planted):
    state = App.open().store.state_dir
    own = log_path(store_dir, "writer-a")
    at = end_position(own)  # a mark at the log's very end, saying it holds no event of this writer
    assert at is not None
    place = {"dev": at.dev, "ino": at.ino, "size": at.size, "mtime_ns": at.mtime_ns}
    position = {**place, "offset": at.offset, "tail": at.tail.hex()}
    forged = {"log": own.name, "cursor": position, "seq": 0, "newest": 0}
    (state / planted).unlink(missing_ok=True)
    (state / planted).write_bytes(orjson.dumps(forged) if planted == "own-log.mark" else b"\0forged" * 64)
    event = App.open().store.append("note", {"text": "after the forgery", "project": "shared"})
    assert event.seq == imported + 1
    assert_log_continues(store_dir)


def test_a_forged_marker_stating_seq_zero_at_the_logs_end_is_not_believed(imported, store_dir):
    with log_path(store_dir, "writer-a").open("ab") as handle:
        handle.write(b'{"batch":"commit","id":"forged","events":0,"seq":0,"newest":0}\n')
    event = App.open().store.append("note", {"text": "after", "project": "shared"})
    assert event.seq == imported + 1  # the log's last event of this writer says more


def test_a_write_killed_after_its_line_is_read_from_the_log(imported, store_dir):
    log = log_path(store_dir, "writer-a")
    stamp = stamp_from_ms(now_ms() + 10 * 60 * 1000)  # its clock ran ahead (within the drift bound)
    line = {"v": 1, "id": "killed-late", "w": "writer-a", "seq": imported + 1, "hlc": stamp, "kind": "note"}
    with log.open("ab") as handle:
        handle.write(orjson.dumps({**line, "data": {"text": "written, then killed"}}) + b"\n")
    fresh = App.open()
    event = fresh.store.append("note", {"text": "after the kill", "project": "shared"})
    assert event.seq == imported + 2 and event.hlc > stamp
    assert fresh.store.bytes_read <= 64 * 1024
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


def test_a_batch_a_kill_cut_short_is_closed_and_its_seqs_never_given_again(imported, store_dir):
    log = log_path(store_dir, "writer-a")
    lines = [
        f'{{"v":1,"id":"held{n}","w":"writer-a","seq":{imported + n},"hlc":1,"kind":"note","data":{{}}}}\n'
        for n in (1, 2)
    ]
    begin = orjson.dumps({"batch": "begin", "id": "killed", "events": 2, "bytes": sum(map(len, lines))}) + b"\n"
    with log.open("ab") as handle:
        handle.write(begin + lines[0].encode())  # killed before its second line and its commit
    event = App.open().store.append("note", {"text": "after the kill", "project": "shared"})
    assert event.seq == imported + 2  # the cut batch's line keeps its seq, never applied
    assert not (store_dir / "quarantine").exists()  # its complete line stays in the log, closed by an abort line
    assert b'{"batch":"abort","id":"killed"' in log.read_bytes()
    events = own_events(store_dir)
    assert all(e.id not in ("held1", "held2") for e in events) and events[-1].data["text"] == "after the kill"
    assert App.open().store.event_count == len(events)


def test_a_log_restored_from_an_older_copy_gives_the_seq_after_its_own_end(imported, store_dir):
    log = log_path(store_dir, "writer-a")
    _, lines, _ = read_whole(log)
    kept = lines[: len(lines) // 2]  # a copy restored from an older backup: a new file, shorter
    restored = log.with_name("restored")
    restored.write_bytes(b"".join(raw + b"\n" for _, raw in kept))
    os.replace(restored, log)
    event = App.open().store.append("note", {"text": "after the restore", "project": "shared"})
    assert event.seq == decode(kept[-1][1]).seq + 1
    assert App.open().store.event_count == len(own_events(store_dir))


def test_a_log_cut_in_place_gives_the_seq_after_its_new_end(imported, store_dir):
    for n in range(3):
        App.open().store.append("note", {"text": f"after {n}", "project": "shared"})
    log = log_path(store_dir, "writer-a")
    _, lines, _ = read_whole(log)
    os.truncate(log, log.stat().st_size - sum(len(raw) + 1 for _, raw in lines[-2:]))  # same file, two lines cut
    event = App.open().store.append("note", {"text": "after the cut", "project": "shared"})
    assert event.seq == imported + 2
    assert_log_continues(store_dir)


def test_the_clock_follows_every_stamp_of_a_write_not_only_its_last(app, store_dir):
    app.store.append("note", {"text": "before", "project": "shared"})
    ahead = stamp_from_ms(now_ms() + 30 * 60 * 1000)  # within the drift bound: the clock must follow it
    past = stamp_from_ms(now_ms() - 86_400_000)
    items = [("note", {"text": f"imported {n}", "project": "shared"}) for n in range(3)]
    App.open().store.append_many(items, stamps=[ahead, past, past], fold=False)  # its last line is a day old
    event = App.open().store.append("note", {"text": "after", "project": "shared"})
    assert event.hlc > ahead
    App.open().store.append_many([("note", {"text": "one", "project": "shared"})], stamps=[past], fold=False)
    assert App.open().store.append("note", {"text": "later", "project": "shared"}).hlc > ahead


def test_an_imported_stamp_beyond_the_drift_bound_is_bounded_by_the_next_write(app, store_dir):
    app.store.append("note", {"text": "before", "project": "shared"})
    far = stamp_from_ms(now_ms() + 3 * 3600 * 1000)
    [imported] = App.open().store.append_many(
        [("note", {"text": "far", "project": "shared"})], stamps=[far], fold=False
    )
    App.open().store.append("note", {"text": "after", "project": "shared"})
    bounds = [e for e in own_events(store_dir) if e.kind == "clock.bound"]
    assert [b.data["ids"] for b in bounds] == [[imported.id]]


def test_a_long_log_without_batch_lines_costs_a_bounded_read(app, store_dir):
    items = [("note", {"text": "x" * 900, "project": "shared"}) for _ in range(3000)]
    store_dir.mkdir()
    with log_path(store_dir, "writer-a").open("ab") as handle:  # 3 MB of single lines, no marker
        for n, (kind, data) in enumerate(items, 1):
            line = {"v": 1, "id": f"n{n}", "w": "writer-a", "seq": n, "hlc": n << 16, "kind": kind, "data": data}
            handle.write(orjson.dumps(line) + b"\n")
    fresh = App.open()
    event = fresh.store.append("note", {"text": "one more", "project": "shared"})
    assert event.seq == 3001 and fresh.store.bytes_read <= 2 * 1024 * 1024 + 64 * 1024
    again = App.open()
    assert again.store.append("note", {"text": "and more", "project": "shared"}).seq == 3002
    assert again.store.bytes_read <= 64 * 1024  # the first write's closing line is near the end
    assert_log_continues(store_dir)


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


def _read_back(store_dir: Path) -> tuple[int, int, int | None]:
    """What a fresh read of the log's end says: its last seq, newest stamp and a held batch."""
    fd = os.open(log_path(store_dir, "writer-a"), os.O_RDONLY)
    try:
        found = batches.log_end(fd, "writer-a")
    finally:
        os.close(fd)
    assert found is not None
    return found.seq, found.newest, found.held_at


def test_a_process_writing_again_knows_its_logs_end_without_reading_it(imported, store_dir):
    writer = App.open()
    writer.store.append("note", {"text": "first", "project": "shared"})
    for items in ([("note", {"text": "one", "project": "shared"})], [("note", {"text": f"{n}"}) for n in range(3)]):
        read = writer.store.bytes_read
        remembered = writer.store._writer.end()
        assert (remembered.seq, remembered.newest, remembered.held_at) == _read_back(store_dir)
        written = writer.store.append_many(items)
        assert writer.store.bytes_read == read  # nothing of the log read again
        assert written[0].seq == remembered.seq + 1
    assert_log_continues(store_dir)


def test_a_write_by_another_process_in_between_is_read_back(imported, store_dir):
    first, other = App.open(), App.open()
    first.store.append("note", {"text": "first", "project": "shared"})
    other.store.append("note", {"text": "other", "project": "shared"})
    assert first.store.append("note", {"text": "again", "project": "shared"}).seq == imported + 3
    log = log_path(store_dir, "writer-a")
    _, lines, _ = read_whole(log)
    os.truncate(log, log.stat().st_size - len(lines[-1][1]) - 1)  # its own last line cut again
    assert first.store.append("note", {"text": "after the cut", "project": "shared"}).seq == imported + 3
    assert_log_continues(store_dir)
