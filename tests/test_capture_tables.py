"""What a session start reads of captured sessions, from the derived tables, equals the in-memory view's."""

import contextlib
import json
import os
import random
import sqlite3

import pytest

from contextflow.app import App
from contextflow.capture import recall
from contextflow.capture import stored as capture_stored
from contextflow.core import tables as tables_module
from contextflow.core.store import Store
from tests.capture_oracle import FoldedTurns, fold_whole
from tests.conftest import open_app
from tests.folding import view_of
from tests.table import run

pytestmark = pytest.mark.usefixtures("shared_project")  # stored in `shared`, read from the plain tmp folder


@pytest.fixture(autouse=True)
def _oracle(monkeypatch):
    fold_whole(monkeypatch)  # a store sharing no machine-local state (`in_memory`) folds the activity view whole


PROJECTS = ("shared", "web")
WORDS = ["parser", "cache", "retry", "index", "token", "config", "docs", "build"]


def _turn(rng: random.Random, n: int, linked: str | None) -> dict:
    turn: dict = {"request": f"request {n}", "final": f"final {n} " + " ".join(rng.sample(WORDS, 3))}
    if rng.random() < 0.5:
        turn["files"] = {"edited": [f"src/{rng.choice(WORDS)}.py"]}
        turn["state"] = {"commit": "c" * 40, "files": {turn["files"]["edited"][0]: "b" * 40}}
    if rng.random() < 0.3:
        turn["commands"] = [{"command": "pytest -q", "exit": rng.choice([0, 1])}]
    if rng.random() < 0.3:
        turn["decisions"] = [
            {"decision": f"use the {rng.choice(WORDS)} {n}", "reasoning": "faster", "status": "chosen"}
        ]
    if rng.random() < 0.2:
        turn["questions"] = [f"what about the {rng.choice(WORDS)}?"]
    if rng.random() < 0.1:
        turn["todos_said"] = [f"write the {rng.choice(WORDS)} docs"]
    if linked is not None:
        turn["handoff"] = {"id": linked, "summary": "handed off"}
    return turn


def fill(app: App, rng: random.Random, count: int) -> None:
    """Captured turns (some captured twice), automatic and written handoffs, turns linking handoffs."""
    written: list[str] = []
    previous: list[tuple[str, dict]] = []
    for n in range(count):
        project, session = rng.choice(PROJECTS), rng.choice(["s1", "s2", "s3", "s4", " s5 "])
        base = {"project": project, "session_id": session, "agent": rng.choice(["claude-code", "codex"])}
        roll = rng.random()
        if roll < 0.1:
            event = app.store.append("handoff", {**base, "summary": f"written {n}"})
            written.append(event.id)
        elif roll < 0.18:
            app.store.append("handoff", {**base, "summary": f"[automatic handoff] {n}", "auto": True})
        elif roll < 0.25 and previous:  # the same turn captured again (another machine, a transcript read again)
            turn_id, data = rng.choice(previous)
            app.store.append("capture.turn", {**data, "turn_id": turn_id})
        else:
            linked = written[-1] if written and rng.random() < 0.15 else None
            data = {**base, "turn": _turn(rng, n, linked)}
            if rng.random() < 0.9:
                turn_id = f"turn-{n}"
                previous.append((turn_id, data))
                data = {**data, "turn_id": turn_id}
            app.store.append("capture.turn", data)


def answers(app: App) -> list:
    found: list = []
    for project in (*PROJECTS, "none"):
        latest = recall.latest_handoff(app, project)
        if latest is None:
            found.append(None)
        else:
            event = latest.event.id if latest.event else None
            earlier = latest.earlier.id if latest.earlier else None
            found.append((latest.session_id, latest.key, event, latest.digest, earlier, latest.state, latest.agent))
        substance = recall.recent_substance(app, project)
        found.append([(s.kind, s.text, s.session_id, s.ts, s.agent, s.state) for s in substance])
        for session in ("s1", "s5", "none"):  # the `session_activity` tool: that session's turns only
            shown = run(app, "session_activity", project=project, session_id=session, limit=200)
            found.append((shown.text, shown.data))
    return found


def in_memory(writer: str) -> App:
    return App.open({**os.environ, "CONTEXTFLOW_WRITER": writer}, shares_state=False)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.parametrize("count", [4, 40, 300])
def test_the_tables_answer_as_the_activity_view(app, seed, count, monkeypatch):
    fill(app, random.Random(seed), count)
    fresh = open_app("writer-a")
    assert not isinstance(capture_stored.turns(fresh, "shared"), FoldedTurns)
    on_disk = answers(fresh)
    assert not fresh.store.scanned  # no log read whole
    memory = in_memory("writer-a")
    assert isinstance(capture_stored.turns(memory, "shared"), FoldedTurns)
    assert answers(memory) == on_disk


def test_a_turn_captured_twice_keeps_its_earliest_copy_whatever_the_order(app, tmp_path):
    turn = {"files": {"edited": ["a.py"]}, "final": "done"}
    first = app.store.append("capture.turn", {"project": "shared", "session_id": "s1", "turn_id": "t", "turn": turn})
    other = open_app("writer-b")
    other.store.append("capture.turn", {"project": "shared", "session_id": "s1", "turn_id": "t", "turn": turn})
    fresh = open_app("writer-c")
    rows = fresh.tables().query("SELECT id FROM capture_turns")
    assert rows == [(first.id,)]
    latest = recall.latest_handoff(fresh, "shared")
    assert latest is not None and latest.digest is not None and latest.digest["turns"] == 1


# -- a fresh machine: the session start answers from the logs' newest events while the tables are built


def _session_start(capsys, monkeypatch, cwd: str) -> str:
    import io
    import json

    from contextflow.adapters.cli import main

    stdin = json.dumps({"session_id": "next", "cwd": cwd, "hook_event_name": "SessionStart"}).encode()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    assert main(["hook", "session-start"]) == 0
    out = capsys.readouterr().out
    return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""


def test_a_fresh_machine_answers_from_the_newest_events_while_its_tables_are_built(app, capsys, monkeypatch, tmp_path):
    from contextflow.adapters.session_start import PARTIAL_NOTE
    from contextflow.core import rest
    from tests.test_own_writes_while_building import building_elsewhere

    monkeypatch.setattr(rest, "REST_BYTES", 0)  # more than a call reads past the read positions: the logs' tails
    for n in range(40):
        app.store.append("note", {"project": "shared", "session_id": "old", "text": f"filler {n} " + "x" * 300})
    app.store.append("handoff", {"project": "shared", "session_id": "s9", "summary": "Parser half done", "agent": "a"})
    turn = {"files": {"edited": ["src/parser.py"]}, "final": "done", "decisions": [{"decision": "use a PEG parser"}]}
    app.store.append("capture.turn", {"project": "shared", "session_id": "s9", "turn_id": "t1", "turn": turn})
    building_elsewhere(monkeypatch)  # as if the logs were big: built in the background (not done before the read)
    monkeypatch.setenv("CONTEXTFLOW_STATE", str(tmp_path / "fresh-state"))  # a fresh machine: no state at all
    context = _session_start(capsys, monkeypatch, str(tmp_path))
    assert "use a PEG parser" in context and "## Latest handoff in project shared" in context
    assert context.endswith(PARTIAL_NOTE)
    assert "s9" in context.split("## Recent sessions")[1]


def _tail(app, limit: int, budget: int) -> tuple[list[str], int]:
    """The texts of the notes the logs' tails hold since their horizon (oldest first), and the horizon."""
    from contextflow.core.projections import readable_events
    from contextflow.core.rest import tails

    found, horizon = tails(app.tables().paths(), app.store, limit, budget)
    events = [event for lines in found for event in readable_events(lines, app.store) if event.hlc >= horizon]
    return [event.data["text"] for event in sorted(events, key=lambda event: event.key)], horizon


def test_the_tail_holds_every_event_since_the_oldest_stamp_all_tails_reach(app, tmp_path):
    other = open_app("writer-b")
    for n in range(30):  # writer-a's log: long; writer-b's: short (read whole)
        app.store.append("note", {"project": "shared", "session_id": "a", "text": f"a{n} " + "y" * 200})
        if n % 10 == 0:
            other.store.append("note", {"project": "shared", "session_id": "b", "text": f"b{n}"})
    texts, horizon = _tail(app, limit=2_000, budget=2_000)  # (no room to read more)
    assert texts and texts[-1].startswith("a29") and len(texts) < 20  # the newest only
    assert all(not text.startswith("b0") and not text.startswith("b10") for text in texts)  # older: left out
    assert horizon > 0


def test_the_busiest_writers_tail_is_read_further_back_within_the_budget(app):
    """A busy writer's last megabyte spans minutes where a quiet one's spans days: its tail is read
    further back (within the budget), so the window every tail covers is wider, and still whole."""
    from contextflow.core.log import read_whole

    quiet = open_app("writer-q")
    for n in range(80):  # writer-a: 80 long notes; writer-q: one short note every 8
        app.store.append("note", {"project": "shared", "session_id": "a", "text": f"a{n} " + "y" * 300})
        if n % 8 == 0:
            quiet.store.append("note", {"project": "shared", "session_id": "q", "text": f"q{n}"})
    narrow = _tail(app, limit=2_000, budget=2_000)  # no room to grow
    wide = _tail(app, limit=2_000, budget=20_000)
    logged = [json.loads(raw) for path in app.store.folder.glob("*.jsonl") for _, raw in read_whole(path)[1]]
    every = sorted((event["hlc"], event["data"]["text"]) for event in logged if event["kind"] == "note")
    for texts, horizon in (narrow, wide):
        assert texts == [text for hlc, text in every if hlc >= horizon]  # all since it
    assert 0 < wide[1] < narrow[1]
    assert len(wide[0]) >= 2 * len(narrow[0])


def test_a_fresh_machine_says_why_when_the_newest_events_hold_nothing_of_the_project(
    app, capsys, monkeypatch, tmp_path
):
    from contextflow.core import catchup, rest

    app.store.append("handoff", {"project": "shared", "session_id": "s1", "summary": "Parser half done", "agent": "a"})
    other = [("note", {"project": "elsewhere", "session_id": "e", "text": f"{n} " + "x" * 400}) for n in range(19_000)]
    app.store.append_many(other)  # more than all tails together read (projections.TAIL_BUDGET)
    monkeypatch.setattr(catchup, "BACKGROUND_BYTES", 100)  # as if the logs were big: built in the background
    monkeypatch.setattr(
        tables_module.Tables, "_build_in_background", lambda self, unread: setattr(self, "building", True)
    )
    monkeypatch.setenv("CONTEXTFLOW_STATE", str(tmp_path / "fresh-state"))
    with monkeypatch.context() as bounded:
        bounded.setattr(rest, "REST_BYTES", 1_000_000)  # more remains than a call reads: the logs' tails only
        context = _session_start(capsys, monkeypatch, str(tmp_path))
    assert "Parser half done" not in context
    assert "nothing of project shared is among the newest events read so far" in context


def test_a_fresh_machine_whose_logs_fit_the_bound_answers_from_all_of_them_while_its_tables_are_built(
    app, capsys, monkeypatch, tmp_path
):
    from contextflow.core import catchup

    app.store.append("handoff", {"project": "shared", "session_id": "s1", "summary": "Parser half done", "agent": "a"})
    other = [("note", {"project": "elsewhere", "session_id": "e", "text": f"{n} " + "x" * 400}) for n in range(19_000)]
    app.store.append_many(other)  # more than the logs' tails hold, less than a call reads (rest.REST_BYTES)
    monkeypatch.setattr(catchup, "BACKGROUND_BYTES", 100)
    monkeypatch.setattr(
        tables_module.Tables, "_build_in_background", lambda self, unread: setattr(self, "building", True)
    )
    monkeypatch.setenv("CONTEXTFLOW_STATE", str(tmp_path / "fresh-state"))
    context = _session_start(capsys, monkeypatch, str(tmp_path))
    assert "Parser half done" in context and "nothing of project shared" not in context


def test_an_earlier_copy_of_a_turn_read_later_moves_it_and_its_sessions_follow(app):
    turn = {"files": {"edited": ["a.py"]}, "final": "done"}
    other = open_app("writer-z")  # written first (the earlier copy), its log read after writer-a's (by name)
    other.store.append("capture.turn", {"project": "web", "session_id": "s1", "turn_id": "t", "turn": turn})
    app.store.append("capture.turn", {"project": "shared", "session_id": "s1", "turn_id": "t", "turn": turn})
    app.store.append("capture.turn", {"project": "shared", "session_id": "s2", "turn_id": "u", "turn": turn})
    fresh = open_app("writer-c")
    sessions = fresh.tables().query("SELECT project, session_id FROM capture_sessions ORDER BY 1, 2")
    assert sessions == [("shared", "s2"), ("web", "s1")]  # the turn is the earliest copy's: web's
    assert answers(fresh) == answers(in_memory("writer-c"))


def test_an_import_knows_the_turns_captured_before_from_the_tables(app, monkeypatch):
    """`contextflow import` of transcripts skips turns captured before: looked up one at a time in the
    derived tables (no fold of every captured turn), the same answers as the fold's."""
    from contextflow.capture import stored

    fill(app, random.Random(5), 120)
    known = stored.known_turns(app)
    assert isinstance(known, stored.KnownTurns)
    folded = set(view_of(in_memory("writer-a").store, "activity").turn_ids)
    assert folded
    for turn_id in [*sorted(folded), "turn-9999", "nothing"]:
        assert (turn_id in known) == (turn_id in folded)
    known.add("turn-9999")
    assert "turn-9999" in known


def test_captured_turns_are_read_and_known_once_from_the_logs_when_the_tables_do_not_open(app, monkeypatch):
    """A state folder where the database does not open (read-only, full): the logs' rows alone answer, a
    turn captured twice once, with no whole view folded."""
    from contextflow.capture import stored

    turn = {"files": {"edited": ["a.py"]}, "final": "done"}
    first = app.store.append("capture.turn", {"project": "shared", "session_id": "s1", "turn_id": "t", "turn": turn})
    open_app("writer-b").store.append(
        "capture.turn", {"project": "shared", "session_id": "s1", "turn_id": "t", "turn": turn}
    )
    path = app.tables().path
    app.close()
    for suffix in ("", "-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)

    def full(self):
        raise sqlite3.OperationalError("database or disk is full")  # no database is made there

    monkeypatch.setattr(tables_module.Tables, "_connect", full)

    def refused(*args, **kwargs):
        raise AssertionError("every log was read")

    monkeypatch.setattr(Store, "refresh", refused)
    reader = open_app("writer-c")
    assert not reader.tables().usable()
    known = stored.known_turns(reader)
    assert "t" in known and "u" not in known
    assert [event.id for event in stored.turns(reader, "shared").session("s1")] == [first.id]


def test_many_logs_share_the_tails_budget(app, monkeypatch):
    """A store of many logs (a ContextFlowMCP folder of one file per session): each log's tail is its share of
    the budget, not `limit` each, so a call during a build reads about `budget` bytes, not the whole store."""
    from contextflow.core import rest

    monkeypatch.setattr(rest, "MIN_TAIL", 500)
    for n in range(6):
        writer = open_app(f"writer-{n}")
        for k in range(20):
            writer.store.append("note", {"project": "shared", "session_id": f"s{n}", "text": f"{n}-{k} " + "z" * 300})
        writer.close()
    found, horizon = rest.tails(app.tables().paths(), app.store, 4_000, 6_000)
    assert len(found) == 6 and all(found) and horizon > 0  # every log's newest lines
    assert sum(len(raw) for lines in found for _, raw in lines) <= 6_000  # (4,000 of each: 24,000)


# -- a session's digest, kept in the tables: read only when it holds exactly the session's turns


def _kept_and_folded(app: App, project: str, session: str) -> tuple[dict | None, dict]:
    turns = capture_stored.turns(app, project)
    return turns.digest(session), recall.session_digest(turns.session(session))


def test_a_sessions_digest_is_kept_as_its_turns_arrive_and_equals_their_fold_whatever_the_order(app):
    """Turns of one session written by two machines, the later machine's log read first (its turns arrive
    out of order), read between writes: the kept digest is the fold of the session's turns, and is kept."""
    rng = random.Random(7)
    early, late = open_app("writer-z"), app  # writer-z's log is read after writer-a's: its earlier turns arrive later
    reader = open_app("writer-c")
    for n in range(40):
        writer = early if n % 4 == 0 else late
        writer.store.append(
            "capture.turn", {"project": "shared", "session_id": "s1", "turn_id": f"t{n}", "turn": _turn(rng, n, None)}
        )
        if n % 5 == 4:
            reader.tables().update()
            kept, folded = _kept_and_folded(reader, "shared", "s1")
            assert kept is not None and kept == folded and kept["turns"] == n + 1
    fresh = open_app("writer-d")  # built from scratch, every log at once
    assert _kept_and_folded(fresh, "shared", "s1")[0] == _kept_and_folded(reader, "shared", "s1")[1]


def test_a_damaged_or_stale_digest_is_not_used(app):
    rng = random.Random(3)
    for n in range(12):
        app.store.append(
            "capture.turn", {"project": "shared", "session_id": "s1", "turn_id": f"t{n}", "turn": _turn(rng, n, None)}
        )
    fresh = open_app("writer-c")
    kept, folded = _kept_and_folded(fresh, "shared", "s1")
    assert kept == folded
    path = fresh.tables().path
    fresh.close()
    tables_module.close_for(fresh.store)
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        (kept_row,) = db.execute("SELECT * FROM capture_digests").fetchall()
    forged = json.dumps({**folded, "files": ["forged.py"]}).encode()
    for change, values in (
        ("UPDATE capture_digests SET digest = ?", (forged,)),  # its checksum no longer matches
        ("UPDATE capture_digests SET digest = ?, sum = ?", ("text", "x")),  # not even a blob
        ("UPDATE capture_digests SET turns = turns - 1", ()),  # not the session's count
        ("UPDATE capture_digests SET seq = seq - 1", ()),  # not as of the session's newest turn
        ("DELETE FROM capture_digests", ()),
    ):
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
            db.execute("INSERT OR REPLACE INTO capture_digests VALUES (?, ?, ?, ?, ?, ?, ?, ?)", kept_row)
            db.execute(change, values)
        reader = open_app("writer-c")
        kept, refolded = _kept_and_folded(reader, "shared", "s1")
        assert kept is None and refolded == folded
        latest = recall.latest_handoff(reader, "shared")
        assert latest is not None and latest.digest == folded and "forged.py" not in str(latest.digest)
        reader.close()
        tables_module.close_for(reader.store)
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:  # as kept: read again
        db.execute("INSERT OR REPLACE INTO capture_digests VALUES (?, ?, ?, ?, ?, ?, ?, ?)", kept_row)
    assert _kept_and_folded(open_app("writer-c"), "shared", "s1")[0] == folded


def test_a_sessions_digest_read_while_the_tables_are_locked_holds_the_turn_written_under_the_lock(app, monkeypatch):
    from tests.locking import counted_waits, shut_out

    counted_waits(monkeypatch)
    rng = random.Random(5)
    for n in range(6):
        app.store.append(
            "capture.turn", {"project": "shared", "session_id": "s1", "turn_id": f"t{n}", "turn": _turn(rng, n, None)}
        )
    path = open_app("writer-c").tables().path
    with shut_out(path, "wal"):  # (the write's own catch-up cannot add its turn to the tables either)
        app.store.append(
            "capture.turn",
            {"project": "shared", "session_id": "s1", "turn_id": "t6", "turn": {"files": {"edited": ["new.py"]}}},
        )
        reader = open_app("writer-c")
        kept, folded = _kept_and_folded(reader, "shared", "s1")
        assert folded["turns"] == 7 and "new.py" in folded["files"]
        assert kept is None  # the tables' digest of 6 turns is not the answer, and the rest keeps none (it folds)
        latest = recall.latest_handoff(reader, "shared")
        assert latest is not None and latest.digest == folded
        reader.close()
