"""Claude Code (from npm) registers `contextflow serve` and reports it Connected.

Claude Code runs with HOME pointed at this test's folder and its non-essential traffic and
telemetry turned off; where strace works, the test also checks that neither Claude Code nor
the server it starts opened a connection to anything but loopback.
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

pytestmark = pytest.mark.slow


def test_claude_code_adds_contextflow_for_the_user_and_lists_it_connected(claude_bin: Path, tmp_path: Path):
    home = Path(client_env()["HOME"])
    store, state = tmp_path / "claude-store", tmp_path / "claude-state"
    env = client_env()
    added = run_bounded(
        [
            claude_bin,
            "mcp",
            "add",
            "--scope",
            "user",
            "contextflow",
            "-e",
            f"CONTEXTFLOW_STORE={store}",
            "-e",
            f"CONTEXTFLOW_STATE={state}",
            "-e",
            "CONTEXTFLOW_WRITER=claude-e2e",
            "-e",
            "MCP_SHARED_CONTEXT_PROJECT=e2e",
            "--",
            contextflow_command(),
            "serve",
        ],
        env=env,
        cwd=tmp_path,
    )
    assert added.returncode == 0, describe(added)

    config = json.loads((home / ".claude.json").read_text())
    assert config["mcpServers"]["contextflow"] == {
        "type": "stdio",
        "command": str(contextflow_command()),
        "args": ["serve"],
        "env": {
            "CONTEXTFLOW_STORE": str(store),
            "CONTEXTFLOW_STATE": str(state),
            "CONTEXTFLOW_WRITER": "claude-e2e",
            "MCP_SHARED_CONTEXT_PROJECT": "e2e",
        },
    }

    trace_file = tmp_path / "network.trace"
    listing = [claude_bin, "mcp", "list"]
    traced = traced_network(listing, trace_file)
    listed = run_bounded(traced or listing, env=env, cwd=tmp_path)
    assert listed.returncode == 0, describe(listed)
    assert re.search(r"^contextflow: .*contextflow serve - .*Connected\s*$", listed.stdout, re.M), describe(listed)
    assert (state / "stores").is_dir(), "the server did not get CONTEXTFLOW_STATE from Claude Code's -e flags"
    if traced:
        assert outside_connections(trace_file) == [], "Claude Code or the server reached outside this machine"


def test_claude_code_reports_a_server_that_cannot_start_as_failed(claude_bin: Path, tmp_path: Path):
    """The Connected check above means something: a broken store setting is not reported Connected."""
    env = client_env()
    added = run_bounded(
        [
            claude_bin,
            "mcp",
            "add",
            "--scope",
            "user",
            "contextflow",
            "-e",
            "CONTEXTFLOW_WRITER=not/valid",
            "--",
            contextflow_command(),
            "serve",
        ],
        env=env,
        cwd=tmp_path,
    )
    assert added.returncode == 0, describe(added)
    listed = run_bounded([claude_bin, "mcp", "list"], env=env, cwd=tmp_path)
    line = next((ln for ln in listed.stdout.splitlines() if ln.startswith("contextflow:")), "")
    assert line and "Connected" not in line, describe(listed)


def test_the_documented_claude_code_setup_connects(claude_bin: Path, tmp_path: Path):
    """docs/clients.md's command, run as written, with `contextflow` and `claude` found on PATH."""
    (snippet,) = doc_snippets("Claude Code", "bash")
    env = with_on_path(client_env(), claude_bin.parent, contextflow_command().parent)
    home = Path(env["HOME"])
    ran = run_bounded(["bash", "-euc", snippet], env=env, cwd=tmp_path)
    assert ran.returncode == 0, describe(ran)
    assert re.search(r"^contextflow: contextflow serve - .*Connected\s*$", ran.stdout, re.M), describe(ran)

    server = json.loads((home / ".claude.json").read_text())["mcpServers"]["contextflow"]
    assert server["command"] == "contextflow" and server["args"] == ["serve"]
    assert server["env"] == {
        "CONTEXTFLOW_STORE": f"{home}/Sync/contextflow",
        "CONTEXTFLOW_WRITER": "laptop",
    }
    assert server_state_made(home / "Sync" / "contextflow", home)
