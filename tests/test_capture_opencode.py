"""Capture from OpenCode's session database: rows recorded from OpenCode 1.18.33 (`opencode run`
against a scripted model), put in a database with OpenCode's own `message` and `part` tables;
turns, incremental reads, hostile rows, privacy, and the hook call the OpenCode plugin makes."""

import io
import json
import os
import sqlite3
from pathlib import Path

import pytest

from contextflow.adapters.cli import main
from contextflow.capture import opencode
from contextflow.sessions import core as sessions
from tests.folding import view_of

SAMPLE = json.loads((Path(__file__).parent / "fixtures" / "capture" / "opencode-session.json").read_text())
SAMPLE_ROOT = "/home/u/shop"
SESSION = SAMPLE["message"][0]["session_id"]


def make_database(path: Path, root: str = SAMPLE_ROOT, messages=None, parts=None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path)
    for statement in SAMPLE["schema"]:
        connection.execute(statement)
    for row in SAMPLE["message"] if messages is None else messages:
        connection.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)", _row(row, root, "message"))
    for row in SAMPLE["part"] if parts is None else parts:
        connection.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", _row(row, root, "part"))
    connection.commit()
    connection.close()
    return path


def _row(row, root, table):
    names = ("id", "session_id", "time_created", "time_updated", "data")
    if table == "part":
        names = ("id", "message_id", "session_id", "time_created", "time_updated", "data")
    return tuple(row[name].replace(SAMPLE_ROOT, root) if name == "data" else row[name] for name in names)


@pytest.fixture
def repo(tmp_path):
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    (work / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:Example-Owner/shop.git\n')
    return work


@pytest.fixture
def database(tmp_path, repo):
    """OpenCode's database where OpenCode keeps it for this test's HOME (XDG_DATA_HOME)."""
    return make_database(tmp_path / "home" / ".local" / "share" / "opencode" / "opencode.db", str(repo))


def test_the_recorded_session_is_one_turn_with_files_commands_errors_todos_and_the_final_reply(database, repo):
    chunk = opencode.read_new(opencode.transcript(os.environ, SESSION), None)
    counts: dict[str, int] = {}
    turns = opencode.parse(chunk.lines, counts)
    assert counts == {} and chunk.skipped == 0 and len(turns) == 1
    data = turns[0].data(str(repo))
    assert data["request"] == '"Write calc.py "'  # as `opencode run` recorded it, the <private> part gone
    assert data["files"] == {"created": ["calc.py"], "edited": ["calc.py"], "read": ["calc.py"]}
    assert data["commands"] == [
        {"command": "python3 -c 'import sys; sys.exit(3)'", "exit": 3},
        {"command": "python3 -c 'print(2 + 3)'", "exit": 0},
    ]
    assert data["errors"][0] == "`python3 -c 'import sys; sys.exit(3)'` exited 3"
    assert data["errors"][1].startswith("read ") and "missing.py" in data["errors"][1]
    assert data["todos"] == [{"text": "add a CLI", "status": "pending"}, {"text": "write calc", "status": "completed"}]
    assert data["final"] == "I set x to 2.  Next: add a CLI."
    assert "hunter2" not in json.dumps(data) and "secret plan" not in json.dumps(data)


def test_only_messages_after_the_read_position_are_read_and_an_unfinished_reply_waits(tmp_path):
    messages, parts = SAMPLE["message"], SAMPLE["part"]
    last = messages[-1]
    unfinished = {**last, "data": json.dumps({**json.loads(last["data"]), "time": {"created": 1}})}
    path = make_database(tmp_path / "oc.db", messages=[*messages[:-1], unfinished], parts=parts)
    name = f"{path}#{SESSION}"
    first = opencode.read_new(name, None)
    assert len(first.lines) == len(messages) - 1  # the last reply is not completed yet
    assert opencode.read_new(name, first.position).lines == []
    connection = sqlite3.connect(path)
    connection.execute("UPDATE message SET data = ? WHERE id = ?", (last["data"], last["id"]))
    connection.commit()
    connection.close()
    second = opencode.read_new(name, first.position)
    assert [json.loads(line)["id"] for line in second.lines] == [last["id"]]
    assert opencode.parse(second.lines, {})[0].final.startswith("I set x to 2.")


def test_rows_that_are_not_json_or_too_large_are_skipped_and_counted(tmp_path, monkeypatch):
    monkeypatch.setattr(opencode, "MAX_ROW", 5_000)
    user = {**SAMPLE["message"][0], "data": "{not json"}
    big = {**SAMPLE["part"][2], "data": json.dumps({"type": "text", "text": "x" * 6_000})}
    path = make_database(tmp_path / "oc.db", messages=[user, *SAMPLE["message"][1:]], parts=[big, *SAMPLE["part"][3:]])
    chunk = opencode.read_new(f"{path}#{SESSION}", None)
    counts: dict[str, int] = {}
    turns = opencode.parse(chunk.lines, counts)
    assert chunk.skipped == 1 and counts == {"bad": 1}
    assert len(turns) == 1 and turns[0].continued  # its prompt was the bad row: the turn is kept without it


def test_the_database_is_where_opencode_keeps_it():
    env = {"HOME": "/h", "XDG_DATA_HOME": "/data"}
    assert opencode.database(env) == "/data/opencode/opencode.db"
    assert opencode.database({"HOME": "/h"}) == "/h/.local/share/opencode/opencode.db"
    assert opencode.database({**env, "OPENCODE_DB": "/x/oc.db"}) == "/x/oc.db"
    assert opencode.database({**env, "OPENCODE_DB": "other.db"}) == "/data/opencode/other.db"


def test_a_fifo_in_the_databases_place_is_not_opened(tmp_path):
    fifo = tmp_path / "oc.db"
    os.mkfifo(fifo)
    with pytest.raises(FileNotFoundError):
        opencode.read_new(f"{fifo}#{SESSION}", None)  # returns at once: a FIFO would block a reader


# -- through the hook the plugin runs ----------------------------------------------------------------


def run_hook(monkeypatch, capsys, event, payload, **env):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode())))
    assert main(["hook", event]) == 0
    out, err = capsys.readouterr()
    assert "did nothing" not in err, err
    return out


def test_the_plugins_idle_call_stores_the_turn_once_and_the_automatic_handoff(app, database, repo, monkeypatch, capsys):
    payload = {"session_id": SESSION, "cwd": str(repo), "hook_event_name": "session.idle"}
    run_hook(monkeypatch, capsys, "stop", payload, CONTEXTFLOW_CLIENT="opencode")
    run_hook(monkeypatch, capsys, "stop", payload, CONTEXTFLOW_CLIENT="opencode")  # nothing new
    app.store.refresh()
    turns = list(view_of(app.store, "activity").all_events())
    assert len(turns) == 1
    assert turns[0].data["agent"] == "opencode" and turns[0].data["project"] == "example-owner/shop"
    handoff = sessions.latest_handoff(app, sessions.EntryFilter("example-owner/shop", session_id=SESSION))
    assert handoff is not None and handoff.data["auto"] is True and handoff.data["agent"] == "opencode"
    assert handoff.data["summary"].startswith("[automatic handoff] I set x to 2.")
    assert "calc.py" in handoff.data["files"]
    assert handoff.data["provenance"]["transcript"] == f"{database}#{SESSION}"


def test_a_directive_in_opencodes_final_reply_is_carried_out(app, tmp_path, repo, monkeypatch, capsys):
    messages, parts = SAMPLE["message"], list(SAMPLE["part"])
    final = next(p for p in reversed(parts) if json.loads(p["data"]).get("type") == "text")
    remember = '<ctx:remember type="fact">The shop runs on port 8080</ctx:remember>'
    parts[parts.index(final)] = {**final, "data": json.dumps({"type": "text", "text": f"Done. {remember}"})}
    make_database(tmp_path / "home" / ".local" / "share" / "opencode" / "opencode.db", str(repo), messages, parts)
    payload = {"session_id": SESSION, "cwd": str(repo), "hook_event_name": "session.idle"}
    run_hook(monkeypatch, capsys, "stop", payload, CONTEXTFLOW_CLIENT="opencode")
    shown = run_hook(monkeypatch, capsys, "prompt-submit", {"session_id": SESSION, "cwd": str(repo)})
    assert "remembered" in shown.lower() or "port 8080" in shown, shown


def test_capture_off_stores_nothing_from_opencode(app, database, repo, monkeypatch, capsys):
    payload = {"session_id": SESSION, "cwd": str(repo), "hook_event_name": "session.idle"}
    run_hook(monkeypatch, capsys, "stop", payload, CONTEXTFLOW_CLIENT="opencode", CONTEXTFLOW_CAPTURE="off")
    app.store.refresh()
    assert list(view_of(app.store, "activity").all_events()) == []


def test_a_missing_database_makes_the_hook_do_nothing_and_fail_nothing(app, repo, monkeypatch, capsys):
    payload = {"session_id": SESSION, "cwd": str(repo), "hook_event_name": "session.idle"}
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode())))
    assert main(["hook", "stop"]) == 0
    app.store.refresh()
    assert list(view_of(app.store, "activity").all_events()) == []
