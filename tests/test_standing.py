"""What a repository decided and left open stands at every session start until resolved, superseded, or
aged out by time AND by later sessions that did work; sessions that only talked never age it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contextflow.adapters.session_start import MORE_NOTE, SESSION_NOTICE, STANDING_TITLE, session_start
from contextflow.app import App
from contextflow.capture import recall
from contextflow.core.timeutil import now_ms

DAY = 86_400_000
DEBUG_ITEMS = {
    "decisions": [
        {"decision": "We keep the retry loop in the client", "reasoning": "the server may restart", "status": "chosen"},
        {"decision": "exponential backoff without jitter", "reasoning": "tests need it", "status": "rejected"},
        {"decision": "We log the request id on every retry", "status": "chosen"},
    ],
    "questions": ["should the retry cap be configurable?", "does the proxy strip the request id header?"],
    "todos_said": ["document the retry cap in README"],
}
TEXTS = [
    "We keep the retry loop in the client",
    "rejected: exponential backoff without jitter",
    "We log the request id on every retry",
    "should the retry cap be configurable?",
    "does the proxy strip the request id header?",
    "document the retry cap in README",
]


def turn(app: App, session: str, data: dict[str, Any], agent: str = "claude-code") -> None:
    project = app.settings.default_project
    app.store.append("capture.turn", {"project": project, "session_id": session, "agent": agent, "turn": data})


def debugging_session(app: App) -> None:
    """Ten turns that edit and test; the six items are said along the way."""
    for n in range(10):
        data: dict[str, Any] = {"request": f"fix the retry bug, step {n}", "files": {"edited": ["client/retry.py"]}}
        data["commands"] = [{"command": "pytest tests/test_retry.py", "exit": int(n < 8)}]
        if n == 3:
            data["decisions"] = DEBUG_ITEMS["decisions"]
        if n == 6:
            data["questions"] = DEBUG_ITEMS["questions"]
            data["todos_said"] = DEBUG_ITEMS["todos_said"]
        turn(app, "debug", data)


def talk_only(app: App, count: int) -> None:
    for n in range(count):
        turn(app, f"talk-{n}", {"request": "where were we?", "final": "We were fixing the retry bug."})
    turn(app, "look", {"request": "status?", "commands": [{"command": "git status", "exit": 0}, {"command": "ls"}]})


def working(app: App, count: int) -> None:
    for n in range(count):
        turn(app, f"work-{n}", {"request": f"feature {n}", "files": {"created": [f"f{n}.py"]}})


def told(app: App, tmp_path: Path, budget: int = 2_250) -> str:
    return session_start(app, tmp_path, budget)


def standing(app: App, **later: int) -> list[str]:
    found = recall.standing_substance(app, app.settings.default_project, **later).items
    return [said.text.split(" (because ")[0] for said in found]


def test_sessions_that_only_talked_or_looked_leave_every_decision_standing(app: App, tmp_path: Path) -> None:
    debugging_session(app)
    talk_only(app, 10)
    context = told(app, tmp_path)
    assert context.split("\n", 1)[0] == SESSION_NOTICE
    block = context.split(f"## {STANDING_TITLE}", 1)[1].split("\n## ", 1)[0]
    for text in TEXTS:
        assert text in block, (text, block)
    month_later = now_ms() + 31 * DAY  # old enough, but no session since did work
    assert sorted(standing(app, now_ms=month_later)) == sorted(TEXTS)


def test_items_age_out_only_by_time_and_by_working_sessions_together(app: App) -> None:
    debugging_session(app)
    talk_only(app, 3)
    working(app, recall.STANDING_SESSIONS)
    assert sorted(standing(app)) == sorted(TEXTS)  # ten working sessions, but said today
    assert standing(app, now_ms=now_ms() + 31 * DAY) == []  # a month old and ten working sessions since


def test_fewer_working_sessions_than_the_window_keep_old_items(app: App) -> None:
    debugging_session(app)
    working(app, recall.STANDING_SESSIONS - 2)
    talk_only(app, 20)
    assert sorted(standing(app, now_ms=now_ms() + 90 * DAY)) == sorted(TEXTS)


def test_a_resolved_question_and_a_reversed_decision_no_longer_stand(app: App) -> None:
    debugging_session(app)
    turn(
        app,
        "later",
        {
            "resolved": ["the proxy keeps the request id header"],
            "decisions": [
                {"decision": "We keep the retry loop in the server", "reasoning": "one place", "status": "chosen"},
                {"decision": "the retry loop in the client", "reasoning": "two places drift", "status": "rejected"},
            ],
        },
    )
    found = standing(app)
    assert "does the proxy strip the request id header?" not in found
    assert "We keep the retry loop in the client" not in " | ".join(found)
    assert found[:2] == ["We keep the retry loop in the server", "rejected: the retry loop in the client"]


def test_what_does_not_fit_is_counted_with_where_to_see_it(app: App, tmp_path: Path) -> None:
    words = [f"{a}{b}{c}" for a in "klmnpqrstv" for b in "aeiou" for c in "xyz"]  # no two items alike
    for n in range(60):
        text = f"use {words[n]} with {words[60 + n]} in {words[120 + n % 30]}{n}"  # (no key word shared)
        turn(app, f"s{n}", {"decisions": [{"decision": text, "status": "chosen"}]})
    context = told(app, tmp_path, budget=1_500)
    block = context.split(f"## {STANDING_TITLE}", 1)[1].split("\n## ", 1)[0]
    shown = block.count("> decision: use ")
    assert 1 < shown < 60
    assert f"({60 - shown} more not shown: get_context" in block
    assert f"use {words[59]} " in block and f"use {words[0]} " not in block  # newest first
    assert MORE_NOTE.split("{", 1)[0] in block


def test_the_reads_are_bounded_whatever_the_history(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recall, "MAX_SAID_TURNS", 5)
    monkeypatch.setattr(recall, "MAX_WORK_TURNS", 20)
    for n in range(40):
        turn(app, f"s{n}", {"commands": [{"command": "git log"}], "questions": [f"question {n}?"]})
    read: list[int] = []
    tables = app.tables()
    query = tables.query

    def counted(sql: str, params: Any = (), **how: Any) -> Any:
        rows = query(sql, params, **how)
        read.append(len(rows))
        return rows

    monkeypatch.setattr(tables, "query", counted)
    result = recall.standing_substance(app, app.settings.default_project)
    assert [said.text for said in result.items] == [f"question {n}?" for n in range(39, 34, -1)] and result.older
    assert sum(read) <= 5 + 1 + 20  # (the said turns, one more to know there are more, the work turns' keys)


def test_the_session_start_reads_captured_turns_by_index_whatever_their_number(
    app: App, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each query of the captured turns walks an index in the order it asks for: none sorts or scans the
    project's turns (a year of them made every session start sort thousands)."""
    import sqlite3

    debugging_session(app)
    talk_only(app, 3)
    working(app, 3)
    app.close()
    sent: list[str] = []
    connect = sqlite3.connect

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        db = connect(*args, **kwargs)
        db.set_trace_callback(sent.append)
        return db

    monkeypatch.setattr(sqlite3, "connect", traced)
    assert STANDING_TITLE in told(app, tmp_path)
    asked = [sql for sql in sent if sql.lstrip().upper().startswith("SELECT") and "capture_turns" in sql]
    assert any("says IS NOT NULL" in sql for sql in asked) and any("work = 1" in sql for sql in asked)
    db = connect(app.tables().path)
    try:
        for sql in asked:
            plan = [row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {sql}")]
            assert not [step for step in plan if "TEMP B-TREE" in step or step.startswith("SCAN capture_turns")], (
                sql,
                plan,
            )
    finally:
        db.close()
