"""A newcomer's first hour: what a command's help, the README or another interface promises holds."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from contextflow.adapters.cli import main
from contextflow.app import App
from tests.conftest import connect, git_checkout, text_of
from tests.folding import view_of

pytestmark = pytest.mark.anyio


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git checkout whose origin is acme/shop, the working folder."""
    work = git_checkout(tmp_path / "shop", "git@github.com:acme/shop.git")
    monkeypatch.chdir(work)
    return work


def projects_of(kind: str) -> set[str]:
    app = App.open()
    try:
        entries = view_of(app.store, "sessions").project_entries(None)
        return {str(e.data.get("project")) for e in entries if e.kind == kind}
    finally:
        app.close()


@pytest.mark.parametrize("command", [["note"], ["handoff"]])
def test_a_batch_files_its_items_in_the_project_a_single_write_uses(
    checkout: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    line = {"text": "x"} if command == ["note"] else {"summary": "x"}
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(line) + "\n"))
    assert main([*command, "--stdin", "--agent", "me"]) == 0
    assert projects_of(command[0]) == {"acme/shop"}


def test_a_batch_of_context_records_uses_the_repository_project_too(
    checkout: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps({"key": "k:1", "value": {"a": 1}}) + "\n"))
    assert main(["context", "set", "--stdin"]) == 0
    capsys.readouterr()
    assert main(["context", "get", "k:1", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["project"] == "acme/shop"


@pytest.mark.parametrize("command", [["doctor"], ["sessions"], ["context", "list"]])
def test_a_closed_pipe_ends_quietly_with_exit_0(tmp_path: Path, command: list[str]) -> None:
    main(["note", "one", "--agent", "me", "--session", "s"])
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before a byte is written (`| head -0`)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "contextflow", *command],
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    assert b"Traceback" not in done.stderr and b"BrokenPipe" not in done.stderr, done.stderr.decode()
    assert done.returncode == 0


@pytest.mark.parametrize(("word", "stored"), [("pause", "paused"), ("paused", "paused"), ("complete", "completed")])
def test_set_thread_takes_the_words_its_help_offers(word: str, stored: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["timeline", "create", "parser", "--format", "json"]) == 0
    thread = json.loads(capsys.readouterr().out)["id"]
    assert main(["timeline", "set-thread", thread, "--status", word]) == 0
    capsys.readouterr()
    assert main(["timeline", "threads", "--status", stored, "--format", "json"]) == 0
    assert [t["id"] for t in json.loads(capsys.readouterr().out)["threads"]] == [thread]


def test_set_thread_still_refuses_a_word_it_does_not_know(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["timeline", "create", "parser", "--format", "json"]) == 0
    thread = json.loads(capsys.readouterr().out)["id"]
    with pytest.raises(SystemExit) as refused:
        main(["timeline", "set-thread", thread, "--status", "stopped"])
    assert refused.value.code == 2 and "pause" in capsys.readouterr().err


async def test_choose_session_takes_format_as_in_contextflowmcps_readme(app: App) -> None:
    async with connect(app) as client:
        await client.call_tool("append_shared_note", {"agent": "a", "text": "x", "session_id": "s1"})
        chosen = await client.call_tool("choose_session", {"index": 1, "limit": 20, "format": "json"})
        assert not chosen.is_error, text_of(chosen)
        assert json.loads(text_of(chosen))["selected_session"]["session_id"] == "s1"
        refused = await client.call_tool("choose_session", {"index": 1, "colour": "red"})
        assert refused.is_error  # unknown arguments are still refused


async def test_resource_templates_are_an_empty_list_not_an_unknown_method(app: App) -> None:
    async with connect(app) as client:
        listed = await client.list_resource_templates()
        assert listed.resource_templates == []


def test_a_write_without_a_session_starts_one_the_next_agent_can_resume(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["note", "parser done", "--agent", "codex"]) == 0
    said = capsys.readouterr().out
    assert "No session was active: this started session" in said
    assert main(["handoff", "tests pass", "--agent", "codex"]) == 0
    capsys.readouterr()
    assert main(["sessions", "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)["sessions"]
    assert len(listed) == 1 and listed[0]["entry_count"] == 2
    assert main(["resume", listed[0]["session_id"]]) == 0
    assert "tests pass" in capsys.readouterr().out


def test_a_hit_holding_no_query_term_is_never_shown_as_a_plain_match(capsys: pytest.CaptureFixture[str]) -> None:
    for text, session in [
        ("the login token refresh returns 401 after an hour", "auth"),
        ("found bug in cart total rounding", "auth"),
        ("refresh the cache nightly", "cache"),
    ]:
        assert main(["note", text, "--agent", "a", "--session", session]) == 0
    capsys.readouterr()
    assert main(["search", "token refresh 401", "--format", "json"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    for result in results:
        assert result["matched"], result  # what matched, always: its own fields, or the entry beside it
    cart = next(r for r in results if "cart" in r["excerpt"])
    assert cart["weak"] or cart["matched"] == {"the entry beside it": ["401", "refresh", "token"]}
    assert main(["search", "token refresh 401"]) == 0
    assert "matched=only in the entry beside it: 401, refresh, token" in capsys.readouterr().out


def test_records_left_out_by_age_are_counted_and_the_page_shows_all(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from datetime import timedelta

    from starlette.testclient import TestClient

    from contextflow.adapters.ui.server import build_app, cookie_name
    from contextflow.core.timeutil import now as real_now
    from contextflow.records.present import orientation

    assert main(["context", "set", "fact:nas", '{"ip": "10.0.0.2"}']) == 0
    later = real_now() + timedelta(days=10)
    monkeypatch.setattr("contextflow.records.present.now", lambda: later)
    capsys.readouterr()
    assert main(["context", "list"]) == 0
    out = capsys.readouterr().out
    assert "1 older record(s) not updated in the last 7 days are left out" in out and "--since-days 0" in out
    assert main(["context", "list", "--since-days", "0"]) == 0
    assert "fact:nas" in capsys.readouterr().out
    app = App.open()
    try:
        assert "1 older record(s) left out" in orientation(app, now=later).text
        with TestClient(build_app(app, "t" * 32, 8765), base_url="http://127.0.0.1:8765") as ui:
            listed = ui.get("/api/records", headers={"cookie": f"{cookie_name(8765)}={'t' * 32}"}).json()
        assert [r["key"] for r in listed["records"]] == ["fact:nas"]
    finally:
        app.close()


def test_a_missing_import_path_exits_3_as_not_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", str(tmp_path / "missing.json")]) == 3
    assert "no such file or folder" in capsys.readouterr().err


def test_start_preview_prints_the_context_as_text_not_escaped_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["handoff", "parser done", "--agent", "a", "--session", "s", "--next", "wire the CLI"]) == 0
    capsys.readouterr()
    assert main(["start-preview", "--session", "s"]) == 0
    out = capsys.readouterr().out
    assert "\\n" not in out and "\n> parser done" in out
    assert main(["start-preview", "--session", "s", "--format", "json"]) == 0
    assert json.loads(json.loads(capsys.readouterr().out)["output"])["hookSpecificOutput"]


def test_counts_are_written_as_words_not_parenthesised_plurals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for n in range(2):
        assert main(["add", "--type", "fact", f"fact {n}"]) == 0
    capsys.readouterr()
    assert main(["list"]) == 0
    assert "2 nodes." in capsys.readouterr().out
    assert main(["export", "--to", "server-memory", "-o", str(tmp_path / "memory.json")]) == 0
    said = capsys.readouterr().out
    assert "(ies)" not in said and "(s)" not in said and "2 entities" in said


def test_help_names_commands_and_flags_not_mcp_tools(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["choose", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "list_sessions" not in out and "`contextflow sessions`" in out
    assert "by --session" in out and "session_id." not in out


def test_latest_in_a_new_active_session_says_so_and_shows_the_projects_latest(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["handoff", "first done", "--agent", "me", "--session", "one"]) == 0
    assert main(["handoff", "second done", "--agent", "me", "--session", "two"]) == 0
    assert main(["use", "fresh"]) == 0  # as the picker's "New session" does
    capsys.readouterr()
    assert main(["latest"]) == 0
    out = capsys.readouterr().out
    assert "active session fresh has no handoff yet" in out and "second done" in out and "project=acme/shop" in out
    assert main(["latest", "--session", "fresh"]) == 3  # asked for that session by name: not found, as before


def test_start_preview_says_whose_handoff_it_carries(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["handoff", "first done", "--agent", "me", "--session", "one"]) == 0
    assert main(["handoff", "second done", "--agent", "me", "--session", "two"]) == 0
    capsys.readouterr()
    assert main(["start-preview", "--session", "one", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["session_id"] == "one" and data["handoff_session_id"] == "two"
    assert main(["start-preview", "--session", "one"]) == 0
    assert "its handoff: the project's latest, from session two (not the session previewed" in capsys.readouterr().out
