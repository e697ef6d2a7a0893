"""ContextFlowMCP's own test suite run against `contextflow serve`, and both servers on one file.

ContextFlowMCP (MIT, a dependency-free Node server) is no package of any registry. It is found in
CONTEXTFLOWMCP_DIR, else at `shared/peers/contextflowmcp` in a folder above this repository (where
CI lays `shared/` beside its clone); without it, or without Node 18+, these tests skip and say why.
Its tests start their server in `test-utils/mcp-line-client.mjs`, which starts `$CF_BIN serve`
when CF_BIN is set: its folder is copied to a temporary one and run with CF_BIN naming contextflow
(a copy without that hook gets a one-line patch there). None of its code is kept in this repository.

Of its 12 tests, 9 pass; the 3 others test details of that project, each explained in
docs/contextflowmcp.md (KNOWN_FAILURES). A failure outside that list fails this suite.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import REPO, contextflow_command, describe, run_bounded

pytestmark = pytest.mark.slow

PASS_FLOOR = 9
KNOWN_FAILURES = {  # its test -> why it cannot pass against contextflow (docs/contextflowmcp.md)
    "append_shared_note rejects missing text/content at runtime": "a tool's input error is an isError result",
    "writes one JSONL file per session and keeps a shared index file": "contextflow writes its own log, not "
    "ContextFlowMCP's session files and index",
    "context file size guard blocks oversized session reads": "it finds the file to grow through ContextFlowMCP's "
    "session folder, which contextflow reads but never writes",
}
ORIGINAL_SPAWN = 'spawn(process.execPath, ["server.mjs"], {'
HOOKED_SPAWN = 'spawn(process.env.CF_BIN || process.execPath, process.env.CF_BIN ? ["serve"] : ["server.mjs"], {'
SUITE_TIMEOUT = 600.0
REPLY_TIMEOUT = 30.0
_ISOLATED_PREFIXES = ("CONTEXTFLOW_", "MCP_SHARED_CONTEXT_", "XDG_")


def find_contextflowmcp() -> Path | None:
    """Its folder: CONTEXTFLOWMCP_DIR, else `shared/peers/contextflowmcp` above the repository."""
    named = os.environ.get("CONTEXTFLOWMCP_DIR", "").strip()
    candidates = [Path(named)] if named else [folder / "shared" / "peers" / "contextflowmcp" for folder in REPO.parents]
    return next((folder for folder in candidates if (folder / "server.mjs").is_file()), None)


@pytest.fixture
def contextflowmcp() -> Path:
    folder = find_contextflowmcp()
    if folder is None:
        where = os.environ.get("CONTEXTFLOWMCP_DIR") or f"shared/peers/contextflowmcp above {REPO}"
        pytest.skip(f"ContextFlowMCP is not here (looked in {where}); set CONTEXTFLOWMCP_DIR to a copy of it")
    node = shutil.which("node")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=False) if node else None
    major = re.match(r"v(\d+)\.", version.stdout) if version else None
    if not major or int(major[1]) < 18:
        pytest.skip("ContextFlowMCP's tests need Node 18 or later (`node --test`); none is on PATH")
    return folder


def isolated(tmp_path: Path, **extra: str) -> dict[str, str]:
    """An environment with no store or state settings, HOME and TMPDIR under this test's folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_ISOLATED_PREFIXES)}
    for name in ("home", "tmp"):
        (tmp_path / name).mkdir(exist_ok=True)
    return {**env, "HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp"), **extra}


def suite_copy(source: Path, target: Path) -> Path:
    """A writable copy of its folder whose test client starts `$CF_BIN serve`."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("node_modules", ".git"))
    for folder, _, names in os.walk(target):
        os.chmod(folder, 0o755)
        for name in names:
            os.chmod(os.path.join(folder, name), 0o644)
    client = target / "test-utils" / "mcp-line-client.mjs"
    text = client.read_text(encoding="utf-8")
    if "CF_BIN" not in text:
        assert ORIGINAL_SPAWN in text, f"{client} no longer starts its server as expected; update ORIGINAL_SPAWN"
        client.write_text(text.replace(ORIGINAL_SPAWN, HOOKED_SPAWN), encoding="utf-8")
    return target


def tap_results(output: str) -> dict[str, bool]:
    """Top-level test name -> passed, from `node --test --test-reporter=tap` output."""
    return {
        m["name"].strip(): not m["not"] for m in re.finditer(r"^(?P<not>not )?ok \d+ - (?P<name>.+)$", output, re.M)
    }


def test_contextflowmcps_own_suite_passes_against_contextflow_but_for_its_internal_details(
    contextflowmcp: Path, tmp_path: Path, record_property: Any
) -> None:
    suite = suite_copy(contextflowmcp, tmp_path / "contextflowmcp")
    env = isolated(tmp_path, CF_BIN=str(contextflow_command()))
    result = run_bounded(["node", "--test", "--test-reporter=tap"], env=env, cwd=suite, timeout=SUITE_TIMEOUT)
    results = tap_results(result.stdout)
    passed = sorted(name for name, ok in results.items() if ok)
    failed = sorted(name for name, ok in results.items() if not ok)
    record_property("contextflowmcp_suite", f"{len(passed)} of {len(results)} passed")
    print(f"ContextFlowMCP's suite against contextflow: {len(passed)} of {len(results)} passed")
    assert len(results) >= 12, f"expected its 12 tests, found {len(results)}\n{describe(result)}"
    unexplained = [name for name in failed if name not in KNOWN_FAILURES]
    assert not unexplained, f"failures not explained in docs/contextflowmcp.md: {unexplained}\n{describe(result)}"
    assert len(passed) >= PASS_FLOOR, describe(result)


class LineServer:
    """An MCP server over stdio, spoken to in newline-delimited JSON-RPC (what both servers read)."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path) -> None:
        self.process = subprocess.Popen(
            command, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.selector = selectors.DefaultSelector()
        assert self.process.stdout is not None
        self.selector.register(self.process.stdout, selectors.EVENT_READ)
        self.next_id = 0
        self.request(
            "initialize",
            {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "e2e", "version": "0"}},
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.process.stdout is not None
        deadline = time.monotonic() + REPLY_TIMEOUT
        while (left := deadline - time.monotonic()) > 0:
            if self.selector.select(left):
                line = self.process.stdout.readline()
                assert line, f"the server exited: {self.stop()}"
                answer = json.loads(line)
                if answer.get("id") == self.next_id:
                    assert "result" in answer, answer
                    return dict(answer["result"])
        raise AssertionError(f"no answer to {method} within {REPLY_TIMEOUT:.0f}s")

    def call(self, tool: str, **arguments: Any) -> str:
        result = self.request("tools/call", {"name": tool, "arguments": arguments})
        assert not result.get("isError"), result
        return "\n".join(block["text"] for block in result["content"])

    def stop(self) -> str:
        self.process.kill()
        self.process.wait(REPLY_TIMEOUT)
        self.selector.close()
        assert self.process.stderr is not None
        errors = self.process.stderr.read().decode(errors="replace")
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()
        return errors


def test_both_servers_on_one_file_show_contextflow_one_history(contextflowmcp: Path, tmp_path: Path) -> None:
    context_file = tmp_path / "shared" / "agent-context.jsonl"
    env = isolated(tmp_path, MCP_SHARED_CONTEXT_FILE=str(context_file), MCP_SHARED_CONTEXT_PROJECT="both")
    theirs = LineServer(["node", str(contextflowmcp / "server.mjs")], env, contextflowmcp)
    ours = LineServer([str(contextflow_command()), "serve"], {**env, "CONTEXTFLOW_WRITER": "e2e"}, tmp_path)
    try:
        assert "from ContextFlowMCP" not in ours.call("read_shared_context", session_id="s")
        theirs.call("append_shared_note", agent="codex", session_id="s", text="note from ContextFlowMCP")
        theirs.call("write_shared_handoff", agent="codex", session_id="s", summary="handoff from ContextFlowMCP")
        seen = ours.call("read_shared_context", session_id="s")  # the same process: read live
        assert "note from ContextFlowMCP" in seen and "handoff from ContextFlowMCP" in seen
        assert "handoff from ContextFlowMCP" in ours.call("get_latest_handoff", session_id="s")
        ours.call("append_shared_note", agent="claude", session_id="s", text="note from contextflow")
        assert "note from contextflow" in ours.call("read_shared_context", session_id="s")
        # ContextFlowMCP reads only its own session files and index, which contextflow never writes
        # (docs/contextflowmcp.md): it does not see contextflow's note.
        theirs_seen = theirs.call("read_shared_context", session_id="s", format="json")
        assert "note from ContextFlowMCP" in theirs_seen and "note from contextflow" not in theirs_seen
    finally:
        theirs.stop()
        ours.stop()
    assert [p.name for p in (context_file.parent / "agent-context.jsonl.sessions").iterdir()] == ["cw.jsonl"]
    assert (context_file.parent / "events.e2e.jsonl").is_file()  # contextflow's own log, beside the file


def test_its_home_default_in_the_home_folder_is_found_and_contextflow_starts(
    contextflowmcp: Path, tmp_path: Path
) -> None:
    env = isolated(tmp_path)  # no settings at all: both find ~/.mcp-shared-context.jsonl (home-default)
    theirs = LineServer(["node", str(contextflowmcp / "server.mjs")], env, contextflowmcp)
    try:
        theirs.call("append_shared_note", agent="codex", session_id="home", text="in the home default")
    finally:
        theirs.stop()
    ours = LineServer([str(contextflow_command()), "serve"], env, tmp_path)
    try:
        assert "in the home default" in ours.call("read_shared_context", session_id="home", project="shared")
        info = json.loads(ours.request("resources/read", {"uri": "shared-context://info"})["contents"][0]["text"])
    finally:
        errors = ours.stop()
    home = tmp_path / "home"
    assert (info["file"], info["contextFileSource"]) == (str(home / ".mcp-shared-context.jsonl"), "home-default")
    assert info["store"] == str(home / ".local" / "share" / "contextflow" / "store"), errors
    assert not list(home.glob("events.*"))
