"""Codex CLI (from npm) reads the documented `~/.codex/config.toml` entry and `codex mcp add` command.

`codex mcp get` only reads the configuration (Codex starts MCP servers in a model session,
which needs an account), so this checks that Codex understands the documented setup exactly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import client_env, contextflow_command, describe, doc_snippets, run_bounded, with_on_path

pytestmark = pytest.mark.slow

DOCUMENTED_ENV = {
    "CONTEXTFLOW_STORE": "~/Sync/contextflow",
    "CONTEXTFLOW_WRITER": "laptop",
}


def codex_server(codex_bin: Path, env: dict[str, str], cwd: Path) -> dict[str, Any]:
    got = run_bounded([codex_bin, "mcp", "get", "contextflow", "--json"], env=env, cwd=cwd)
    assert got.returncode == 0, describe(got)
    return dict(json.loads(got.stdout))


def test_codex_reads_the_documented_config_toml_entry(codex_bin: Path, tmp_path: Path):
    (snippet,) = doc_snippets("Codex CLI", "toml")
    env = client_env()
    config = Path(env["HOME"]) / ".codex" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(snippet)

    server = codex_server(codex_bin, env, tmp_path)
    assert server["enabled"] is True
    transport = server["transport"]
    assert (transport["type"], transport["command"], transport["args"]) == ("stdio", "contextflow", ["serve"])
    assert transport["env"] == DOCUMENTED_ENV


def test_the_documented_codex_mcp_add_command_writes_the_same_entry(codex_bin: Path, tmp_path: Path):
    (snippet,) = doc_snippets("Codex CLI", "bash")
    env = with_on_path(client_env(), codex_bin.parent, contextflow_command().parent)
    home = Path(env["HOME"])
    ran = run_bounded(["bash", "-euc", snippet], env=env, cwd=tmp_path)
    assert ran.returncode == 0, describe(ran)
    assert "contextflow" in ran.stdout

    transport = codex_server(codex_bin, env, tmp_path)["transport"]
    assert (transport["command"], transport["args"]) == ("contextflow", ["serve"])
    assert transport["env"] == {**DOCUMENTED_ENV, "CONTEXTFLOW_STORE": f"{home}/Sync/contextflow"}
