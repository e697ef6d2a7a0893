"""Two machines write one store folder carried by real Syncthing daemons (loopback only).

Both write every record kind at the same time under different writer ids while their
daemons sync; once the folders converge, nothing may be in conflict, every event must be on
both sides, and every view (and search) must be identical on both, whether folded
incrementally while syncing or fresh from the files.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from contextflow.app import App
from contextflow.core.events import decode
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
        cwd=REPO,
        env=side_env(folder, state, writer),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def event_ids(folder: Path) -> set[str]:
    found: set[str] = set()
    for path in folder.glob("events.*.jsonl"):
        found |= {decode(line).id for line in path.read_bytes().splitlines() if line.strip()}
    return found


def writers_seen(app: App) -> set[str]:
    return {segment.writer for segment in app.store.health().segments if segment.events}


def run_until_done(processes: list[subprocess.Popen[bytes]], readers: dict[str, App]) -> set[str]:
    """Wait for the processes while the readers fold incrementally; return "side:writer" seen meanwhile."""
    seen: set[str] = set()
    try:
        deadline = time.monotonic() + WRITE_TIMEOUT_S
        while any(p.poll() is None for p in processes) and time.monotonic() < deadline:
            for side, reader in readers.items():
                reader.store.refresh()  # fold incrementally while the daemons replace files
                if all(p.poll() is None for p in processes):
                    seen |= {f"{side}:{w}" for w in writers_seen(reader)}
            time.sleep(0.2)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
            _, err = process.communicate(timeout=30)
            assert process.returncode == 0, err.decode()
    return seen


def assert_same_everywhere(tmp_path: Path, folders: dict[str, Path], readers: dict[str, App]) -> dict[str, object]:
    """No conflict copies, the same events on both sides, and equal views incrementally and fresh."""
    for folder in folders.values():
        assert not list(folder.glob("*.sync-conflict-*"))
        assert sorted(p.name for p in folder.glob("events.*")) == ["events.alpha.jsonl", "events.beta.jsonl"]
    ids = event_ids(folders["a"])
    assert ids == event_ids(folders["b"])
    apps = dict(readers)
    for side, folder in folders.items():
        apps[f"fresh-{side}"] = App.open(
            side_env(folder, tmp_path / f"fresh-{side}-{time.time_ns()}", "f"), shares_state=False
        )
    pictures = {name: picture(app) for name, app in apps.items()}
    for app in apps.values():
        assert app.store.event_count == len(ids)
        assert app.store.health().bad_line_count == 0
    reference = pictures["fresh-a"]
    for name, seen in pictures.items():
        assert differences(reference, seen) == [], f"{name} differs from fresh-a"
    return reference


def open_readers(tmp_path: Path, folders: dict[str, Path]) -> dict[str, App]:
    return {side: App.open(side_env(folder, tmp_path / f"reader-{side}", "r")) for side, folder in folders.items()}


def test_two_machines_writing_at_once_converge_without_conflicts_or_loss(tmp_path: Path) -> None:
    with harness.SyncthingPair(tmp_path / "sync") as pair:
        folders = {"a": pair.a.folder, "b": pair.b.folder}
        readers = open_readers(tmp_path, folders)
        seen = run_until_done(
            [
                start_writer(folders["a"], tmp_path / "state-a", "alpha"),
                start_writer(folders["b"], tmp_path / "state-b", "beta"),
            ],
            readers,
        )
        pair.wait_converged(CONVERGE_TIMEOUT_S)
    assert {"a:beta", "b:alpha"} <= seen  # each side received the other's log while both were writing
    reference = assert_same_everywhere(tmp_path, folders, readers)
    assert len(event_ids(folders["a"])) > 2 * ROUNDS * 5
    assert len(reference["search"]["release"]) > 0  # type: ignore[index]


def test_compacting_on_one_machine_while_the_other_writes_converges_with_nothing_lost(tmp_path: Path) -> None:
    with harness.SyncthingPair(tmp_path / "sync") as pair:
        folders = {"a": pair.a.folder, "b": pair.b.folder}
        readers = open_readers(tmp_path, folders)
        run_until_done(
            [
                start_writer(folders["a"], tmp_path / "state-a", "alpha"),
                start_writer(folders["b"], tmp_path / "state-b", "beta"),
            ],
            readers,
        )
        pair.wait_converged(CONVERGE_TIMEOUT_S)
        for reader in readers.values():
            reader.store.refresh()  # both sides have read alpha's whole uncompacted log
        old_alpha = (folders["a"] / "events.alpha.jsonl").read_bytes()

        compactor = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "contextflow",
                "compact",
                "--format",
                "json",
                "--archive-dir",
                str(tmp_path / "archive"),
            ],
            cwd=REPO,
            env=side_env(folders["a"], tmp_path / "state-a", "alpha"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        run_until_done([compactor, start_writer(folders["b"], tmp_path / "state-b", "beta")], readers)
        pair.wait_converged(CONVERGE_TIMEOUT_S)

    new_alpha = (folders["b"] / "events.alpha.jsonl").read_bytes()
    assert len(new_alpha) < len(old_alpha)  # the compacted generation reached the other machine
    assert [gzip.decompress(p.read_bytes()) for p in (tmp_path / "archive").iterdir()] == [old_alpha]
    seen = assert_same_everywhere(tmp_path, folders, readers)
    uncompacted = tmp_path / "uncompacted"
    uncompacted.mkdir(mode=0o700)
    (uncompacted / "events.alpha.jsonl").write_bytes(old_alpha)
    (uncompacted / "events.beta.jsonl").write_bytes((folders["a"] / "events.beta.jsonl").read_bytes())
    expected = picture(App.open(side_env(uncompacted, tmp_path / "uncompacted-state", "u"), shares_state=False))
    assert differences(expected, seen) == []
