"""The other two ways to carry the store: a git repository (logs merged with the union driver, as
docs/sync.md recommends) and one shared folder that several machines write directly (a NAS)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from contextflow.app import App
from tests.sync.test_syncthing import event_ids
from tests.sync.workload import differences, picture, write_round

GIT = shutil.which("git")
REPO = Path(__file__).resolve().parents[2]
GITATTRIBUTES = "events.*.jsonl merge=union\n"
GITIGNORE = "quarantine/\n.*.tmp\n"


def machine(folder: Path, writer: str, state: Path) -> App:
    chosen = {"CONTEXTFLOW_STORE": str(folder), "CONTEXTFLOW_WRITER": writer, "CONTEXTFLOW_STATE": str(state)}
    return App.open({**os.environ, **chosen})


def git(cwd: Path, *args: str) -> str:
    assert GIT is not None
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(cwd.parent),
    }
    done = subprocess.run([GIT, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr + done.stdout
    return done.stdout


def commit_all(cwd: Path, message: str) -> None:
    git(cwd, "add", "-A")
    git(cwd, "commit", "-q", "-m", message)


@pytest.mark.skipif(GIT is None, reason="git is not installed")
def test_two_clones_that_share_a_writer_id_merge_without_conflicts_or_loss(tmp_path: Path) -> None:
    origin, one, two = tmp_path / "origin.git", tmp_path / "one", tmp_path / "two"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    git(tmp_path, "clone", "-q", str(origin), str(one))
    (one / ".gitattributes").write_text(GITATTRIBUTES)
    (one / ".gitignore").write_text(GITIGNORE)
    first = machine(one, "laptop", tmp_path / "state-one")
    write_round(first, 0)
    commit_all(one, "start")
    git(one, "push", "-q", "origin", "HEAD")
    git(tmp_path, "clone", "-q", str(origin), str(two))
    # the mistake union merge guards against: a second clone writing as the same writer
    second = machine(two, "laptop", tmp_path / "state-two")
    other = machine(two, "desktop", tmp_path / "state-desk")
    for i in range(1, 4):
        write_round(first, i)
        write_round(second, i + 10)
        write_round(other, i + 20)
    commit_all(one, "one")
    commit_all(two, "two")
    git(two, "push", "-q", "origin", "HEAD")
    git(one, "pull", "-q", "--no-rebase", "--no-edit", "origin", "HEAD")
    assert "<<<<<<<" not in (one / "events.laptop.jsonl").read_text()
    expected = event_ids(one)
    assert expected >= event_ids(two)
    merged = App.open(
        {**os.environ, "CONTEXTFLOW_STORE": str(one), "CONTEXTFLOW_STATE": str(tmp_path / "fresh")}, shares_state=False
    )
    assert merged.store.event_count == len(expected)
    assert merged.store.health().bad_line_count == 0
    assert differences(picture(merged), picture(first)) == []  # the incremental reader converged too


@pytest.mark.slow
def test_two_machines_writing_one_shared_folder_directly_lose_nothing(tmp_path: Path) -> None:
    """A NAS share: both machines append to the same folder at once, each to its own file, with
    machine-local locks that do not see each other (separate state folders)."""
    folder = tmp_path / "nas-share"
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.sync.workload", "20"],
            cwd=REPO,
            stderr=subprocess.PIPE,
            env={
                **os.environ,
                "CONTEXTFLOW_STORE": str(folder),
                "CONTEXTFLOW_WRITER": writer,
                "CONTEXTFLOW_STATE": str(tmp_path / f"state-{writer}"),
            },
        )
        for writer in ("alpha", "beta")
    ]
    reader = machine(folder, "reader", tmp_path / "state-reader")
    while any(p.poll() is None for p in processes):
        reader.store.refresh()
    for process in processes:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err.decode()
    fresh = App.open(
        {**os.environ, "CONTEXTFLOW_STORE": str(folder), "CONTEXTFLOW_STATE": str(tmp_path / "fresh")},
        shares_state=False,
    )
    assert fresh.store.event_count == len(event_ids(folder))
    assert differences(picture(fresh), picture(reader)) == []
