"""Cursor through its documented agent hooks (`.cursor/hooks.json`, version 1): payloads written in
the documented format (hooks docs of Cursor 1.7-2.x; not recorded from a running Cursor, which
is not installable here), fed to `contextflow hook cursor` as Cursor would run it."""

import io
import json
from pathlib import Path

import pytest

from contextflow.adapters.cli import main
from contextflow.admin.clients import install_client as install
from contextflow.capture import cursor_events
from contextflow.sessions import core as sessions
from tests.folding import view_of

SAMPLE = Path(__file__).parent / "fixtures" / "capture" / "cursor-hooks.jsonl"
TOKEN = "sk-test-AAAABBBBCCCCDDDD1234EEEE"
CONVERSATION = "668320d2-2fd8-4888-b33c-2a466fec86e7"


@pytest.fixture
def repo(tmp_path):
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    (work / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:Example-Owner/shop.git\n')
    return work


def payloads(repo: Path) -> list[dict]:
    return [json.loads(line.replace("/home/u/shop", str(repo))) for line in SAMPLE.read_text().splitlines()]


def run(monkeypatch, capsys, payload) -> str:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode())))
    assert main(["hook", "cursor"]) == 0
    out, err = capsys.readouterr()
    assert "did nothing" not in err, err
    return out.strip()


def all_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def test_a_cursor_turn_is_captured_with_its_edit_commands_and_reply(app, repo, tmp_path, monkeypatch, capsys):
    answers = [run(monkeypatch, capsys, payload) for payload in payloads(repo)]
    assert answers == ['{"continue":true}', "{}", "{}", "{}", "{}", "{}"]
    app.store.refresh()
    [turn] = list(view_of(app.store, "activity").all_events())
    data = turn.data
    assert data["agent"] == "cursor" and data["session_id"] == CONVERSATION
    assert data["project"] == "example-owner/shop"
    assert data["turn"]["request"] == "Write calc.py and check it"
    assert data["turn"]["files"] == {"edited": ["calc.py"]}
    assert [c["exit"] for c in data["turn"]["commands"]] == [None, None]  # Cursor does not say
    assert data["turn"]["final"].startswith("I decided to coerce inputs with int()")
    handoff = sessions.latest_handoff(app, sessions.EntryFilter("example-owner/shop", session_id=CONVERSATION))
    assert handoff is not None and handoff.data["auto"] and handoff.data["agent"] == "cursor"
    assert "calc.py" in handoff.data["files"]


def test_the_directive_in_the_agents_response_is_carried_out_once(app, repo, monkeypatch, capsys):
    for payload in payloads(repo):
        run(monkeypatch, capsys, payload)
    run(monkeypatch, capsys, payloads(repo)[-1])  # a second stop: nothing new
    assert main(["list", "--format", "json"]) == 0
    nodes = json.loads(capsys.readouterr().out)["nodes"]
    assert [n["content"] for n in nodes] == ["calc.add coerces its inputs with int()"]


def test_nothing_private_or_secret_reaches_the_journal_or_the_store(app, repo, tmp_path, monkeypatch, capsys):
    for payload in payloads(repo):
        run(monkeypatch, capsys, payload)
    for folder in (tmp_path / "store", tmp_path / "state"):
        for path in all_files(folder):
            body = path.read_bytes()
            assert TOKEN.encode() not in body and b"hunter2" not in body, path
    journals = list((tmp_path / "state").rglob("capture/cursor/*.jsonl"))
    assert len(journals) == 1 and b"[REDACTED" in journals[0].read_bytes()


def test_capture_off_writes_no_journal(app, repo, tmp_path, monkeypatch, capsys):
    (repo / ".contextflow-capture-off").write_text("")
    for payload in payloads(repo):
        run(monkeypatch, capsys, payload)
    assert list((tmp_path / "state").rglob("capture/cursor/*.jsonl")) == []
    app.store.refresh()
    assert list(view_of(app.store, "activity").all_events()) == []


@pytest.mark.parametrize(
    ("payload", "answer"),
    [
        ({}, '{"continue":true}'),  # an event it cannot name may be beforeSubmitPrompt: Cursor waits for it
        ({"hook_event_name": "afterFileEdit"}, "{}"),
        ({"hook_event_name": "afterFileEdit", "conversation_id": 7, "file_path": "x"}, "{}"),
        ({"hook_event_name": "somethingNew", "conversation_id": "c"}, '{"continue":true}'),
        ({"hook_event_name": "stop", "conversation_id": "c", "workspace_roots": "not a list"}, "{}"),
    ],
)
def test_payloads_that_are_not_what_cursor_documents_do_nothing_and_fail_nothing(
    app, monkeypatch, capsys, payload, answer
):
    assert run(monkeypatch, capsys, payload) == answer
    app.store.refresh()
    assert list(view_of(app.store, "activity").all_events()) == []


def test_a_journal_that_is_a_link_or_full_is_not_written(tmp_path, monkeypatch):
    target = tmp_path / "elsewhere.txt"
    target.write_text("")
    link = tmp_path / "j.jsonl"
    link.symlink_to(target)
    assert cursor_events.append(link, {"event": "afterFileEdit", "file_path": "x"}) is False
    assert target.read_text() == ""
    monkeypatch.setattr(cursor_events, "MAX_JOURNAL", 10)
    full = tmp_path / "full.jsonl"
    full.write_text("x" * 20)
    assert cursor_events.append(full, {"event": "afterFileEdit", "file_path": "x"}) is False


def test_install_cursor_writes_its_hooks_with_the_store_settings(tmp_path):
    home = tmp_path / "home"
    command = ["/opt/contextflow/bin/contextflow"]
    install("cursor", home=home, command=command, env={"CONTEXTFLOW_STORE": "/data/store"})
    hooks = json.loads((home / ".cursor" / "hooks.json").read_text())
    assert hooks["version"] == 1
    expected = (
        "env CONTEXTFLOW_STORE=/data/store CONTEXTFLOW_CLIENT=cursor /opt/contextflow/bin/contextflow hook cursor"
    )
    assert hooks["hooks"] == {event: [{"command": expected}] for event in cursor_events.EVENTS}
    again = install("cursor", home=home, command=command, env={"CONTEXTFLOW_STORE": "/data/store"})
    assert not any(change.changed for change in again)
