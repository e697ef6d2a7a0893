"""The bridge and the protocol boundary under hostile or unlucky clients.

HTTP servers run on 127.0.0.1 (tests.test_http.running: bounded start, always stopped); the
stdio server is a subprocess, killed at the end. The tests wait for events (a reply, a call
entering the store), never for a time to pass: HANG_GUARD_S only stops a broken run from hanging
the suite, so a loaded machine makes them slower, not red.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from contextflow.app import App
from contextflow.records import core as records
from tests.test_http import HEADERS, INITIALIZE, TOKENS, all_tools_app, connect, running

__all__ = ["all_tools_app"]  # the fixture, shared with tests/test_http.py

pytestmark = pytest.mark.anyio

REPLY_TIMEOUT = 10.0  # HTTP requests answered at once by a server already listening
HANG_GUARD_S = 120.0  # not a speed expectation: the bound on a wait that would otherwise hang
HOSTILE = {
    "lone surrogate": b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"\\ud800"}}',
    "nested 500 levels": b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":' + b"[" * 500 + b"]" * 500 + b"}}",
    "batch": b'[{"jsonrpc":"2.0","id":4,"method":"ping"},{"jsonrpc":"2.0","id":5,"method":"ping"}]',
    "invalid UTF-8": b'{"jsonrpc":"2.0","id":6,"method":"ping","params":{"x":"\xff\xfe"}}',
}
EXPECTED_CODE = {"lone surrogate": -32700, "nested 500 levels": -32600, "batch": -32600, "invalid UTF-8": -32700}


# -- read-only tokens never move their active session ----------------------------------------


@pytest.mark.parametrize("prompt", ["new_session", "resume_by_id"])
async def test_a_read_only_token_cannot_move_its_active_session_through_a_prompt(app: App, prompt: str) -> None:
    active_file = app.store.state_dir / "http-sessions" / "ro.txt"
    with running(app) as url:
        async with connect(url, TOKENS["ro"]) as client:
            listed = {p.name for p in (await client.list_prompts()).prompts}
            with pytest.raises(MCPError, match="read-only"):
                await client.get_prompt(prompt, {"session_id": "moved-by-ro"})
    assert prompt not in listed
    assert not active_file.exists() or "moved-by-ro" not in active_file.read_text()


async def test_a_writing_token_still_moves_its_active_session_with_new_session(app: App) -> None:
    with running(app) as url:
        async with connect(url, TOKENS["a"]) as client:
            result = await client.get_prompt("new_session", {"session_id": "mine"})
    assert "Active session selected: mine" in result.messages[0].content.text  # type: ignore[union-attr]
    assert (app.store.state_dir / "http-sessions" / "a.txt").read_text().strip() == "mine"


# -- a slow call never stalls the other clients ----------------------------------------------


async def test_another_client_is_answered_while_one_call_is_blocked_in_the_store(
    all_tools_app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    entered, release = threading.Event(), threading.Event()
    real = records.list_records

    def blocking(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        release.wait(HANG_GUARD_S * 2)  # stands in for a 10 s lock wait or a cold refold: until released
        return real(*args, **kwargs)

    monkeypatch.setattr(records, "list_records", blocking)
    with running(all_tools_app) as url:
        async with connect(url, TOKENS["a"]) as slow, connect(url, TOKENS["b"]) as other:
            try:
                async with anyio.create_task_group() as group:
                    group.start_soon(slow.call_tool, "context_list", {})
                    assert await anyio.to_thread.run_sync(entered.wait, HANG_GUARD_S), "the slow call never started"
                    with anyio.fail_after(HANG_GUARD_S):  # the slow call is held until released, whatever the load
                        answered = await other.call_tool("read_shared_context", {})
                    assert not answered.is_error
                    assert not release.is_set()  # the slow call was still blocked when the other was answered
                    release.set()
            finally:
                release.set()


# -- malformed messages get a JSON-RPC error, over HTTP and stdio ------------------------------


def _session_headers(url: str) -> dict[str, str]:
    headers = {**HEADERS, "Authorization": f"Bearer {TOKENS['all']}"}
    response = httpx2.post(url, json=INITIALIZE, headers=headers, timeout=REPLY_TIMEOUT)
    return {**headers, "mcp-session-id": response.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_malformed_http_request_gets_a_json_rpc_error(app: App, case: str) -> None:
    with running(app) as url:
        headers = _session_headers(url)
        response = httpx2.post(url, content=HOSTILE[case], headers=headers, timeout=REPLY_TIMEOUT)
        still = httpx2.post(
            url, json={"jsonrpc": "2.0", "id": 9, "method": "ping"}, headers=headers, timeout=REPLY_TIMEOUT
        )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == EXPECTED_CODE[case]
    assert still.status_code == 200  # the session survives


def test_an_oversized_http_request_is_refused_before_it_is_parsed(app: App) -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * (5 * 1024 * 1024) + b'"}}'
    with running(app) as url:
        response = httpx2.post(url, content=body, headers=_session_headers(url), timeout=REPLY_TIMEOUT)
    assert response.status_code == 413 and response.json()["error"]["code"] == -32600


class StdioServer:
    def __init__(self, tmp_path: Path) -> None:
        env = {**os.environ, "CONTEXTFLOW_STORE": str(tmp_path / "store"), "CONTEXTFLOW_STATE": str(tmp_path / "st")}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "contextflow", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.selector = selectors.DefaultSelector()
        assert self.process.stdout is not None
        self.selector.register(self.process.stdout, selectors.EVENT_READ)

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def reply(self) -> dict[str, Any] | None:
        """The next line the server writes; None when it closes its output (or HANG_GUARD_S passes)."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + HANG_GUARD_S
        while (left := deadline - time.monotonic()) > 0:
            if self.selector.select(left):
                line = self.process.stdout.readline()
                return json.loads(line) if line else None
        return None

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(HANG_GUARD_S)
        self.selector.close()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()


def test_a_malformed_stdio_line_gets_a_json_rpc_error_and_the_server_goes_on(tmp_path: Path) -> None:
    server = StdioServer(tmp_path)
    try:
        server.send(json.dumps(INITIALIZE).encode())
        assert (server.reply() or {}).get("id") == 1
        server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        for body in HOSTILE.values():
            server.send(body)
        server.send(b'{"jsonrpc":"2.0","id":9,"method":"ping"}')
        replies = []  # lines are answered in order: the ping's reply comes after every malformed line's
        while (line := server.reply()) is not None:
            replies.append(line)
            if line.get("id") == 9:
                break
    finally:
        server.stop()
    *answers, after = replies
    assert len(answers) == len(HOSTILE), f"one reply per malformed line, before the ping's: {replies}"
    for case, answer in zip(HOSTILE, answers, strict=True):
        assert answer["id"] is None and answer["error"]["code"] == EXPECTED_CODE[case], (case, answer)
    assert after == {"jsonrpc": "2.0", "id": 9, "result": {}}


def test_a_note_with_bytes_that_are_not_utf8_over_stdio_is_a_parse_error_and_nothing_is_stored(tmp_path: Path) -> None:
    server = StdioServer(tmp_path)
    arguments = b'{"agent":"a","session_id":"s","text":"bad \xff\xfe byte"}'
    call = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"append_shared_note","arguments":'
    try:
        server.send(json.dumps(INITIALIZE).encode())
        assert (server.reply() or {}).get("id") == 1
        server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        server.send(call + arguments + b"}}")
        answer = server.reply() or {}
    finally:
        server.stop()
    assert answer.get("error", {}).get("code") == -32700, answer
    assert "UTF-8" in answer["error"]["message"]
    logs = list((tmp_path / "store").glob("events.*.jsonl"))
    assert not any("\ufffd" in path.read_text(encoding="utf-8") for path in logs)
