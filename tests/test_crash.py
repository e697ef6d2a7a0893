"""A writer killed mid-append, and a torn last line, lose no acknowledged event."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from contextflow.sessions.core import EntryFilter, append_note, read_entries
from tests.conftest import open_app

WRITER_SCRIPT = """
import sys
from contextflow.app import App
from contextflow.sessions.core import append_note
app = App.open()
n = 0
while True:
    append_note(app, agent="doomed", text=f"ack {n}", session_id="crash")
    print(n, flush=True)  # acknowledged only after the append returned
    n += 1
"""


def test_a_killed_writer_loses_no_acknowledged_event_and_the_next_append_works(store_dir: Path):
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER_SCRIPT], stdout=subprocess.PIPE, text=True, env=dict(os.environ)
    )
    assert process.stdout is not None
    acknowledged = []
    deadline = time.monotonic() + 30
    while len(acknowledged) < 50 and time.monotonic() < deadline:
        acknowledged.append(int(process.stdout.readline()))
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    process.stdout.close()
    log = store_dir / "events.writer-a.jsonl"
    with open(log, "ab") as handle:  # and, as if the kill had torn a line:
        handle.write(b'{"v":1,"id":"half-writ')
    survivor = open_app("writer-a")
    append_note(survivor, agent="next", text="after the crash", session_id="crash")
    texts = [e.data["text"] for e in read_entries(survivor, EntryFilter("shared", session_id="crash"), 200)]
    assert {f"ack {n}" for n in acknowledged} <= set(texts)
    assert texts[-1] == "after the crash"
    assert survivor.store.health().bad_line_count == 0
    fragments = list((store_dir / "quarantine").iterdir())
    assert len(fragments) == 1 and fragments[0].read_bytes() == b'{"v":1,"id":"half-writ'
    assert log.read_bytes().endswith(b"\n")
