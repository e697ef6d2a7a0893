"""Coming from ContextFlowMCP: the session its picker chose is the active one, its history is found
inside a repository, and its call shapes are accepted.

Its files are written here as ContextFlowMCP writes them (tests/test_contextflowmcp_files.py);
one test runs its own `pick-session.mjs` with Node when ContextFlowMCP is here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from contextflow.adapters.cli import main
from contextflow.app import App
from tests.conftest import connect, git_checkout, text_of
from tests.e2e.test_contextflowmcp_suite import find_contextflowmcp
from tests.test_contextflowmcp_files import append, entry, session_file

pytestmark = pytest.mark.anyio


@pytest.fixture
def context_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """ContextFlowMCP's file with two sessions in project `shared`, its default: `ui-fix` (a note
    and a handoff) and `other` (a later handoff)."""
    root = tmp_path / "shared" / ".mcp-shared-context.jsonl"
    monkeypatch.delenv("CONTEXTFLOW_STORE")
    monkeypatch.setenv("MCP_SHARED_CONTEXT_FILE", str(root))
    append(session_file(root, "ui-fix"), entry("ui note", "ui-fix", n=1, ts="2026-01-05T10:00:00.000Z"))
    append(
        session_file(root, "ui-fix"),
        entry("ui handoff", "ui-fix", kind="handoff", n=2, ts="2026-01-05T10:01:00.000Z"),
    )
    append(
        session_file(root, "other"),
        entry("other handoff", "other", kind="handoff", n=3, ts="2026-01-05T11:00:00.000Z"),
    )
    return root


async def test_its_active_session_file_is_the_active_session(context_file: Path) -> None:
    (context_file.parent / "active-session.txt").write_text("ui-fix\n", encoding="utf-8")
    app = App.open()
    try:
        async with connect(app) as client:
            resumed = await client.call_tool("resume_session", {"format": "json"})
            assert not resumed.is_error, text_of(resumed)
            assert json.loads(text_of(resumed))["session_id"] == "ui-fix"
            read = await client.call_tool("read_shared_context", {"format": "json"})
            assert [e.get("text") or e.get("summary") for e in json.loads(text_of(read))["entries"]] == [
                "ui note",
                "ui handoff",
            ]
            latest = await client.call_tool("get_latest_handoff", {"format": "json"})
            assert "ui handoff" in text_of(latest) and "other handoff" not in text_of(latest)
    finally:
        app.close()


async def test_choosing_a_session_writes_its_active_session_file(context_file: Path) -> None:
    assert main(["use", "other"]) == 0
    assert (context_file.parent / "active-session.txt").read_text(encoding="utf-8") == "other\n"


def test_its_file_not_in_use_keeps_the_active_session_in_the_state_folder(tmp_path: Path) -> None:
    assert main(["use", "mine"]) == 0
    assert not (tmp_path / "home" / "active-session.txt").exists()
    assert (tmp_path / "state").is_dir()


def test_a_fifo_as_its_active_session_file_never_blocks(context_file: Path) -> None:
    os.mkfifo(context_file.parent / "active-session.txt")
    app = App.open()
    try:
        from contextflow.sessions.core import active_session

        assert active_session(app) is None
    finally:
        app.close()


async def test_its_picker_chooses_and_contextflow_resumes(context_file: Path, tmp_path: Path) -> None:
    peer = find_contextflowmcp()
    node = shutil.which("node")
    if peer is None or node is None:
        pytest.skip("ContextFlowMCP's pick-session.mjs or Node is not here (tests/e2e/test_contextflowmcp_suite.py)")
    # its picker reads its index, else the single file: the session's lines there too (same ids, read once)
    append(context_file, *map(json.loads, session_file(context_file, "ui-fix").read_text().splitlines()))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONTEXTFLOW_", "MCP_SHARED_CONTEXT_"))}
    env.update(MCP_SHARED_CONTEXT_FILE=str(context_file), MCP_SHARED_CONTEXT_PROJECT="shared")
    picked = subprocess.run(
        [node, str(peer / "pick-session.mjs"), "--non-interactive", "--select", "id:ui-fix", "--json"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert picked.returncode == 0, picked.stderr
    assert json.loads(picked.stdout)["active_session_file"] == str(context_file.parent / "active-session.txt")
    app = App.open()
    try:
        async with connect(app) as client:
            resumed = await client.call_tool("resume_session", {})
            assert not resumed.is_error, text_of(resumed)
            assert "ui-fix" in text_of(resumed) and "ui handoff" in text_of(resumed)
    finally:
        app.close()


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git checkout whose origin is acme/shop, the working folder."""
    work = git_checkout(tmp_path / "shop", "https://github.com/acme/shop.git")
    monkeypatch.chdir(work)
    return work


def _legacy_sessions(context_file: Path) -> None:
    append(session_file(context_file, "cf-s1"), entry("cf note", "cf-s1", n=4, ts="2026-01-06T09:00:00.000Z"))
    append(session_file(context_file, "s1"), entry("s1 handoff", "s1", kind="handoff", n=5))


async def test_in_a_checkout_its_named_sessions_are_found_in_its_project(
    context_file: Path, checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _legacy_sessions(context_file)
    assert main(["read", "--session", "cf-s1"]) == 0
    out = capsys.readouterr().out
    assert "cf note" in out and "project=shared" in out
    app = App.open(cwd=checkout)
    try:
        assert app.settings.default_project == "acme/shop"
        async with connect(app) as client:
            resumed = await client.call_tool("resume_session", {"session_id": "s1"})
            assert not resumed.is_error, text_of(resumed)
            text = text_of(resumed)
            assert "s1 handoff" in text and "Found in project shared" in text and "acme/shop" in text
            wrong_place = await client.call_tool("resume_session", {"session_id": "s1", "project": "acme/shop"})
            assert wrong_place.is_error and "it is in project 'shared'" in text_of(wrong_place)
    finally:
        app.close()


def test_a_read_that_finds_nothing_here_says_where_entries_are(
    context_file: Path, checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["read"]) == 0
    out = capsys.readouterr().out
    assert "no matching entries" in out and "other projects: shared (3)" in out


def test_not_found_exits_3_as_the_readme_says(context_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["read", "--session", "nosuch"]) == 3
    assert "no session 'nosuch' in any project" in capsys.readouterr().err
    assert main(["latest", "--project", "empty"]) == 3
    assert main(["latest", "--project", "shared"]) == 0  # ContextFlowMCP's project has handoffs


async def test_json_replies_carry_its_keys_beside_contextflows(context_file: Path) -> None:
    app = App.open()
    try:
        async with connect(app) as client:
            read = json.loads(text_of(await client.call_tool("read_shared_context", {"format": "json", "limit": 5})))
            assert read["filters"]["limit"] == 5 and read["parseErrors"] == [] and "indexFile" in read
            assert read["file"] == str(context_file) or read["file"].endswith(".jsonl")
            listed = json.loads(text_of(await client.call_tool("list_sessions", {"format": "json"})))
            assert listed["filters"]["limit"] == 20 and listed["parseErrors"] == []
            assert listed["sessions"][0]["latest_ts_ms"] == 1767610800000  # 2026-01-05T11:00:00Z, `other`
            latest = json.loads(
                text_of(await client.call_tool("get_latest_handoff", {"session_id": "ui-fix", "format": "json"}))
            )
            assert {"file", "indexFile", "parseErrors", "handoff"} <= set(latest)
            resumed = json.loads(
                text_of(await client.call_tool("resume_session", {"session_id": "ui-fix", "format": "json"}))
            )
            assert {"file", "indexFile", "parseErrors", "latest_handoff", "entries"} <= set(resumed)
            prompts = {p.name: p.description for p in (await client.list_prompts()).prompts}
            assert prompts["resume_1"] == "other - 2026-01-05 11:00:00 | entries:1 | handoff:other handoff"
    finally:
        app.close()


async def test_a_malformed_line_is_named_in_parse_errors(context_file: Path) -> None:
    with session_file(context_file, "ui-fix").open("a") as out:
        out.write("{not json\n")
    app = App.open()
    try:
        async with connect(app) as client:
            read = json.loads(text_of(await client.call_tool("read_shared_context", {"format": "json"})))
            assert read["bad_lines"] == 1
            assert read["parseErrors"][0]["file"] == str(session_file(context_file, "ui-fix"))
            assert read["parseErrors"][0]["line"] == 3
    finally:
        app.close()


async def test_new_session_is_listed_with_the_id_it_would_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "feature-login", str(work)], check=True, timeout=30)
    monkeypatch.chdir(work)
    app = App.open(cwd=work)
    try:
        async with connect(app) as client:
            prompts = {p.name: p.description for p in (await client.list_prompts()).prompts}
            assert prompts["new_session"].startswith("New session (feature-login)")
            started = await client.get_prompt("new_session", {})
            assert "Active session selected: feature-login" in started.messages[0].content.text  # type: ignore[union-attr]
    finally:
        app.close()


def test_a_session_in_another_project_is_named_with_the_flag_on_the_command_line(
    context_file: Path, checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _legacy_sessions(context_file)
    assert main(["resume", "s1", "--project", "acme/shop"]) == 3
    assert "it is in project 'shared': pass --project='shared'" in capsys.readouterr().err
