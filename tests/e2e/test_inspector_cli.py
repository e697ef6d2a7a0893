"""The official MCP Inspector CLI (from npm) drives `contextflow serve` over stdio.

The inspector starts the server itself; the store, state and writer reach the server only
through the inspector's `-e KEY=VALUE` flags (the test's own environment carries none).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contextflow.sessions import core as sessions
from tests.conftest import open_app
from tests.e2e.conftest import client_env, contextflow_command, describe, run_bounded

pytestmark = pytest.mark.slow

SESSION_TOOLS = {
    "read_shared_context",
    "append_shared_note",
    "write_shared_handoff",
    "get_latest_handoff",
    "list_sessions",
    "choose_session",
    "resume_session",
}


@pytest.fixture
def inspect(inspector_bin: Path, tmp_path: Path):
    """Run one inspector CLI call against a fresh server process; returns (exit code, JSON, stderr)."""
    server_vars = {
        "CONTEXTFLOW_STORE": str(tmp_path / "inspector-store"),
        "CONTEXTFLOW_STATE": str(tmp_path / "inspector-state"),
        "CONTEXTFLOW_WRITER": "inspector-e2e",
        "MCP_SHARED_CONTEXT_PROJECT": "e2e",
        "HOME": str(tmp_path / "home"),
    }
    flags = [part for key, value in server_vars.items() for part in ("-e", f"{key}={value}")]

    def run(*method_args: str) -> tuple[int, Any, str]:
        result = run_bounded(
            [inspector_bin, "--cli", *flags, contextflow_command(), "serve", *method_args],
            env=client_env(),
            cwd=tmp_path,
        )
        try:
            output = json.loads(result.stdout)
        except ValueError:
            pytest.fail(f"the inspector printed no JSON result\n{describe(result)}")
        return result.returncode, output, result.stderr

    return run


def test_inspector_lists_the_session_tools_with_portable_schemas(inspect):
    code, listed, stderr = inspect("--method", "tools/list", "--strict")
    assert code == 0, stderr  # --strict exits 6 on an error-severity schema portability problem
    tools = {tool["name"]: tool for tool in listed["tools"]}
    assert set(tools) >= SESSION_TOOLS
    for tool in tools.values():
        assert tool["inputSchema"]["type"] == "object"
        assert tool["description"]
    assert tools["append_shared_note"]["inputSchema"]["required"] == ["agent"]
    assert tools["read_shared_context"]["annotations"]["readOnlyHint"] is True


def test_inspector_appends_a_note_that_reaches_the_store_and_reads_back(inspect, tmp_path):
    code, written, stderr = inspect(
        "--method",
        "tools/call",
        "--tool-name",
        "append_shared_note",
        "--tool-arg",
        "agent=inspector",
        "--tool-arg",
        "text=written by the MCP Inspector",
        "--tool-arg",
        "session_id=inspected",
    )
    assert code == 0, stderr
    assert written["isError"] is False
    assert written["structuredContent"]["agent"] == "inspector"
    assert written["structuredContent"]["project"] == "e2e"
    note_id = written["structuredContent"]["id"]

    store = open_app("checker", CONTEXTFLOW_STORE=str(tmp_path / "inspector-store"))
    try:
        entries = sessions.read_entries(store, sessions.EntryFilter("e2e"))
    finally:
        store.close()
    assert [(e.id, e.writer, e.data["text"]) for e in entries] == [
        (note_id, "inspector-e2e", "written by the MCP Inspector")
    ]

    code, read, stderr = inspect(
        "--method",
        "tools/call",
        "--tool-name",
        "read_shared_context",
        "--tool-arg",
        "session_id=inspected",
    )
    assert code == 0, stderr
    assert "> written by the MCP Inspector" in read["content"][0]["text"]


def test_inspector_sees_a_bad_argument_as_a_tool_error_with_a_helpful_message(inspect):
    code, result, _ = inspect(
        "--method",
        "tools/call",
        "--tool-name",
        "append_shared_note",
        "--tool-arg",
        "agent=inspector",
        "--tool-arg",
        "limit=3",
    )
    assert code != 0  # the inspector exits non-zero on an isError result
    assert result["isError"] is True
    assert "does not take 'limit'" in result["content"][0]["text"]
    assert "accepts: agent, text" in result["content"][0]["text"]


def test_inspector_gets_the_session_prompts(inspect):
    code, started, stderr = inspect("--method", "prompts/get", "--prompt-name", "new_session")
    assert code == 0, stderr
    assert "Active session selected: " in started["messages"][0]["content"]["text"]

    inspect(
        "--method",
        "tools/call",
        "--tool-name",
        "append_shared_note",
        "--tool-arg",
        "agent=inspector",
        "--tool-arg",
        "text=first step",
        "--tool-arg",
        "session_id=named",
    )
    code, listed, stderr = inspect("--method", "prompts/list")
    assert code == 0, stderr
    names = [p["name"] for p in listed["prompts"]]
    assert names[:3] == ["new_session", "resume_1", "resume_by_id"]  # the other groups' prompts follow

    code, resumed, stderr = inspect(
        "--method", "prompts/get", "--prompt-name", "resume_by_id", "--prompt-args", "session_id=named"
    )
    assert code == 0, stderr
    assert "first step" in resumed["messages"][0]["content"]["text"]


def test_inspector_reads_the_info_resource_with_the_store_it_passed(inspect, tmp_path):
    code, read, stderr = inspect("--method", "resources/read", "--uri", "shared-context://info")
    assert code == 0, stderr
    info = json.loads(read["contents"][0]["text"])
    assert info["store"] == str(tmp_path / "inspector-store")
    assert info["chosen_by"] == "CONTEXTFLOW_STORE"
    assert info["writer"] == "inspector-e2e"
