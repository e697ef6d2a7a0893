"""Gemini CLI (from npm) reads the documented settings and reports `contextflow serve` Connected.

Gemini CLI runs with HOME in this test's folder. It starts no MCP server in a folder it does
not trust; OFFLINE_CLIENT_ENV sets GEMINI_CLI_TRUST_WORKSPACE=true, as docs/clients.md says.
The Cursor entry in the docs is checked to be the same server entry (Cursor is not on npm).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.e2e.conftest import (
    client_env,
    contextflow_command,
    describe,
    doc_snippets,
    outside_connections,
    run_bounded,
    server_state_made,
    traced_network,
    with_on_path,
)

CONNECTED = re.compile(r"^✓ contextflow: contextflow serve \(stdio\) - Connected\s*$", re.M)
DOCUMENTED_ENV = {
    "CONTEXTFLOW_STORE": "~/Sync/contextflow",
    "CONTEXTFLOW_WRITER": "laptop",
}


def write_documented_settings(home: Path) -> None:
    (snippet,) = doc_snippets("Gemini CLI", "json")
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(snippet)


@pytest.mark.slow
def test_gemini_cli_lists_the_documented_server_connected(gemini_bin: Path, tmp_path: Path):
    env = with_on_path(client_env(), contextflow_command().parent)
    home = Path(env["HOME"])
    write_documented_settings(home)

    trace_file = tmp_path / "network.trace"
    listing = [gemini_bin, "mcp", "list"]
    traced = traced_network(listing, trace_file)
    listed = run_bounded(traced or listing, env=env, cwd=tmp_path)
    assert listed.returncode == 0, describe(listed)
    assert CONNECTED.search(listed.stdout + listed.stderr), describe(listed)
    assert server_state_made(home / "Sync" / "contextflow", home), "CONTEXTFLOW_STORE did not reach the server"
    if traced:
        assert outside_connections(trace_file) == [], "Gemini CLI or the server reached outside this machine"


@pytest.mark.slow
def test_gemini_cli_keeps_the_server_disabled_in_an_untrusted_folder(gemini_bin: Path, tmp_path: Path):
    env = with_on_path(client_env(), contextflow_command().parent)
    del env["GEMINI_CLI_TRUST_WORKSPACE"]
    write_documented_settings(Path(env["HOME"]))
    listed = run_bounded([gemini_bin, "mcp", "list"], env=env, cwd=tmp_path)
    output = listed.stdout + listed.stderr
    assert re.search(r"contextflow: contextflow serve \(stdio\) - Disabled", output), describe(listed)


@pytest.mark.slow
def test_the_documented_gemini_mcp_add_command_writes_the_documented_entry(gemini_bin: Path, tmp_path: Path):
    (snippet,) = doc_snippets("Gemini CLI", "bash")
    env = with_on_path(client_env(), gemini_bin.parent, contextflow_command().parent)
    home = Path(env["HOME"])
    ran = run_bounded(["bash", "-euc", snippet], env=env, cwd=tmp_path)
    assert ran.returncode == 0, describe(ran)
    assert CONNECTED.search(ran.stdout + ran.stderr), describe(ran)

    server = json.loads((home / ".gemini" / "settings.json").read_text())["mcpServers"]["contextflow"]
    assert server == {
        "command": "contextflow",
        "args": ["serve"],
        "env": {**DOCUMENTED_ENV, "CONTEXTFLOW_STORE": f"{home}/Sync/contextflow"},
    }


def test_documented_gemini_and_cursor_entries_are_the_same_server():
    (gemini,) = doc_snippets("Gemini CLI", "json")
    (cursor,) = doc_snippets("Cursor", "json")
    entry = {"command": "contextflow", "args": ["serve"], "env": DOCUMENTED_ENV}
    assert json.loads(gemini) == json.loads(cursor) == {"mcpServers": {"contextflow": entry}}
