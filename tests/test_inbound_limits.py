"""ContextFlowMCP's inbound limits on the stdio server: MCP_SHARED_CONTEXT_MAX_INBOUND_LINE_BYTES and
MCP_SHARED_CONTEXT_MAX_INPUT_BUFFER_BYTES refuse oversize input with its errors, and serving goes on."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from typing import Any

import pytest

from contextflow.adapters.server import inbound
from contextflow.core.errors import InputError

pytestmark = pytest.mark.anyio
REPLY_TIMEOUT = 20.0
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}


def test_a_line_over_the_limit_is_refused_and_the_lines_around_it_are_kept() -> None:
    limits = inbound.Limits(line=10, buffer=100)
    found, held = inbound.split(b"", b'{"a":1}\n' + b"x" * 11 + b'\n{"b":2}\n{"c"', limits)
    assert found[0] == '{"a":1}' and found[2] == '{"b":2}' and held == b'{"c"'
    refusal = found[1]
    assert isinstance(refusal, dict) and refusal["id"] is None and refusal["error"]["code"] == -32700
    assert refusal["error"]["data"]["detail"] == "Line-delimited JSON message exceeds max size (10 bytes)"


def test_input_over_the_buffer_limit_is_dropped_with_what_was_held() -> None:
    limits = inbound.Limits(line=10, buffer=16)
    found, held = inbound.split(b"0123456789", b"0123456", limits)
    assert held == b"" and len(found) == 1
    refusal = found[0]
    assert isinstance(refusal, dict) and refusal["error"]["code"] == -32600
    assert "Incoming MCP message exceeds max buffer size (16 bytes)" in refusal["error"]["message"]
    assert inbound.split(b"", b"\n\r\n  \n", limits) == ([], b"")  # blank lines are skipped


def test_the_limits_come_from_its_variables_and_a_bad_value_is_a_clear_error() -> None:
    assert inbound.Limits.from_env({}) == inbound.Limits(inbound.MAX_LINE_BYTES, inbound.MAX_BUFFER_BYTES)
    env = {inbound.LINE_SETTING: "256", inbound.BUFFER_SETTING: " 512 "}
    assert inbound.Limits.from_env(env) == inbound.Limits(256, 512)
    with pytest.raises(InputError, match="MCP_SHARED_CONTEXT_MAX_INBOUND_LINE_BYTES='0' is not a positive"):
        inbound.Limits.from_env({inbound.LINE_SETTING: "0"})


async def test_the_last_line_without_a_newline_is_still_read() -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, b'{"a":1}\n{"b":2}')
    os.close(write_end)
    try:
        found = [item async for item in inbound.stdin_lines(read_end, inbound.Limits())]
    finally:
        os.close(read_end)
    assert found == ['{"a":1}', '{"b":2}']


class Server:
    """`contextflow serve` over pipes, answering within a deadline."""

    def __init__(self, **env: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "contextflow", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **env},
        )
        self.selector = selectors.DefaultSelector()
        assert self.process.stdout is not None
        self.selector.register(self.process.stdout, selectors.EVENT_READ)

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def reply(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        deadline = time.monotonic() + REPLY_TIMEOUT
        while (left := deadline - time.monotonic()) > 0:
            if self.selector.select(left):
                line = self.process.stdout.readline()
                assert line, "the server closed its output"
                return dict(json.loads(line))
        raise AssertionError("no reply within the deadline")

    def replies_until(self, request_id: int) -> list[dict[str, Any]]:
        found = [self.reply()]
        while found[-1].get("id") != request_id:
            found.append(self.reply())
        return found

    def close(self) -> int:
        """Close its input: the server ends by itself (what a client does), or is killed."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            code = self.process.wait(REPLY_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait(REPLY_TIMEOUT)
        self.selector.close()
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()
        return code


def test_the_server_refuses_an_oversized_line_and_an_overfull_buffer_and_goes_on_serving() -> None:
    server = Server(MCP_SHARED_CONTEXT_MAX_INBOUND_LINE_BYTES="256", MCP_SHARED_CONTEXT_MAX_INPUT_BUFFER_BYTES="4096")
    try:
        server.send(json.dumps(INITIALIZE).encode() + b"\n")
        assert server.reply()["id"] == 1
        server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        oversized = {"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"value": "a" * 1024}}
        server.send(json.dumps(oversized).encode() + b"\n")
        refused = server.reply()
        assert refused["id"] is None and refused["error"]["code"] == -32700
        assert "Line-delimited JSON message exceeds max size (256 bytes)" in refused["error"]["data"]["detail"]
        server.send(b'{"jsonrpc":"2.0","id":3,"method":"ping"}\n')
        assert server.reply() == {"jsonrpc": "2.0", "id": 3, "result": {}}
        server.send(b"z" * 8192)  # no newline: held input grows past the buffer limit
        assert server.reply()["error"]["code"] == -32600
        time.sleep(0.2)  # let the refused bytes go before the next message (a new chunk starts afresh)
        server.send(b'\n{"jsonrpc":"2.0","id":4,"method":"ping"}\n')
        answers = server.replies_until(4)
        assert answers[-1] == {"jsonrpc": "2.0", "id": 4, "result": {}}
        assert all(a["id"] is None and a["error"]["code"] in (-32600, -32700) for a in answers[:-1])
        assert server.close() == 0  # the end of its input ends the server
    finally:
        server.close()


def test_serve_with_a_bad_limit_is_one_line_before_any_protocol() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "contextflow", "serve"],
        input=b"",
        capture_output=True,
        env={**os.environ, "MCP_SHARED_CONTEXT_MAX_INPUT_BUFFER_BYTES": "-5"},
        timeout=REPLY_TIMEOUT,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode().count("\n") == 1 and "MCP_SHARED_CONTEXT_MAX_INPUT_BUFFER_BYTES" in done.stderr.decode()
