"""`contextflow import` of past sessions: Claude Code transcripts and Codex rollouts, read by the
capture parsers into the same activity and automatic handoff the live hooks store (the fixtures
are the capture suite's real client records)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextflow.capture.turns import TURN_KIND
from contextflow.core.clock import stamp_ms
from contextflow.core.errors import InputError
from contextflow.core.timeutil import iso_ms
from contextflow.imports.run import run_import
from contextflow.sessions import core as sessions
from tests.folding import view_of
from tests.test_capture import CLAUDE, CODEX, FIXTURES, client_payload, run_hook

PROJECT = "example-owner/calc-demo"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The session's working folder: a repository whose remote names the project."""
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    (work / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:Example-Owner/calc-demo.git\n')
    return work


def place(tmp_path: Path, repo: Path, client: tuple[str, str, str, str]) -> tuple[dict[str, object], Path]:
    """The client's record where the client keeps it (under tmp_path/home), its folder moved to `repo`."""
    return client_payload(tmp_path, repo, *client)


def activity(app):
    app.store.refresh()
    return list(view_of(app.store, "activity").all_events())


@pytest.mark.parametrize("client", [CLAUDE, CODEX], ids=["claude-code", "codex"])
def test_a_past_session_becomes_its_activity_and_automatic_handoff_dated_when_it_happened(app, tmp_path, repo, client):
    payload, transcript = place(tmp_path, repo, client)
    report = run_import(app, str(transcript.parent))
    assert report.format == ("codex" if "codex" in client[0] else "claude-code")
    assert report.stored == {"turn": 1, "handoff": 1}
    (turn,) = activity(app)
    assert turn.kind == TURN_KIND and turn.data["project"] == PROJECT
    assert turn.data["session_id"] == payload["session_id"] and turn.data["turn"]["files"]["created"] == ["calc.py"]
    handoff = sessions.latest_handoff(app, sessions.EntryFilter(PROJECT, session_id=str(payload["session_id"])))
    assert handoff is not None and handoff.data["auto"] is True
    assert handoff.data["summary"].startswith("[automatic handoff] I decided to coerce inputs with int().")
    entries = [json.loads(line) for line in transcript.read_text().splitlines() if line.strip()]
    last = max(ms for entry in entries if (ms := iso_ms(entry.get("timestamp"))) is not None)
    assert stamp_ms(handoff.hlc) == stamp_ms(turn.hlc) == last


def test_importing_the_sessions_again_stores_nothing(app, tmp_path, repo):
    _, transcript = place(tmp_path, repo, CLAUDE)
    run_import(app, str(transcript))
    again = run_import(app, str(transcript))
    assert again.stored == {} and again.present == {"turn": 1}
    assert again.skipped == {"session that has a handoff": 1}


@pytest.mark.parametrize("client", [CLAUDE, CODEX], ids=["claude-code", "codex"])
def test_a_session_captured_live_is_not_stored_again_by_an_import(app, tmp_path, monkeypatch, capsys, repo, client):
    payload, transcript = place(tmp_path, repo, client)
    run_hook(monkeypatch, capsys, "stop", payload)
    report = run_import(app, str(transcript))
    assert report.stored == {} and report.present == {"turn": 1}
    assert len(activity(app)) == 1


def test_a_torn_last_line_is_left_out_and_a_bad_line_elsewhere_refuses_the_file(app, tmp_path, repo):
    _, transcript = place(tmp_path, repo, CLAUDE)
    text = transcript.read_text()
    transcript.write_text(text + '{"type":"user","message":')  # a write cut short: no newline after it
    assert run_import(app, str(transcript)).stored == {"turn": 1, "handoff": 1}
    lines = text.splitlines()
    lines[3] = "{not json"
    transcript.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=rf"{transcript}:4: not valid JSON"):
        run_import(app, str(transcript), fmt="claude-code")


def test_a_dry_run_of_a_folder_lists_each_sessions_events(app, tmp_path, repo):
    _, transcript = place(tmp_path, repo, CLAUDE)
    report = run_import(app, str(transcript.parent), dry_run=True)
    assert [p.what for p in report.planned] == ["turn", "handoff"] and activity(app) == []
    assert "Would store 1 turn, 1 handoff" in report.text()


def test_the_format_of_a_transcript_file_is_detected(tmp_path, repo):
    from contextflow.imports.detect import detect_bytes

    for client, fmt in ((CLAUDE, "claude-code"), (CODEX, "codex")):
        _, transcript = place(tmp_path, repo, client)
        assert detect_bytes(str(transcript), transcript.read_bytes()) == fmt
    assert FIXTURES.is_dir()


def test_a_session_that_only_talked_stores_its_turns_and_no_automatic_handoff(app, tmp_path):
    folder = tmp_path / "home" / ".claude" / "projects" / "-work"
    folder.mkdir(parents=True)
    answer = [{"type": "text", "text": "Adds."}]
    common = {"isSidechain": False, "sessionId": "s-talk", "cwd": str(tmp_path), "timestamp": "2026-01-02T10:00:00Z"}
    lines = [
        {**common, "type": "user", "message": {"role": "user", "content": "What does calc.add do?"}},
        {**common, "type": "assistant", "message": {"role": "assistant", "content": answer}},
    ]
    (folder / "s-talk.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    report = run_import(app, str(folder.parent))
    assert report.stored == {"turn": 1} and report.skipped == {"session that only talked": 1}
