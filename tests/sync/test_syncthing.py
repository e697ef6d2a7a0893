"""Two machines write one store folder carried by real Syncthing daemons (loopback only).

Both write every record kind at the same time under different writer ids while their
daemons sync; once the folders converge, nothing may be in conflict, every event must be on
both sides, and every view (and search) must be identical on both, whether folded
incrementally while syncing or fresh from the files.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from contextflow.app import App
from contextflow.events import decode
from tests.sync import harness
from tests.sync.workload import differences, picture

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not harness.available(),
        reason="syncthing is not installed (Debian: apt-get install syncthing); scripts/test installs it",
    ),
]

ROUNDS = 40
PAUSE_S = 0.1
WRITE_TIMEOUT_S = 180.0
CONVERGE_TIMEOUT_S = 120.0
REPO = Path(__file__).resolve().parents[2]


def side_env(folder: Path, state: Path, writer: str) -> dict[str, str]:
    chosen = {"CONTEXTFLOW_STORE": str(folder), "CONTEXTFLOW_STATE": str(state), "CONTEXTFLOW_WRITER": writer}
    return {**os.environ, **chosen}


def start_writer(folder: Path, state: Path, writer: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.sync.workload", str(ROUNDS), str(PAUSE_S)],
        cwd=REPO, env=side_env(folder, state, writer), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )


def event_ids(folder: Path) -> set[str]:
    found: set[str] = set()
    for path in folder.glob("events.*.jsonl"):
        found |= {decode(line).id for line in path.read_bytes().splitlines() if line.strip()}
    return found


def writers_seen(app: App) -> set[str]:
    return {segment.writer for segment in app.store.health().segments if segment.events}


def test_two_machines_writing_at_once_converge_without_conflicts_or_loss(tmp_path: Path) -> None:
    root = tmp_path / "sync"
    with harness.SyncthingPair(root) as pair:
        a_folder, b_folder = pair.a.folder, pair.b.folder
        reader_a = App.open(side_env(a_folder, tmp_path / "reader-a", "reader-a"))
        reader_b = App.open(side_env(b_folder, tmp_path / "reader-b", "reader-b"))
        writers = [
            start_writer(a_folder, tmp_path / "state-a", "alpha"),
            start_writer(b_folder, tmp_path / "state-b", "beta"),
        ]
        seen_while_writing: set[str] = set()
        try:
            deadline = time.monotonic() + WRITE_TIMEOUT_S
            while any(w.poll() is None for w in writers) and time.monotonic() < deadline:
                reader_a.store.refresh()  # fold incrementally while the daemons replace files
                reader_b.store.refresh()
                if all(w.poll() is None for w in writers):
                    seen_while_writing |= {f"a:{w}" for w in writers_seen(reader_a)}
                    seen_while_writing |= {f"b:{w}" for w in writers_seen(reader_b)}
                time.sleep(0.2)
        finally:
            for writer in writers:
                if writer.poll() is None:
                    writer.kill()
                _, err = writer.communicate(timeout=30)
                assert writer.returncode == 0, err.decode()

        digest = pair.wait_converged(CONVERGE_TIMEOUT_S)

    # each side received the other's log while both were still writing
    assert {"a:beta", "b:alpha"} <= seen_while_writing
    conflicts = [name for name in digest if ".sync-conflict-" in name]
    assert conflicts == []
    assert sorted(name for name in digest if name.startswith("events.")) == ["events.alpha.jsonl", "events.beta.jsonl"]
    ids = event_ids(a_folder)
    assert ids == event_ids(b_folder)
    assert len(ids) > 2 * ROUNDS * 5

    fresh_a = App.open(side_env(a_folder, tmp_path / "fresh-a", "fresh-a"), use_snapshot=False)
    fresh_b = App.open(side_env(b_folder, tmp_path / "fresh-b", "fresh-b"), use_snapshot=False)
    pictures = {name: picture(app) for name, app in
                (("reader-a", reader_a), ("reader-b", reader_b), ("fresh-a", fresh_a), ("fresh-b", fresh_b))}
    for app in (reader_a, reader_b, fresh_a, fresh_b):
        assert app.store.event_count == len(ids)
        assert app.store.health().bad_line_count == 0
    reference = pictures["fresh-a"]
    for name, seen in pictures.items():
        assert differences(reference, seen) == [], f"{name} differs from fresh-a"
    assert len(reference["search"]["release"]) > 0
    for app in (reader_a, reader_b, fresh_a, fresh_b):
        app.close()
