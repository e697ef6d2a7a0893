"""The snapshot: a new process loads the folded views instead of refolding, one view at a time,
and never trusts it when the logs moved on in a way it cannot follow."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from contextflow.app import App
from contextflow.core import snapshot
from contextflow.core.compact import compact
from tests.conftest import open_app
from tests.sync.workload import differences, picture, write_round


def fresh_picture() -> dict[str, Any]:
    return picture(App.open(use_snapshot=False))


@pytest.fixture
def saved(app: App) -> App:
    for i in range(4):
        write_round(app, i)
    assert app.store.save_snapshot(force=True)
    return app


def test_a_new_process_loads_only_the_views_it_reads(saved):
    again = App.open()
    again.store.refresh()
    fold = again.store.fold
    assert set(fold.deferred) == {
        "sessions",
        "records",
        "timeline",
        "graph",
        "conversations",
        "activity",
    }  # search: on disk
    assert fold.seen_deferred
    again.store.view("records")
    assert "records" not in fold.deferred and "sessions" in fold.deferred
    assert differences(fresh_picture(), picture(again)) == []


def test_a_new_process_imports_only_the_views_it_reads(saved):
    code = (
        "import sys\nfrom contextflow.app import App\n"
        "app = App.open()\napp.store.view('sessions')\n"
        "print(sorted(m for m in sys.modules if m.endswith('.view') or m.startswith(('contextflow.search.', "
        "'contextflow.graph.', 'contextflow.operations'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "['contextflow.sessions.view']"


def test_a_view_whose_version_changed_is_refolded_when_read(saved, monkeypatch):
    from contextflow.timeline.view import TimelineView

    monkeypatch.setattr(TimelineView, "version", "2", raising=False)
    again = App.open()
    again.store.view("sessions")  # same version: loaded from the snapshot
    assert "timeline" in again.store.fold.deferred
    again.store.view("timeline")
    assert not again.store.from_snapshot  # refolded from the logs
    assert differences(fresh_picture(), picture(again)) == []


def test_events_another_writer_adds_after_the_snapshot_reach_views_loaded_later(saved):
    again = App.open()
    again.store.refresh()
    other = open_app("writer-b")
    write_round(other, 9)
    again.store.refresh()  # folded while every view is still deferred: kept as pending
    assert again.store.fold.pending("sessions") > 0
    assert differences(fresh_picture(), picture(again)) == []


def test_saving_again_copies_views_that_were_never_loaded(saved):
    again = App.open()
    again.store.view("records")
    assert again.store.save_snapshot(force=True)
    third = App.open()
    assert differences(fresh_picture(), picture(third)) == []


def test_a_broken_snapshot_refolds_instead_of_failing(saved, app):
    path = app.store._snapshot_path
    data = path.read_bytes()
    found = snapshot.read(path, app.store._snapshot_key())
    assert found is not None
    start = found[0].blobs["view:sessions"][0]
    found[1].close()
    path.write_bytes(data[:start] + b"\0" * 64 + data[start + 64 :])  # the header reads, the sessions blob not
    again = App.open()
    again.store.refresh()
    assert again.store.fold.deferred  # the header was accepted
    assert differences(fresh_picture(), picture(again)) == []
    path.write_bytes(data[: len(data) // 2])  # no header
    assert differences(fresh_picture(), picture(App.open())) == []
    path.write_bytes(b"not a snapshot")
    assert differences(fresh_picture(), picture(App.open())) == []


def test_a_blob_that_fails_to_load_refolds_on_first_read(saved, app, monkeypatch):
    again = App.open()
    again.store.refresh()

    def broken(name: str) -> Any:
        raise snapshot.SnapshotBroken("simulated")

    for name in list(again.store.fold.deferred):
        again.store.fold.deferred[name] = lambda name=name: broken(name)
    assert differences(fresh_picture(), picture(again)) == []


def test_a_snapshot_of_another_store_folder_is_not_used(saved, app, tmp_path, monkeypatch):
    other_store = tmp_path / "other-store"
    monkeypatch.setenv("CONTEXTFLOW_STORE", str(other_store))
    elsewhere = App.open()
    elsewhere.store._snapshot_path.parent.mkdir(parents=True, exist_ok=True)
    elsewhere.store._snapshot_path.write_bytes(app.store._snapshot_path.read_bytes())
    assert elsewhere.store.event_count == 0


def test_a_log_rewritten_by_compaction_on_another_machine_refolds(saved, app, store_dir: Path):
    other = open_app("writer-b")
    for i in range(5, 8):
        write_round(other, i)
    app.store.refresh()
    assert app.store.save_snapshot(force=True)
    assert compact(other.store, other.every_view()).changed
    again = App.open()
    assert differences(fresh_picture(), picture(again)) == []


def test_a_log_that_only_grew_is_read_from_the_saved_offset(saved, app, monkeypatch):
    from contextflow.core import store as store_module

    write_round(app, 7)
    again = App.open()
    starts: list[int] = []
    original = store_module.read_new

    def spy(path: Path, cursor: Any) -> Any:
        starts.append(0 if cursor is None else cursor.offset)
        return original(path, cursor)

    monkeypatch.setattr(store_module, "read_new", spy)
    again.store.refresh()
    assert starts and all(start > 0 for start in starts)
    assert differences(fresh_picture(), picture(again)) == []


def test_the_snapshot_file_is_replaced_atomically(saved, app):
    folder = app.store._snapshot_path.parent
    assert not [p for p in os.listdir(folder) if p.endswith(".tmp")]
    with open(app.store._snapshot_path, "rb") as handle:
        assert handle.read(len(snapshot.MAGIC)) == snapshot.MAGIC


def test_broken_seen_ids_refold_when_the_next_event_arrives(saved):
    again = App.open()
    again.store.refresh()

    def broken() -> set[str]:
        raise snapshot.SnapshotBroken("simulated")

    again.store.fold.defer_seen(broken)
    write_round(open_app("writer-b"), 3)
    again.store.refresh()
    assert not again.store.from_snapshot  # refolded from the logs
    assert differences(fresh_picture(), picture(again)) == []


def test_closing_does_not_load_a_view_nobody_read(saved):
    again = App.open()
    again.store.view("records")
    again.close()
    assert not again.store.view_loaded("sessions")
