"""What `doctor` sees in a store and its state, and what a first read of a big foreign log costs:
forged derived tables are found, a log that is a link is named, a conflict copy holding nothing new is
no problem, and a cold read folds only the views it reads."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from contextflow.adapters.cli import main
from contextflow.admin.diagnose import problems, store_info
from contextflow.app import App
from contextflow.core import segments as segments_module
from contextflow.sessions import core as sessions
from tests.hostile.helpers import line, now_stamp, plant


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_doctor_finds_nothing_wrong_with_honest_derived_tables(app):
    sessions.append_note(app, agent="me", text="hello", session_id="s1")
    app.close()
    info = store_info(App.open(), verify=True)
    assert info["verified"] == {"checked": True, "derived_tables_differing": []}


def test_a_cold_read_of_a_big_foreign_log_folds_only_the_views_it_reads(store_dir, capsys, monkeypatch):
    stamp = now_stamp()
    plant(store_dir, "events.foreign.jsonl", *(line(writer="foreign", seq=n, hlc=stamp + n) for n in range(1, 3001)))
    app = App.open()
    assert len(sessions.read_entries(app, sessions.EntryFilter("shared"), 5)) == 5
    assert not app.store.scanned
    app.close()

    shutil.rmtree(app.store.state_dir)  # cold again, now through the CLI at a terminal
    monkeypatch.setattr(segments_module, "PROGRESS_BYTES", 1024)
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)
    code, _, err = run(capsys, "read", "--limit", "1")
    assert code == 0 and "reading" in err and "events.foreign.jsonl" in err


def test_a_log_that_is_a_symbolic_link_is_named_by_doctor(app, store_dir, tmp_path):
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_bytes(line(writer="linked"))
    store_dir.mkdir(parents=True, exist_ok=True)
    os.symlink(elsewhere, store_dir / "events.linked.jsonl")
    info = store_info(app)
    assert [log["why"] for log in info["unread_logs"]] == ["a symbolic link"]
    assert any("events.linked.jsonl" in problem and "symbolic link" in problem for problem in problems(info))
    assert info["events"] == 0, "its events are not read"


def test_a_conflict_copy_holding_nothing_new_is_not_a_problem(app, store_dir, capsys):
    app.store.append("note", {"project": "shared", "text": "mine"})
    log = store_dir / "events.writer-a.jsonl"
    shutil.copy(log, store_dir / "events.writer-a.sync-conflict-20260101-120000-ABCDEFG.jsonl")
    _, out, _ = run(capsys, "doctor", "--format", "json")
    found = json.loads(out)["problems"]
    assert not any("sync-conflict" in problem for problem in found), found


def test_forged_derived_tables_are_found_by_doctor_and_deleted(app, capsys):
    sessions.write_handoff(app, agent="me", summary="the real handoff", session_id="s1")
    app.tables().query(
        "UPDATE sessions_entries SET summary = replace(summary, 'the real handoff', 'FORGED') WHERE kind = 'handoff'"
    )
    app.close()
    assert "FORGED" in run(capsys, "latest", "--session", "s1")[1], "the forged tables are what a reader gets"

    info = store_info(App.open(), verify=True)
    assert info["verified"]["derived_tables_differing"] == ["sessions_entries"]
    assert any("derived tables" in problem for problem in problems(info))
    code, out, _ = run(capsys, "latest", "--session", "s1")
    assert code == 0 and "the real handoff" in out and "FORGED" not in out
