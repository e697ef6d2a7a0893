"""All-or-nothing for every multi-item write, whatever cuts it: a batch is framed by a begin line (its
event count and byte length) and a commit line, and the log reader returns a batch's lines only once
its commit is on disk. A batch cut short (a writer killed mid-write) is held back, never half-applied,
reported by doctor, and closed by the next write from that machine (an abort line: its lines stay in
the log, never applied); the same items written again then land whole. Logs written before batches
existed read as they did."""

from __future__ import annotations

import io
import json
from pathlib import Path

from contextflow.adapters.cli import main
from contextflow.admin.diagnose import problems, store_info
from contextflow.app import App
from contextflow.core import log
from contextflow.core.events import decode
from contextflow.search.retrieval import get_context
from tests.folding import view_of
from tests.hostile.helpers import line, plant

NODES = 40


def _nodes(app: App, n: int = NODES) -> None:
    items = [
        ("graph.node", {"type": "fact", "content": f"fact number {k} about widgets", "tags": []}) for k in range(n)
    ]
    app.store.append_many(items)


def _log(app: App) -> Path:
    return app.store.log_writer.path


def _visible(n_expected: int = NODES) -> int:
    fresh = App.open()
    try:
        return len(view_of(fresh.store, "graph").nodes)
    finally:
        fresh.close()


def test_a_multi_item_write_is_framed_and_read_whole(app):
    _nodes(app)
    raw = _log(app).read_bytes().splitlines()
    assert raw[0].startswith(b'{"batch":"begin"') and raw[-1].startswith(b'{"batch":"commit"')
    chunk = log.read_new(_log(app), None)
    assert len(chunk.lines) == NODES and chunk.held == 0 and chunk.torn == 0
    assert all(decode(raw).kind == "graph.node" for _, raw in chunk.lines)
    assert _visible() == NODES


def test_a_batch_cut_at_any_byte_is_held_back_whole(app):
    _nodes(app)
    whole = _log(app).read_bytes()
    for cut in sorted({1, 60, len(whole) // 3, len(whole) // 2, len(whole) - 40, len(whole) - 1}):
        _log(app).write_bytes(whole[:cut])
        chunk = log.read_new(_log(app), None)
        assert chunk.lines == [], f"cut at {cut}: {len(chunk.lines)} lines of a torn batch were returned"
        assert chunk.position.offset == 0, "the position waits at the batch's begin line"
        assert _visible() == 0


def test_the_next_write_closes_a_torn_batch_and_the_same_items_then_land(app, store_dir, capsys):
    _nodes(app)
    whole = _log(app).read_bytes()
    cut = whole[: len(whole) // 2]
    _log(app).write_bytes(cut)  # killed midway
    app.close()

    info = store_info(App.open())
    assert any("unfinished batch" in problem for problem in problems(info)), problems(info)

    again = App.open()
    _nodes(again)  # the same items again (an import run a second time)
    again.close()
    assert _visible() == NODES  # the cut batch's lines are never applied
    kept = cut[: cut.rindex(b"\n") + 1]
    raw = _log(again).read_bytes()
    assert raw.startswith(kept), "its complete lines stay in the log"
    assert [path.read_bytes() for path in (store_dir / log.QUARANTINE_DIR).iterdir()] == [cut[len(kept) :]]
    assert raw.count(b'{"batch":"begin"') == 2 and raw.count(b'{"batch":"abort"') == 1
    assert raw.count(b'{"batch":"commit"') == 1


def test_a_reader_waiting_at_a_torn_batch_continues_when_the_writer_writes_again(app):
    _nodes(app, 5)
    _nodes(app)
    whole = _log(app).read_bytes()
    second = whole.index(b'{"batch":"begin"', 10)
    _log(app).write_bytes(whole[: second + (len(whole) - second) // 2])
    reader = App.open()
    assert len(view_of(reader.store, "graph").nodes) == 5
    writer = App.open()
    writer.store.append("note", {"project": "shared", "session_id": "s1", "agent": "me", "text": "after the crash"})
    writer.close()
    reader.store.refresh()
    assert len(view_of(reader.store, "graph").nodes) == 5 and reader.store.event_count == 6
    reader.close()


def test_the_search_index_never_holds_half_a_batch(app):
    _nodes(app)
    whole = _log(app).read_bytes()
    _log(app).write_bytes(whole[: len(whole) // 2])
    reader = App.open()
    try:
        result = get_context(reader, query="widgets fact")
        assert result.shown == []
    finally:
        reader.close()


def test_logs_without_batches_read_as_before(store_dir):
    plant(store_dir, "events.old.jsonl", *(line(writer="old", seq=n) for n in range(1, 11)))
    chunk = log.read_new(store_dir / "events.old.jsonl", None)
    assert len(chunk.lines) == 10 and chunk.held == 0 and chunk.torn == 0


def test_a_forged_batch_drops_only_the_lines_it_spans_and_is_counted(app, store_dir):
    app.store.append("note", {"project": "shared", "session_id": "s1", "agent": "me", "text": "mine"})
    forged = b'{"batch":"begin","id":"x","events":1,"bytes":20}\n'  # no commit where it says
    lines = [line(writer="evil", seq=n) for n in range(1, 5)]
    plant(store_dir, "events.evil.jsonl", lines[0], forged, *lines[1:])
    chunk = log.read_new(store_dir / "events.evil.jsonl", None)
    assert [raw + b"\n" for _, raw in chunk.lines] == [lines[0], lines[2], lines[3]]
    assert chunk.torn == 2 and chunk.held == 0  # the begin line and the one line it spans
    assert App.open().store.event_count == 4


def test_a_stdin_batch_is_one_framed_write_and_a_cut_one_lands_not_at_all(app, monkeypatch):
    notes = "".join(json.dumps({"text": f"note number {n}", "session_id": "s1"}) + "\n" for n in range(3))
    monkeypatch.setattr("sys.stdin", io.StringIO(notes))
    assert main(["note", "--stdin", "--agent", "codex"]) == 0
    raw = _log(app).read_bytes()
    assert raw.startswith(b'{"batch":"begin"') and raw.rstrip().endswith(b"}") and b'"batch":"commit"' in raw
    _log(app).write_bytes(raw[: len(raw) - 80])
    assert App.open().store.event_count == 0


def test_a_reader_with_a_byte_limit_drops_a_torn_batch_whole_however_it_is_cut(store_dir):
    lines = [line(writer="evil", seq=n) for n in range(1, 41)]
    span = sum(map(len, lines[1:31]))  # a begin spanning 30 lines, with no commit after them
    forged = b'{"batch":"begin","id":"x","events":30,"bytes":%d}\n' % span
    path = plant(store_dir, "events.evil.jsonl", lines[0], forged, *lines[1:])
    for limit in (200, 1000, 5000, None):
        found, position = [], None
        while True:
            chunk = log.read_new(path, position, limit)
            found += [raw + b"\n" for _, raw in chunk.lines]
            if position is not None and chunk.position.offset == position.offset:
                break
            position = chunk.position
        assert found == [lines[0], *lines[31:]], f"limit {limit}"


def test_a_complete_batch_larger_than_a_readers_byte_limit_is_read_in_pieces(app):
    _nodes(app)
    found, position = 0, None
    for _ in range(1000):
        chunk = log.read_new(_log(app), position, 500)
        found += len(chunk.lines)
        if position is not None and chunk.position.offset == position.offset:
            break
        position = chunk.position
    assert found == NODES
