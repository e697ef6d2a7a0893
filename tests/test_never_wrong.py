"""Never a wrong answer: while the derived state is being built, locked by another process or damaged,
a read answers completely (from the logs) or says plainly what it could not read; "not found" never comes
from an unfinished build, a lock or a damaged file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from contextflow.app import App
from contextflow.core import projections
from contextflow.core.errors import NotFoundError
from contextflow.search import derived, retrieval
from contextflow.sessions import present as sessions
from tests.conftest import open_app
from tests.test_own_writes_while_building import building_elsewhere


def refs(app: App, query: str) -> list[str]:
    return [shown.hit.doc.ref for shown in retrieval.get_context(app, query=query).shown]


def stock(app: App) -> None:
    app.store.append("note", {"project": "web", "text": "the websocket reconnect drops queued messages"})
    app.store.append("note", {"project": "api", "text": "token refresh retries once before failing"})


@pytest.mark.parametrize("name", ["meta.json", "views.sqlite3", "segments"])
def test_a_deleted_file_of_the_search_index_never_hides_results(app, name):
    stock(app)
    assert len(refs(app, "websocket")) == 1
    search = derived.search_for(app.store)
    folder = search.index_folder()
    if name == "meta.json":
        (folder / "meta.json").unlink()
    elif name == "views.sqlite3":  # (where its read positions are)
        for suffix in ("", "-wal", "-shm"):
            (app.store.state_dir / f"views.sqlite3{suffix}").unlink(missing_ok=True)
    else:
        for path in folder.iterdir():
            if path.suffix in (".idx", ".store", ".term"):
                path.unlink()
    for reader in (App.open(), app):
        assert len(refs(reader, "websocket")) == 1


def test_doctor_names_a_damaged_search_index_and_fix_rebuilds_it(capsys, app):
    import json

    from contextflow.adapters.cli import main

    stock(app)
    assert refs(app, "websocket")
    (derived.search_for(app.store).index_folder() / "meta.json").unlink()
    main(["doctor", "--quick", "--format", "json"])
    info = json.loads(capsys.readouterr().out)
    assert info["derived"]["damaged"] and any("search index is damaged" in p for p in info["problems"])
    main(["doctor", "--quick", "--fix", "--format", "json"])
    capsys.readouterr()
    main(["doctor", "--quick", "--format", "json"])
    info = json.loads(capsys.readouterr().out)
    assert info["derived"]["damaged"] is None and not any("search index" in p for p in info["problems"])
    assert len(refs(App.open(), "websocket")) == 1


# -- a build under way, a lock held ------------------------------------------------------------


def folded_sessions(app: App) -> bool:
    """Whether this process read every log (a write reads only its own log's end)."""
    return app.store.scanned


def other_machine_writes(count: int, state: Path) -> None:
    """Another machine's log arrives (a sync): `count` notes and a handoff of session s1."""
    other = open_app("writer-b", CONTEXTFLOW_STATE=str(state))
    try:
        base = {"agent": "codex", "project": "shared", "session_id": "s1"}
        for n in range(count):
            sessions.append_shared_note(other, {**base, "text": f"synced note {n}"})
        sessions.write_shared_handoff(other, {**base, "task": "the synced task", "summary": "synced summary"})
    finally:
        other.close()


def test_a_read_during_an_unfinished_build_answers_completely(
    app: App, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sessions.append_shared_note(app, {"agent": "claude", "project": "shared", "session_id": "s0", "text": "earlier"})
    assert "s0" in sessions.list_sessions(app, {"project": "shared"}).text  # the tables hold it
    building_elsewhere(monkeypatch)  # another process builds what arrives next; it has not reached it yet
    other_machine_writes(12, tmp_path / "elsewhere")
    assert app.tables().update() == -1 and not app.tables().serves(("sessions",))
    resumed = sessions.resume_session(app, {"project": "shared", "session_id": "s1"})
    assert "the synced task" in resumed.text and "synced note 0" in resumed.text
    assert len(resumed.data["entries"]) == 13
    assert "s1" in sessions.list_sessions(app, {"project": "shared"}).text
    assert "the synced task" in sessions.get_latest_handoff(app, {"project": "shared", "session_id": "s1"}).text
    projects = sessions.list_projects(app, {}).data  # what the page's overview shows under "Building…"
    assert [(p["name"], p["entries"]) for p in projects["projects"]] == [("shared", 14)]
    assert not folded_sessions(app)  # the tables as built and the logs' remaining bytes: no fold of every log


def test_a_handoff_written_while_another_process_locks_the_tables_is_the_one_shown(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = projections.Txn.__init__
    monkeypatch.setattr(projections.Txn, "__init__", lambda self, db, wait: real(self, db, min(wait, 0.05)))
    base = {"agent": "claude", "project": "p", "session_id": "s-lock"}
    sessions.write_shared_handoff(app, {**base, "task": "the previous task", "summary": "before"})
    assert "the previous task" in sessions.get_latest_handoff(app, {"project": "p"}).text
    holder = sqlite3.connect(app.tables().path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process holds the write lock (past the reader's wait)
    try:
        sessions.write_shared_handoff(app, {**base, "task": "the task just written", "summary": "after"})
        shown = sessions.get_latest_handoff(app, {"project": "p"}).text
        assert "the task just written" in shown and "the previous task" not in shown
        assert "the task just written" in sessions.resume_session(app, dict(base)).text
        assert not folded_sessions(app)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


@pytest.mark.parametrize("damage", ["garbage", "truncated", "deleted"])
def test_a_damaged_views_database_never_hides_a_session(damage: str) -> None:
    first = App.open()
    base = {"agent": "claude", "project": "p", "session_id": "s-kept"}
    sessions.write_shared_handoff(first, {**base, "task": "the kept task", "summary": "kept"})
    assert "s-kept" in sessions.list_sessions(first, {"project": "p"}).text
    path = first.tables().path
    first.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    if damage == "garbage":
        path.write_bytes(b"\0not a database" * 100)
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:1500])
    else:
        path.unlink()
    again = App.open()
    try:
        assert "s-kept" in sessions.list_sessions(again, {"project": "p"}).text
        assert "the kept task" in sessions.get_latest_handoff(again, {"project": "p"}).text
    finally:
        again.close()


def test_a_record_another_machine_wrote_is_found_while_the_build_has_not_reached_it(
    app: App, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from contextflow.records import core as records

    records.set_record(app, key="fact:mine", value={"here": 1})
    assert records.get_record(app, key="fact:mine").data["value"] == {"here": 1}  # the tables hold it
    building_elsewhere(monkeypatch)
    other = open_app("writer-b", CONTEXTFLOW_STATE=str(tmp_path / "elsewhere"))
    try:
        records.set_record(other, key="fact:synced", value={"there": 2})
    finally:
        other.close()
    assert app.tables().update() == -1 and not app.tables().current()
    assert records.get_record(app, key="fact:synced").data["value"] == {"there": 2}
    assert records.get_record(app, key="fact:mine").data["value"] == {"here": 1}


def test_the_session_start_under_a_held_lock_shows_the_newest_handoff_from_the_logs_rest_and_is_whole(
    app: App, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io
    import json

    from contextflow.adapters.cli import main
    from contextflow.adapters.session_start import PARTIAL_NOTE

    real = projections.Txn.__init__
    monkeypatch.setattr(projections.Txn, "__init__", lambda self, db, wait: real(self, db, min(wait, 0.05)))
    monkeypatch.setenv("MCP_SHARED_CONTEXT_PROJECT", "shared")
    base = {"agent": "claude", "project": "shared", "session_id": "s-lock"}
    sessions.write_shared_handoff(app, {**base, "task": "the previous task", "summary": "before"})
    holder = sqlite3.connect(app.tables().path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        sessions.write_shared_handoff(app, {**base, "task": "the task just written", "summary": "after"})
        start = {"session_id": "s-next", "cwd": str(Path.cwd()), "hook_event_name": "SessionStart"}
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(start).encode())))
        assert main(["hook", "session-start"]) == 0
        context = json.loads(capsys.readouterr().out)["hookSpecificOutput"]["additionalContext"]
        assert "the task just written" in context
        assert PARTIAL_NOTE not in context  # (the rest of the logs was read whole: nothing is missing)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


# -- captured turns, the feed and the timeline during a build or a lock ----------------------------


def other_machine_captures(state: Path) -> None:
    """Another machine's captured turns of session s-cap arrive (a sync), one of them linking a handoff."""
    other = open_app("writer-b", CONTEXTFLOW_STATE=str(state))
    try:
        base = {"agent": "codex", "project": "shared", "session_id": "s-cap"}
        for n in range(3):
            turn = {"request": f"synced request {n}", "final": f"synced final {n}", "files": {"edited": ["a.py"]}}
            other.store.append("capture.turn", {**base, "turn_id": f"synced-{n}", "turn": turn})
    finally:
        other.close()


def test_captured_turns_another_machine_wrote_are_read_while_the_build_has_not_reached_them(
    app: App, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from contextflow.capture.stored import known_turns, turns

    base = {"agent": "claude", "project": "shared", "session_id": "s-here"}
    app.store.append("capture.turn", {**base, "turn_id": "mine", "turn": {"request": "mine", "final": "done"}})
    assert len(turns(app, "shared").session("s-here")) == 1  # the tables hold it
    building_elsewhere(monkeypatch)
    other_machine_captures(tmp_path / "elsewhere")
    assert app.tables().update() == -1 and not app.tables().serves(("capture",))
    captured = turns(app, "shared")
    assert len(captured.session("s-cap")) == 3 and captured.holding(["s-cap", "s-here"]) == {"s-cap", "s-here"}
    latest = captured.latest_work()
    assert latest is not None and latest[0] == "s-cap"
    known = known_turns(app)
    assert "synced-0" in known and "mine" in known


def test_captured_turns_written_under_a_held_lock_are_read(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    from contextflow.capture.stored import turns

    real = projections.Txn.__init__
    monkeypatch.setattr(projections.Txn, "__init__", lambda self, db, wait: real(self, db, min(wait, 0.05)))
    base = {"agent": "claude", "project": "p", "session_id": "s-lock"}
    app.store.append("capture.turn", {**base, "turn_id": "one", "turn": {"request": "one", "final": "done"}})
    assert len(turns(app, "p").session("s-lock")) == 1
    holder = sqlite3.connect(app.tables().path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        app.store.append("capture.turn", {**base, "turn_id": "two", "turn": {"request": "two", "final": "done"}})
        assert len(turns(app, "p").session("s-lock")) == 2
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_the_feed_during_an_unfinished_build_reads_what_the_build_has_not_reached(
    app: App, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from contextflow.feed import present as feed

    sessions.append_shared_note(app, {"agent": "claude", "project": "shared", "session_id": "s0", "text": "earlier"})
    shown = feed.recent_activity(app, {"project": "shared"})
    assert "earlier" in shown.text and "partial" not in shown.data
    building_elsewhere(monkeypatch)
    other_machine_writes(3, tmp_path / "elsewhere")
    assert app.tables().update() == -1 and not app.tables().serves(("feed",))
    shown = feed.recent_activity(app, {"project": "shared"})
    assert "synced note 0" in shown.text and "the synced task" in shown.text and "earlier" in shown.text
    assert len(shown.data["items"]) == 5 and "partial" not in shown.data
    assert "codex" in shown.data["facets"]["agents"]
    codex = feed.recent_activity(app, {"project": "shared", "agent": "codex", "limit": 2})
    assert [item["text"] for item in codex.data["items"]] == ["the synced task - synced summary", "synced note 2"]
    older = feed.recent_activity(app, {"project": "shared", "agent": "codex", "before": codex.data["items"][-1]["id"]})
    assert [item["text"] for item in older.data["items"]] == ["synced note 1", "synced note 0"]


def test_the_feed_says_it_is_partial_and_how_far_the_build_is_when_too_much_remains_to_read(
    app: App, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from contextflow.core import rest
    from contextflow.feed import present as feed

    sessions.append_shared_note(app, {"agent": "claude", "project": "shared", "session_id": "s0", "text": "earlier"})
    assert "earlier" in feed.recent_activity(app, {"project": "shared"}).text
    building_elsewhere(monkeypatch)
    monkeypatch.setattr(rest, "REST_BYTES", 10)  # a new machine's backlog: too much to read per call
    monkeypatch.setattr(rest, "TAIL_BYTES", 10)  # the logs' newest bytes only: hardly a line
    other_machine_writes(3, tmp_path / "elsewhere")
    shown = feed.recent_activity(app, {"project": "shared", "agent": "codex"})
    partial = shown.data["partial"]
    assert 0 < partial["built_bytes"] < partial["log_bytes"]
    assert shown.text.startswith("PARTIAL: this machine is still reading the store's logs into its local tables (")
    assert "% of 0.0 MB indexed" in shown.text
    assert "); items not read yet are missing below; ask again shortly.\n\n" in shown.text
    assert "nothing matches in what is read so far" in shown.text


def test_the_feed_under_a_held_lock_shows_what_was_written_meanwhile(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    from contextflow.feed import present as feed

    real = projections.Txn.__init__
    monkeypatch.setattr(projections.Txn, "__init__", lambda self, db, wait: real(self, db, min(wait, 0.05)))
    sessions.append_shared_note(app, {"agent": "claude", "project": "p", "text": "before the lock"})
    assert "before the lock" in feed.recent_activity(app, {"project": "p"}).text
    holder = sqlite3.connect(app.tables().path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        sessions.append_shared_note(app, {"agent": "claude", "project": "p", "text": "under the lock"})
        shown = feed.recent_activity(app, {"project": "p"})
        assert "under the lock" in shown.text and "before the lock" in shown.text and "partial" not in shown.data
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_timeline_thread_another_machine_wrote_is_listed_while_the_build_has_not_reached_it(
    app: App, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from contextflow.timeline import core as timeline

    timeline.create_thread(app, name="mine")
    assert [w.thread.name for w in timeline.threads_here(app)] == ["mine"]
    building_elsewhere(monkeypatch)
    other = open_app("writer-b", CONTEXTFLOW_STATE=str(tmp_path / "elsewhere"))
    try:
        timeline.create_thread(other, name="synced")
    finally:
        other.close()
    assert app.tables().update() == -1 and not app.tables().serves(("timeline",))
    assert sorted(w.thread.name for w in timeline.threads_here(app)) == ["mine", "synced"]
    assert timeline.thread_count(app, "active") == 2


def test_a_turn_captured_again_on_another_machine_is_listed_once_while_the_build_has_not_reached_it(
    app: App, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from contextflow.feed import present as feed

    turn = {"agent": "claude", "project": "shared", "session_id": "s", "turn_id": "t1", "turn": {"request": "fix it"}}
    app.store.append("capture.turn", turn)
    assert len(feed.recent_activity(app, {"project": "shared"}).data["items"]) == 1
    building_elsewhere(monkeypatch)
    other = open_app("writer-b", CONTEXTFLOW_STATE=str(tmp_path / "elsewhere"))
    try:
        other.store.append("capture.turn", turn)  # the same turn, read again from its transcript
        other.store.append("capture.turn", {**turn, "turn_id": "t2", "turn": {"request": "then this"}})
    finally:
        other.close()
    assert not app.tables().serves(("feed",))
    items = feed.recent_activity(app, {"project": "shared"}).data["items"]
    assert [(item["machine"], item["text"]) for item in items] == [("writer-b", "then this"), ("writer-a", "fix it")]


def test_sessions_read_during_a_build_say_what_the_fold_of_every_log_says(
    app: App, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from contextflow.sessions import stored

    base = {"agent": "claude", "project": "shared", "session_id": "s1"}
    sessions.append_shared_note(app, {**base, "text": "built note"})
    app.store.append("handoff", {**base, "summary": "[automatic handoff] built", "auto": True})
    sessions.write_shared_handoff(app, {**base, "task": "built task", "summary": "built"})
    marked = app.store.append("handoff", {**base, "project": "other", "summary": "to be marked"})
    assert "s1" in sessions.list_sessions(app, {"project": "shared"}).text  # the tables hold these
    building_elsewhere(monkeypatch)
    other_machine_writes(2, tmp_path / "elsewhere")  # more of s1: notes and a handoff with a task
    other = open_app("writer-b", CONTEXTFLOW_STATE=str(tmp_path / "elsewhere"))
    try:
        other.store.append("handoff", {**base, "summary": "[automatic handoff] newer", "auto": True})
        other.store.append("note", {**base, "session_id": "s2", "agent": "codex", "text": "a new session"})
        sessions.mark_handoff_wrong(other, {"handoff_id": marked.id, "agent": "codex", "reason": "not so"})
    finally:
        other.close()
    assert not app.tables().serves(("sessions",))

    def answers(reader: App) -> list[object]:
        shown: list[object] = []
        for project in ("shared", "other"):
            shown.append(sessions.list_sessions(reader, {"project": project}).data)
            try:
                shown.append(sessions.get_latest_handoff(reader, {"project": project}).text)
            except NotFoundError as missing:  # none among what a partial read reached: never "none"
                shown.append(str(missing))
        for sid in ("s1", "s2"):
            shown.append(sessions.resume_session(reader, {"project": "shared", "session_id": sid}).data)
        shown.append(sessions.list_projects(reader, {}).data)
        return shown

    from contextflow.core import rest

    built: list[object] = []
    monkeypatch.setattr(rest, "build", lambda *args, real=rest.build: built.append(real(*args)) or built[-1])
    first = answers(app)
    sessions.append_shared_note(app, {**base, "text": "after the first read"})  # rows added ahead of the build
    app.store.append("handoff", {**base, "summary": "[automatic handoff] newest", "auto": True})
    merged = answers(app)  # the overlay extended by the new bytes
    assert "after the first read" in str(merged) and "after the first read" not in str(first)
    assert stored.current(app) and not folded_sessions(app) and len(built) == 1  # built once, then extended
    monkeypatch.setattr(
        rest, "REST_BYTES", 0
    )  # too much to read past the positions: the logs' tails (all of them here)
    tails = App.open()
    try:
        partial = answers(tails)
        assert all("partial" in str(shown).lower() or "still indexing" in str(shown) for shown in partial)
        assert not folded_sessions(tails)
    finally:
        tails.close()
    monkeypatch.undo()  # the build finishes: the tables alone say the same
    assert app.tables().update() >= 0 and app.tables().serves(("sessions",))
    assert answers(app) == merged


def test_tables_made_ahead_of_a_build_do_not_serve_while_another_format_is_not_made(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions.append_shared_note(app, {"agent": "claude", "project": "p", "session_id": "s", "text": "an old note"})
    app.tables().close()
    app.tables().path.unlink(missing_ok=True)
    building_elsewhere(monkeypatch)
    sessions.append_shared_note(app, {"agent": "claude", "project": "p", "session_id": "s", "text": "a new note"})
    app.tables().update()  # this machine's newest rows added ahead; the build (elsewhere) has made nothing else
    assert not app.tables().serves(("sessions",)) and not app.tables().serves(("feed",))
    assert "an old note" in sessions.resume_session(app, {"project": "p", "session_id": "s"}).text


def test_a_session_the_logs_tails_do_not_reach_is_not_read_yet_never_no_session(
    app: App, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from contextflow.core import rest
    from contextflow.core.errors import NotFoundError

    other = open_app("writer-b", CONTEXTFLOW_STATE=str(tmp_path / "elsewhere"))
    try:
        base = {"agent": "codex", "project": "p"}
        sessions.append_shared_note(other, {**base, "session_id": "old", "text": "the old session's note"})
        for n in range(30):
            sessions.append_shared_note(other, {**base, "session_id": "new", "text": f"newer {n} " + "x" * 300})
    finally:
        other.close()
    building_elsewhere(monkeypatch)  # a new machine: nothing built, the build elsewhere has not begun
    monkeypatch.setattr(rest, "REST_BYTES", 0)  # more than a call reads: the logs' newest bytes only
    monkeypatch.setattr(rest, "TAIL_BYTES", 2_000)
    monkeypatch.setattr(rest, "TAIL_BUDGET", 2_000)
    listed = sessions.list_sessions(app, {"project": "p"})
    assert listed.text.startswith("PARTIAL:") and "indexed" in listed.text and "new" in listed.text
    assert "); older entries not read yet are missing below; ask again shortly.\n\n" in listed.text
    assert listed.data["partial"]["built_bytes"] < listed.data["partial"]["log_bytes"]
    with pytest.raises(NotFoundError) as raised:
        sessions.resume_session(app, {"project": "p", "session_id": "old"})
    assert "not read yet" in str(raised.value) and "indexed" in str(raised.value)
    assert "no session" not in str(raised.value)


HOLD = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode=DELETE")  # a rollback journal: readers are shut out too
db.execute("BEGIN EXCLUSIVE")
print("held", flush=True)
sys.stdin.read()  # until the test closes its end
"""


def test_a_write_while_another_process_shuts_the_tables_out_says_it_was_written_and_a_search_says_partial(
    app: App, tmp_path: Path
) -> None:
    import subprocess
    import sys

    from tests.table import run

    base = {"agent": "claude", "project": "p", "session_id": "s-shut"}
    run(app, "write_shared_handoff", **base, summary="before")
    stock(app)
    assert refs(app, "websocket")  # the index is built
    app.close()
    command = [sys.executable, "-c", HOLD, str(app.tables().path)]
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "held\n"
            writer = open_app("writer-a")
            written = run(writer, "write_shared_handoff", **base, summary="written under the lock")
            assert written.data["id"] and written.exit == 0  # said written, not "ask again" (it is in the log)
            logged = [line for path in app.store.folder.glob("*.jsonl") for line in path.read_text().splitlines()]
            assert sum("written under the lock" in line for line in logged) == 1
            found = run(writer, "get_context", query="websocket")
            assert found.text.count("PARTIAL: another process holds views.sqlite3 locked") == 1
            assert "nothing was searched" in found.text and "No stored records match" not in found.text
            writer.close()
        finally:
            assert holder.stdin is not None
            holder.stdin.close()
            holder.wait(timeout=30)
