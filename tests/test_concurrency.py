"""Many processes appending to one store (and updating its derived tables) lose nothing and tear nothing."""

import multiprocessing
import os
from pathlib import Path

import orjson

from contextflow.app import App
from contextflow.feed.core import recent
from contextflow.sessions.core import EntryFilter, append_note, read_entries

PROCESSES = 8
APPENDS = 250


def _append_many(worker: int, env: dict[str, str]) -> None:
    app = App.open(env)
    for n in range(APPENDS):
        append_note(app, agent=f"worker-{worker}", text=f"{worker}:{n}", session_id=f"s{worker}")
        if n % 10 == worker % 10:  # the derived tables are updated by whichever process reads first
            assert (
                read_entries(app, EntryFilter("shared", session_id=f"s{worker}"), 1)[0].data["text"] == f"{worker}:{n}"
            )
            recent(app, limit=5)


def test_eight_processes_appending_250_notes_each_leave_exactly_2000_valid_events(store_dir: Path):
    env = dict(os.environ)
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_append_many, args=(n, env)) for n in range(PROCESSES)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=120)
        assert process.exitcode == 0
    lines = (store_dir / "events.writer-a.jsonl").read_bytes().splitlines()
    records = [orjson.loads(line) for line in lines]  # every line is whole, valid JSON
    assert len(records) == PROCESSES * APPENDS
    assert sorted(r["seq"] for r in records) == list(range(1, PROCESSES * APPENDS + 1))
    assert len({r["id"] for r in records}) == PROCESSES * APPENDS
    texts = {r["data"]["text"] for r in records}
    assert texts == {f"{w}:{n}" for w in range(PROCESSES) for n in range(APPENDS)}
    reader = App.open(env)
    assert reader.store.event_count == PROCESSES * APPENDS
    assert len(recent(reader, limit=500)) == 500 and reader.tables().differing() == []
    assert reader.tables().query("SELECT count(*) FROM sessions_entries") == [(PROCESSES * APPENDS,)]
