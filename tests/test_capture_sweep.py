"""Nothing lost to a killed client: a session start (and each Stop) first captures the turns of this
repository's transcripts that no hook read, from each client's own records, through the hooks' own
capture path; what a hook stored is never stored again, and an unchanged transcript costs a stat."""

from __future__ import annotations

import hashlib
import io
import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from contextflow.adapters.cli import main
from contextflow.capture import core, sweep, transcript
from contextflow.capture.health import capture_health, health_lines
from tests.folding import view_of

FIXTURES = Path(__file__).parent / "fixtures" / "capture"
SESSION = "11111111-2222-3333-4444-555555555555"
REPLY = "Tests pass. Now building the release."


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    return work


def claude_folder(home: Path, repo: Path) -> Path:
    return home / ".claude" / "projects" / "".join(c if c.isalnum() else "-" for c in str(repo))


def entry(kind: str, content: object, uuid: str, repo: Path, **extra: object) -> str:
    line = {"parentUuid": None, "isSidechain": False, "cwd": str(repo), "sessionId": SESSION, "type": kind}
    line.update({"uuid": uuid, "timestamp": "2026-01-15T10:30:00.000Z", "message": {"role": kind, "content": content}})
    return json.dumps({**line, **extra})


def killed_transcript(home: Path, repo: Path) -> Path:
    """A Claude Code session killed while its second command ran: a Bash call with its result, the
    reply, then a Bash call whose result never came, and no Stop hook ever ran."""
    lines = [
        entry("user", "Fix the parser and run the tests", "u1", repo),
        entry(
            "assistant",
            [
                {"type": "text", "text": "I will run the tests."},
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "Bash",
                    "input": {"command": "pytest -q tests/test_parser.py"},
                },
            ],
            "a1",
            repo,
        ),
        entry("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "3 passed"}], "u2", repo),
        entry(
            "assistant",
            [
                {"type": "text", "text": REPLY},
                {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "make release"}},
            ],
            "a2",
            repo,
        ),
    ]
    path = claude_folder(home, repo) / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return aged(path)


def aged(path: Path, seconds: float = 60) -> Path:
    """Written a while ago: the client stopped writing it (a transcript written this instant is a
    running session's, which its own hooks read)."""
    then = time.time() - seconds
    os.utime(path, (then, then))
    return path


def hook(monkeypatch, capsys, event: str, payload: dict, client: str | None = None) -> tuple[str, str]:
    if client:
        monkeypatch.setenv("CONTEXTFLOW_CLIENT", client)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode())))
    assert main(["hook", event]) == 0
    out, err = capsys.readouterr()
    return out, err


def session_start(monkeypatch, capsys, repo: Path, client: str) -> str:
    payload = {"session_id": f"new-{client}", "cwd": str(repo), "hook_event_name": "SessionStart"}
    out, err = hook(monkeypatch, capsys, "session-start", payload, client)
    assert "did nothing" not in err, err
    return str(json.loads(out)["hookSpecificOutput"]["additionalContext"]) if out else ""


def turns(app) -> list[dict]:
    app.store.refresh()
    return [event.data for event in view_of(app.store, "activity").all_events()]


def test_a_killed_claude_session_reaches_the_next_claude_and_gemini_session_starts(
    app, tmp_path, monkeypatch, capsys, repo
):
    killed_transcript(tmp_path / "home", repo)
    for client in ("claude-code", "gemini-cli"):
        shown = session_start(monkeypatch, capsys, repo, client)
        assert REPLY in shown  # the last reply
        assert "make release" in shown and "pytest -q tests/test_parser.py -> ok" in shown  # the last commands
        assert "`make release` has no known result" in shown  # run, never answered
    [captured] = turns(app)  # the second session start captured nothing again
    assert captured["session_id"] == SESSION and captured["agent"] == "claude-code"
    assert [c["command"] for c in captured["turn"]["commands"]] == ["pytest -q tests/test_parser.py", "make release"]


def test_what_the_stop_hook_stored_is_not_stored_again_and_the_lagging_bytes_are_read_once(
    app, tmp_path, monkeypatch, capsys, repo
):
    path = killed_transcript(tmp_path / "home", repo)
    payload = {"session_id": SESSION, "transcript_path": str(path), "cwd": str(repo), "hook_event_name": "Stop"}
    hook(monkeypatch, capsys, "stop", payload, "claude-code")
    assert len(turns(app)) == 1
    with open(path, "a") as handle:  # what Claude Code writes after the Stop hook: the result, the last reply
        handle.write(entry("user", [{"type": "tool_result", "tool_use_id": "t2", "content": "built"}], "u3", repo))
        handle.write("\n" + entry("assistant", [{"type": "text", "text": "Released."}], "a3", repo) + "\n")
    aged(path)
    session_start(monkeypatch, capsys, repo, "claude-code")
    stored = turns(app)
    assert len(stored) == 2 and stored[1]["turn"].get("continued")  # the result: a continued turn, once
    assert stored[1]["turn"]["commands"] == [{"command": "make release", "exit": 0}]
    session_start(monkeypatch, capsys, repo, "claude-code")
    assert len(turns(app)) == 2


def test_an_unchanged_transcript_costs_a_stat_and_a_running_one_is_left_to_its_hooks(
    app, tmp_path, monkeypatch, capsys, repo
):
    path = killed_transcript(tmp_path / "home", repo)
    session_start(monkeypatch, capsys, repo, "claude-code")
    read: list[str] = []
    real = core.handle

    def counted(hook, *rest, **named):
        if hook.event == transcript.SWEPT:
            read.append(hook.transcript)
        return real(hook, *rest, **named)

    monkeypatch.setattr(core, "handle", counted)
    session_start(monkeypatch, capsys, repo, "claude-code")
    assert read == []  # caught up, unchanged: not opened again
    with open(path, "a") as handle:  # a session running now: written this instant
        handle.write(entry("user", "and now the docs", "u9", repo) + "\n")
    session_start(monkeypatch, capsys, repo, "claude-code")
    assert read == [] and len(turns(app)) == 1
    aged(path, 1_000)  # long quiet: even a Stop hook of another session takes it
    payload = {"session_id": "other", "cwd": str(repo), "hook_event_name": "Stop", "last_assistant_message": "ok"}
    hook(monkeypatch, capsys, "stop", payload, "claude-code")
    assert read == [str(path)] and [t["turn"]["request"] for t in turns(app)][-1] == "and now the docs"


def test_codex_and_gemini_transcripts_of_this_repository_are_swept_and_others_left(
    app, tmp_path, monkeypatch, capsys, repo
):
    home = tmp_path / "home"
    codex_root = "/work/research/capture/runs/codex-full/work"
    day = home / ".codex" / "sessions" / "2026" / "11" / "25"
    day.mkdir(parents=True)
    ours = day / "rollout-2026-11-25T20-52-37-01a2147b.jsonl"
    ours.write_text((FIXTURES / "codex-rollout.jsonl").read_text().replace(codex_root, str(repo)))
    elsewhere = day / "rollout-2026-11-25T21-00-00-other.jsonl"
    elsewhere.write_text((FIXTURES / "codex-rollout.jsonl").read_text().replace(codex_root, str(tmp_path / "other")))
    gemini_root = "/work/research/capture/runs/gemini-full/work"
    text = (FIXTURES / "gemini-chat.jsonl").read_text().replace(gemini_root, str(repo))
    text = text.replace(
        hashlib.sha256(gemini_root.encode()).hexdigest(), hashlib.sha256(str(repo).encode()).hexdigest()
    )
    chats = home / ".gemini" / "tmp" / repo.name / "chats"
    chats.mkdir(parents=True)
    chat = chats / "session-2026-11-25T20-50-d282a7b4.jsonl"
    chat.write_text(text)
    for path in (ours, elsewhere, chat):
        aged(path)
    shown = session_start(monkeypatch, capsys, repo, "claude-code")
    stored = turns(app)
    assert sorted(t["agent"] for t in stored) == ["codex", "gemini-cli"]
    assert {t["session_id"] for t in stored} == {
        "01a2147b-57e5-7e13-ad79-97964f351a0f",
        "d282a7b4-49fe-4f13-a477-9b8e01d9786f",
    }
    assert "Next step: add a CLI entry point." in shown
    session_start(monkeypatch, capsys, repo, "gemini-cli")
    assert len(turns(app)) == 2


def test_opencode_sessions_of_this_repository_are_swept_from_its_database(app, tmp_path, monkeypatch, capsys, repo):
    sample = json.loads((FIXTURES / "opencode-session.json").read_text())
    database = tmp_path / "home" / ".local" / "share" / "opencode" / "opencode.db"
    database.parent.mkdir(parents=True)
    connection = sqlite3.connect(database)
    for statement in sample["schema"]:
        connection.execute(statement)
    for row in sample["message"]:
        data = row["data"].replace("/home/u/shop", str(repo))
        connection.execute(
            "INSERT INTO message VALUES (?, ?, ?, ?, ?)",
            (row["id"], row["session_id"], row["time_created"], row["time_updated"], data),
        )
    for row in sample["part"]:
        values = (
            row["id"],
            row["message_id"],
            row["session_id"],
            row["time_created"],
            row["time_updated"],
            row["data"],
        )
        connection.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", values)
    connection.commit()
    connection.close()
    aged(database)
    session_start(monkeypatch, capsys, repo, "claude-code")
    [stored] = turns(app)
    assert stored["agent"] == "opencode" and stored["turn"]["final"] == "I set x to 2.  Next: add a CLI."
    session_start(monkeypatch, capsys, repo, "claude-code")
    assert len(turns(app)) == 1


def test_the_sweep_reads_no_more_than_its_bound_and_names_the_rest_in_doctor(app, tmp_path, monkeypatch, capsys, repo):
    monkeypatch.setattr(sweep, "MAX_UNREAD", 1_000)
    path = killed_transcript(tmp_path / "home", repo)
    session_start(monkeypatch, capsys, repo, "claude-code")
    assert turns(app) == []
    [row] = capture_health(Path(app.store.state_dir))
    assert row["client"] == "claude-code" and row["not_swept"] == [
        f"{path}: more than a sweep reads (0.0 MB not read yet); `contextflow import` its folder stores it"
    ]
    assert any("not swept:" in line for line in health_lines([row]))


def test_a_sweep_reads_a_bounded_part_and_the_rest_at_the_next_hook(app, tmp_path, monkeypatch, capsys, repo):
    path = killed_transcript(tmp_path / "home", repo)
    lines = path.read_bytes().splitlines(keepends=True)
    monkeypatch.setattr(transcript, "SWEPT_READ", len(lines[0]) + len(lines[1]) + 10)  # two lines a sweep
    session_start(monkeypatch, capsys, repo, "claude-code")
    [first] = turns(app)
    assert first["turn"]["request"] == "Fix the parser and run the tests" and not first["turn"].get("commands")
    session_start(monkeypatch, capsys, repo, "claude-code")  # the rest: the result came, not "no result"
    shown = session_start(monkeypatch, capsys, repo, "claude-code")
    commands = [c for t in turns(app) for c in t["turn"].get("commands", [])]
    assert commands == [
        {"command": "pytest -q tests/test_parser.py", "exit": 0},
        {"command": "make release", "exit": None},
    ]
    assert REPLY in shown and "`make release` has no known result" in shown


def test_with_capture_off_the_sweep_reads_nothing_and_later_captures_it_all(app, tmp_path, monkeypatch, capsys, repo):
    killed_transcript(tmp_path / "home", repo)
    (repo / core.OFF_FILE).write_text("")
    session_start(monkeypatch, capsys, repo, "claude-code")
    assert turns(app) == []
    (repo / core.OFF_FILE).unlink()
    session_start(monkeypatch, capsys, repo, "claude-code")
    assert len(turns(app)) == 1


def test_a_killed_sessions_directives_are_carried_out_once(app, tmp_path, monkeypatch, capsys, repo):
    from contextflow.graph import writes

    path = killed_transcript(tmp_path / "home", repo)
    remember = '<ctx:remember type="decision">Releases are cut from main only</ctx:remember>'
    with open(path, "a") as handle:
        handle.write(entry("assistant", [{"type": "text", "text": f"Noted. {remember}"}], "a3", repo) + "\n")
    aged(path)
    for _ in range(2):
        session_start(monkeypatch, capsys, repo, "gemini-cli")
    graph = writes.graph(app)
    assert [graph.nodes[i].content for i in graph.live] == ["Releases are cut from main only"]


def test_a_hook_call_opens_the_store_once_and_closes_it(app, tmp_path, monkeypatch, capsys, repo):
    """The killed session's directives, its turns and the session start's answer share one App, closed
    when the call ends (each opened its own, and closed its connection to the tables, before)."""
    from contextflow.app import App

    path = killed_transcript(tmp_path / "home", repo)
    remember = '<ctx:remember type="decision">Releases are cut from main only</ctx:remember>'
    with open(path, "a") as handle:
        handle.write(entry("assistant", [{"type": "text", "text": f"Noted. {remember}"}], "a3", repo) + "\n")
    aged(path)
    opened: list[App] = []
    closed: list[App] = []
    open_app, close_app = App.open.__func__, App.close

    def counted_open(cls, *args, **kwargs):
        opened.append(open_app(cls, *args, **kwargs))
        return opened[-1]

    def counted_close(self):
        closed.append(self)
        close_app(self)

    monkeypatch.setattr(App, "open", classmethod(counted_open))
    monkeypatch.setattr(App, "close", counted_close)
    shown = session_start(monkeypatch, capsys, repo, "claude-code")
    assert "Releases are cut from main only" in shown and "make release" in shown  # the directive, the turns
    assert len(opened) == 1 and closed == opened


def test_the_clients_own_variables_move_their_folders(app, tmp_path, monkeypatch, capsys, repo):
    config = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    moved = claude_folder(tmp_path / "x", repo).relative_to(tmp_path / "x" / ".claude")
    path = killed_transcript(tmp_path / "home", repo)
    (config / moved).parent.mkdir(parents=True)
    os.replace(path.parent, config / moved)
    session_start(monkeypatch, capsys, repo, "claude-code")
    assert [t["agent"] for t in turns(app)] == ["claude-code"]
