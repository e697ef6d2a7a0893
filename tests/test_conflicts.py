"""Sync-conflict copies: their records are read once each and never lost; `doctor` reports them and
a writer id used by two machines; `doctor --fix` folds them into this writer's log and removes a
copy only after verifying every event in it is present."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest

from contextflow.adapters.cli import main
from contextflow.app import App
from contextflow.core import conflicts
from contextflow.core.log import read_whole
from tests.conftest import open_app
from tests.folding import view_of
from tests.sync.workload import picture, write_round

COPY_SUFFIX = ".sync-conflict-20260101-101010-YYYYYYY.jsonl"


def machine(folder: Path, writer: str, state: Path) -> App:
    return App.open(
        {**os.environ, "CONTEXTFLOW_STORE": str(folder), "CONTEXTFLOW_WRITER": writer, "CONTEXTFLOW_STATE": str(state)}
    )


def ids_in(path: Path) -> list[str]:
    return [orjson.loads(line)["id"] for _, line in read_whole(path)[1]]  # the reader's lines: no batch markers


@pytest.fixture
def cloned(tmp_path: Path, store_dir: Path) -> tuple[Path, set[str]]:
    """Two machines that both call themselves `laptop` wrote apart; Syncthing kept one file and
    renamed the other to a conflict copy in this store. Returns (copy path, every event id)."""
    other = tmp_path / "other-machine"
    here = machine(store_dir, "laptop", tmp_path / "state")
    there = machine(other, "laptop", tmp_path / "other-state")
    for i in range(4):
        write_round(here, i)
        write_round(there, i + 10)
    every = set(ids_in(store_dir / "events.laptop.jsonl")) | set(ids_in(other / "events.laptop.jsonl"))
    here.close()
    there.close()
    copy = store_dir / f"events.laptop{COPY_SUFFIX}"
    shutil.copyfile(other / "events.laptop.jsonl", copy)
    return copy, every


def doctor(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    code = main(["doctor", "--format", "json", *args])
    shown = orjson.loads(capsys.readouterr().out)
    assert isinstance(shown, dict)
    assert code == (1 if shown["problems"] else 0)  # exit 1: problems found
    return shown


def test_records_in_a_conflict_copy_are_read_once_each_and_never_lost(cloned, app):
    copy, every = cloned
    assert app.store.event_count == len(every)
    copied_note = orjson.loads(copy.read_bytes().splitlines()[0])
    entries = view_of(app.store, "sessions").project_entries(None)
    assert copied_note["id"] in {event.id for event in entries}


def test_the_same_event_in_a_log_and_its_copy_applies_once(app, store_dir: Path):
    app.store.append("note", {"text": "once", "session_id": "s"})
    shutil.copyfile(store_dir / "events.writer-a.jsonl", store_dir / f"events.writer-a{COPY_SUFFIX}")
    fresh = open_app("writer-a")
    assert fresh.store.event_count == 1
    assert fresh.store.duplicates == 1
    assert len(view_of(fresh.store, "sessions").project_entries(None)) == 1


def test_doctor_reports_the_copy_and_the_writer_id_two_machines_share(cloned, capsys):
    shown = doctor(capsys)
    text = " ".join(str(problem) for problem in shown["problems"])  # type: ignore[union-attr]
    assert "exist only in sync-conflict copies" in text and "doctor --fix" in text
    assert "writer id laptop" in text and "more than one machine" in text
    assert [log["conflict_copy"] for log in shown["logs"]].count(True) == 1  # type: ignore[union-attr]


def test_doctor_fix_folds_the_copy_into_this_writers_log_and_removes_it(cloned, store_dir, capsys, monkeypatch):
    monkeypatch.setenv("CONTEXTFLOW_WRITER", "laptop")
    copy, every = cloned
    before = picture(App.open())
    shown = doctor(capsys, "--fix")
    fix = shown["fix"]
    assert isinstance(fix, dict)
    assert fix["removed"] == [str(copy)] and fix["kept"] == {}
    assert not copy.exists()
    assert set(ids_in(store_dir / "events.laptop.jsonl")) == every
    after = App.open(shares_state=False)
    assert after.store.event_count == len(every)
    assert picture(after) == before
    again = doctor(capsys, "--fix")
    assert again["fix"] == {"folded_events": 0, "removed": [], "kept": {}}
    assert not any("sync-conflict" in str(problem) for problem in again["problems"])  # type: ignore[union-attr]


def test_folded_lines_keep_their_id_writer_sequence_and_clock(cloned, store_dir, monkeypatch):
    monkeypatch.setenv("CONTEXTFLOW_WRITER", "laptop")
    copy, _ = cloned
    original = {orjson.loads(line)["id"]: line for line in copy.read_bytes().splitlines()}
    app = App.open()
    conflicts.fix(app.store)
    app.close()
    folded = {orjson.loads(line)["id"]: line for line in (store_dir / "events.laptop.jsonl").read_bytes().splitlines()}
    assert all(folded[event_id] == line for event_id, line in original.items())


def test_a_hand_copied_log_of_another_writer_is_folded_with_its_writer_kept(app, store_dir: Path, tmp_path: Path):
    other = machine(tmp_path / "elsewhere", "desktop", tmp_path / "desktop-state")
    note = other.store.append("note", {"text": "only on the desktop", "session_id": "s"})
    store_dir.mkdir(mode=0o700)
    shutil.copyfile(tmp_path / "elsewhere" / "events.desktop.jsonl", store_dir / f"events.desktop{COPY_SUFFIX}")
    report = conflicts.fix(app.store)
    assert report.folded_events == 1 and len(report.removed) == 1
    line = orjson.loads(read_whole(store_dir / "events.writer-a.jsonl")[1][-1][1])  # (batch lines left out)
    assert (line["id"], line["w"]) == (note.id, "desktop")
    assert note.id in {event.id for event in view_of(app.store, "sessions").project_entries(None)}


def test_a_copy_whose_events_are_all_elsewhere_is_removed_without_appending(app, store_dir: Path):
    app.store.append("note", {"text": "already here", "session_id": "s"})
    own = store_dir / "events.writer-a.jsonl"
    shutil.copyfile(own, store_dir / f"events.writer-a{COPY_SUFFIX}")
    size = own.stat().st_size
    report = conflicts.fix(app.store)
    assert (report.folded_events, len(report.removed)) == (0, 1)
    assert own.stat().st_size == size


def test_a_copy_with_an_unreadable_line_is_kept_and_its_good_events_still_folded(app, store_dir: Path, capsys):
    other = open_app("desktop")
    note = other.store.append("note", {"text": "keep me", "session_id": "s"})
    copy = store_dir / f"events.desktop{COPY_SUFFIX}"
    copy.write_bytes((store_dir / "events.desktop.jsonl").read_bytes() + b"{not json\n")
    (store_dir / "events.desktop.jsonl").unlink()
    report = conflicts.fix(app.store)
    assert report.removed == [] and "unreadable" in report.kept[str(copy)]
    assert copy.exists()
    assert note.id in ids_in(store_dir / "events.writer-a.jsonl")


def test_a_copy_with_a_torn_last_line_is_kept(app, store_dir: Path):
    app.store.append("note", {"text": "whole", "session_id": "s"})
    copy = store_dir / f"events.writer-a{COPY_SUFFIX}"
    copy.write_bytes((store_dir / "events.writer-a.jsonl").read_bytes() + b'{"v": 1, "id": "torn')
    report = conflicts.fix(app.store)
    assert str(copy) in report.kept and copy.exists()


def test_doctor_fix_without_copies_changes_nothing(app, store_dir: Path, capsys):
    app.store.append("note", {"text": "alone", "session_id": "s"})
    before = (store_dir / "events.writer-a.jsonl").read_bytes()
    shown = doctor(capsys, "--fix")
    assert shown["fix"] == {"folded_events": 0, "removed": [], "kept": {}}
    assert (store_dir / "events.writer-a.jsonl").read_bytes() == before


def test_doctor_fix_in_text_says_what_it_did(cloned, capsys, monkeypatch):
    monkeypatch.setenv("CONTEXTFLOW_WRITER", "laptop")
    code = main(["doctor", "--fix"])
    out = capsys.readouterr().out
    assert code == (0 if "problems:     none" in out else 1)
    assert "fix:" in out and "removed" in out


def test_doctor_with_an_unknown_option_fails_with_usage(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["doctor", "--fixx"])
    assert exited.value.code == 2
    assert "unrecognized arguments" in capsys.readouterr().err


def test_the_remover_refuses_anything_but_a_conflict_copy(app, store_dir: Path):
    from contextflow.core.errors import StoreError
    from contextflow.core.log import remove_conflict_copy

    app.store.append("note", {"text": "precious", "session_id": "s"})
    with pytest.raises(StoreError, match="not a sync-conflict copy"):
        remove_conflict_copy(store_dir / "events.writer-a.jsonl")
    assert (store_dir / "events.writer-a.jsonl").exists()
