"""`python -m contextflow serve` as a real subprocess, driven by the SDK's stdio client.

Every test runs in both connection modes: "legacy" (the initialize handshake most hosts speak
today) and the SDK default ("auto": server/discover, then the 2026 protocol). Each test is
bounded in time; a hung server fails the test instead of hanging the suite.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.session import IncomingMessage
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import PromptsListChanged
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from contextflow.sessions import core as sessions
from tests.conftest import open_app, text_of

pytestmark = pytest.mark.anyio

TIMEOUT = 30
MODES = ("legacy", "auto")
SESSION_TOOLS = {
    "read_shared_context",
    "append_shared_note",
    "write_shared_handoff",
    "get_latest_handoff",
    "list_sessions",
    "choose_session",
    "resume_session",
}
RESOURCES = {"shared-context://info", "shared-context://latest", "shared-context://raw"}


@pytest.fixture
def params(server_env: dict[str, str], tmp_path: Path) -> StdioServerParameters:
    # cwd outside any git checkout, so new_session suggests a timestamp id, not a branch name
    return StdioServerParameters(
        command=sys.executable, args=["-m", "contextflow", "serve"], env=server_env, cwd=tmp_path
    )


class Inbox:
    """Everything the server sent besides responses; a stray stdout line arrives as an Exception."""

    def __init__(self) -> None:
        self.notifications: list[types.ServerNotification] = []
        self.problems: list[Exception] = []
        self.prompts_changed = anyio.Event()

    async def __call__(self, message: IncomingMessage) -> None:
        if isinstance(message, Exception):
            self.problems.append(message)
            return
        self.notifications.append(message)
        if isinstance(message, types.PromptListChangedNotification):
            self.prompts_changed.set()

    def prompt_changes(self) -> int:
        return sum(isinstance(n, types.PromptListChangedNotification) for n in self.notifications)


@asynccontextmanager
async def connect(params: StdioServerParameters, mode: str, inbox: Inbox | None = None) -> AsyncIterator[Client]:
    """A client over a fresh server process; "auto" is the SDK default, so no mode is passed."""
    inbox = inbox or Inbox()
    options: dict[str, Any] = {"message_handler": inbox, "read_timeout_seconds": TIMEOUT}
    if mode != "auto":
        options["mode"] = mode
    async with Client(params, **options) as client:
        yield client
    assert not inbox.problems, f"the server wrote something that is not protocol to stdout: {inbox.problems}"


def prompt_names(listed: types.ListPromptsResult) -> list[str]:
    """The session prompts, in the order listed (other groups' prompts follow them)."""
    return [prompt.name for prompt in listed.prompts if prompt.name.startswith(("new_session", "resume_"))]


async def offers_the_session_tools_prompts_and_resources(client: Client, mode: str) -> None:
    expected = HANDSHAKE_PROTOCOL_VERSIONS if mode == "legacy" else MODERN_PROTOCOL_VERSIONS
    assert client.protocol_version in expected
    assert client.server_info is not None and client.server_info.name == "contextflow"
    assert {tool.name for tool in (await client.list_tools()).tools} >= SESSION_TOOLS
    assert prompt_names(await client.list_prompts()) == ["new_session", "resume_by_id"]
    assert {str(r.uri) for r in (await client.list_resources()).resources} == RESOURCES


async def rejects_bad_arguments_with_helpful_tool_errors(client: Client) -> None:
    missing = await client.call_tool("append_shared_note", {"text": "who wrote me?"})
    assert missing.is_error and text_of(missing).startswith("append_shared_note needs 'agent'")  # said once

    unknown_arg = await client.call_tool("append_shared_note", {"agent": "a", "text": "t", "limit": 3})
    assert unknown_arg.is_error
    assert "does not take 'limit'" in text_of(unknown_arg) and "accepts: agent" in text_of(unknown_arg)

    wrong_type = await client.call_tool("resume_session", {"limit": "ten"})
    assert wrong_type.is_error and "limit must be a whole number" in text_of(wrong_type)

    out_of_range = await client.call_tool("list_sessions", {"limit": 0})
    assert out_of_range.is_error and "limit must be from 1 to 200" in text_of(out_of_range)

    no_text = await client.call_tool("append_shared_note", {"agent": "a"})
    assert no_text.is_error and "text is required" in text_of(no_text)

    unknown_tool = await client.call_tool("no_such_tool", {})
    assert unknown_tool.is_error and "unknown tool 'no_such_tool'" in text_of(unknown_tool)

    nothing_stored = await client.call_tool("read_shared_context", {"format": "json"})
    assert json.loads(text_of(nothing_stored))["count"] == 0


async def starts_a_session_with_the_new_session_prompt(client: Client) -> None:
    started = await client.get_prompt("new_session", {"session_id": "feat-x"})
    assert "Active session selected: feat-x" in started.messages[0].content.text


async def writes_reads_lists_and_resumes_a_note(client: Client) -> None:
    written = await client.call_tool("append_shared_note", {"agent": "claude", "text": "parser half done"})
    assert not written.is_error, text_of(written)
    assert written.structured_content is not None
    note_id = written.structured_content["id"]
    assert written.structured_content["session_id"] == "feat-x"  # the active session
    assert written.structured_content["project"] == "e2e"  # MCP_SHARED_CONTEXT_PROJECT reached the server

    read = await client.call_tool("read_shared_context", {"session_id": "feat-x"})
    assert not read.is_error
    assert "> parser half done" in text_of(read)
    assert f"id={note_id}" in text_of(read) and "writer=e2e-server" in text_of(read)

    listed = await client.call_tool("list_sessions", {"format": "json"})
    assert [s["session_id"] for s in json.loads(text_of(listed))["sessions"]] == ["feat-x"]

    resumed = await client.call_tool("resume_session", {})
    assert not resumed.is_error
    assert "parser half done" in text_of(resumed)


async def resumes_through_the_resume_prompts(client: Client) -> None:
    listed = await client.list_prompts(cache_mode="refresh")
    assert prompt_names(listed) == ["new_session", "resume_1", "resume_by_id"]
    assert (listed.prompts[1].description or "").startswith("feat-x - ")

    resumed = await client.get_prompt("resume_1")
    assert "parser half done" in resumed.messages[0].content.text
    by_id = await client.get_prompt("resume_by_id", {"session_id": "feat-x"})
    assert "parser half done" in by_id.messages[0].content.text

    with pytest.raises(MCPError, match="session_id"):
        await client.get_prompt("resume_by_id")
    with pytest.raises(MCPError, match="unknown prompt"):
        await client.get_prompt("resume_99")


async def describes_the_store_in_its_resources(client: Client, server_env: dict[str, str]) -> None:
    await client.call_tool(
        "write_shared_handoff", {"agent": "gemini", "summary": "ready for review", "next_steps": ["run e2e"]}
    )
    info = json.loads((await client.read_resource("shared-context://info")).contents[0].text)
    assert info["store"] == server_env["CONTEXTFLOW_STORE"]
    assert info["chosen_by"] == "CONTEXTFLOW_STORE"
    assert info["writer"] == "e2e-server"
    assert info["default_project"] == "e2e"
    assert info["active_session"] == "feat-x"
    assert info["events"] == 2 and info["bad_lines"] == 0

    latest = (await client.read_resource("shared-context://latest")).contents[0].text
    assert "latest_handoff:" in latest and "> ready for review" in latest

    raw = (await client.read_resource("shared-context://raw")).contents[0].text
    records = [json.loads(line) for line in raw.splitlines()]
    assert sorted(r["kind"] for r in records) == ["handoff", "note"]

    with pytest.raises(MCPError, match="unknown resource"):
        await client.read_resource("shared-context://nope")


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_uses_every_session_feature_over_stdio_and_bad_calls_do_not_stop_the_server(
    params, server_env, mode
):
    """One server process per mode walks the whole public API (a process start costs ~1s)."""
    with anyio.fail_after(TIMEOUT):
        async with connect(params, mode) as client:
            await offers_the_session_tools_prompts_and_resources(client, mode)
            await rejects_bad_arguments_with_helpful_tool_errors(client)
            await starts_a_session_with_the_new_session_prompt(client)
            await writes_reads_lists_and_resumes_a_note(client)
            await resumes_through_the_resume_prompts(client)
            await describes_the_store_in_its_resources(client, server_env)


async def test_legacy_server_advertises_prompt_list_changes_and_notifies_after_a_new_session(params):
    inbox = Inbox()
    with anyio.fail_after(TIMEOUT):
        async with connect(params, "legacy", inbox) as client:
            prompts = client.server_capabilities.prompts
            assert prompts is not None and prompts.list_changed is True
            assert "resume_1" not in prompt_names(await client.list_prompts())

            await client.call_tool("read_shared_context", {})
            await client.list_prompts(cache_mode="refresh")
            assert inbox.prompt_changes() == 0  # reads change nothing

            await client.call_tool("append_shared_note", {"agent": "a", "text": "t", "session_id": "fresh"})
            await inbox.prompts_changed.wait()
            listed = await client.list_prompts(cache_mode="refresh")
            assert prompt_names(listed) == ["new_session", "resume_1", "resume_by_id"]
            assert (listed.prompts[1].description or "").startswith("fresh - ")
    assert inbox.prompt_changes() == 1


async def test_default_mode_delivers_prompt_list_changes_to_a_listener(params):
    with anyio.fail_after(TIMEOUT):
        async with connect(params, "auto") as client:
            prompts = client.server_capabilities.prompts
            assert prompts is not None and prompts.list_changed is True
            await client.list_prompts()
            async with client.listen(prompts_list_changed=True) as subscription:
                assert subscription.honored.prompts_list_changed
                await client.call_tool("append_shared_note", {"agent": "a", "text": "t", "session_id": "fresh"})
                event = await subscription.__anext__()
                assert isinstance(event, PromptsListChanged)
            assert "resume_1" in prompt_names(await client.list_prompts(cache_mode="refresh"))


async def test_a_note_from_another_process_reaches_the_running_server(params):
    with anyio.fail_after(TIMEOUT):
        async with connect(params, "legacy") as client:
            empty = await client.call_tool("read_shared_context", {"format": "json"})
            assert json.loads(text_of(empty))["count"] == 0

            other = open_app("other-machine", MCP_SHARED_CONTEXT_PROJECT="e2e")
            try:
                sessions.append_note(other, agent="codex", text="from the other machine", session_id="elsewhere")
            finally:
                other.close()

            read = await client.call_tool("read_shared_context", {"session_id": "elsewhere"})
            assert "> from the other machine" in text_of(read) and "writer=other-machine" in text_of(read)
            listed = prompt_names(await client.list_prompts(cache_mode="refresh"))
            assert "resume_1" in listed


async def test_a_second_server_process_reads_what_the_first_wrote(params):
    with anyio.fail_after(TIMEOUT):
        async with connect(params, "legacy") as first:
            await first.call_tool("write_shared_handoff", {"agent": "claude", "summary": "halfway", "session_id": "s"})
        async with connect(params, "auto") as second:
            latest = await second.call_tool("get_latest_handoff", {"session_id": "s"})
            assert "> halfway" in text_of(latest)


# -- the raw wire ------------------------------------------------------------------------------


class RawPeer:
    """A hand-written JSON-RPC peer: one request line in, read lines until its response."""

    def __init__(self, process: anyio.abc.Process) -> None:
        self.process = process
        self.lines: list[str] = []
        self._buffer = b""

    async def send(self, message: dict[str, Any] | str) -> None:
        line = message if isinstance(message, str) else json.dumps(message)
        assert self.process.stdin is not None
        await self.process.stdin.send(line.encode() + b"\n")

    async def _next_line(self) -> str | None:
        assert self.process.stdout is not None
        while b"\n" not in self._buffer:
            try:
                self._buffer += await self.process.stdout.receive()
            except anyio.EndOfStream:
                return None
        line, self._buffer = self._buffer.split(b"\n", 1)
        self.lines.append(line.decode())
        return self.lines[-1]

    async def request(self, request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        request: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params:
            request["params"] = params
        await self.send(request)
        while (line := await self._next_line()) is not None:
            message = json.loads(line)
            if message.get("id") == request_id:
                return dict(message)
        raise AssertionError(f"the server closed stdout before answering {method} (id {request_id})")

    async def rest(self) -> None:
        while await self._next_line() is not None:
            pass


async def test_stdout_carries_only_json_rpc_and_the_server_exits_when_stdin_closes(server_env, tmp_path):
    stderr_path = tmp_path / "server-stderr.txt"
    with anyio.fail_after(TIMEOUT), stderr_path.open("wb") as stderr:
        async with await anyio.open_process(
            [sys.executable, "-m", "contextflow", "serve"], env=server_env, cwd=tmp_path, stderr=stderr
        ) as process:
            peer = RawPeer(process)
            hello = await peer.request(
                1,
                "initialize",
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"},
                },
            )
            assert hello["result"]["capabilities"]["prompts"]["listChanged"] is True
            await peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            tools = await peer.request(2, "tools/list")
            assert {tool["name"] for tool in tools["result"]["tools"]} >= SESSION_TOOLS
            bad = await peer.request(3, "tools/call", {"name": "append_shared_note", "arguments": {}})
            assert bad["result"]["isError"] is True
            await peer.send("this line is not JSON")
            unknown = await peer.request(4, "tools/call", {"name": "no_such_tool", "arguments": {}})
            assert unknown["result"]["isError"] is True and "unknown tool" in unknown["result"]["content"][0]["text"]
            good = await peer.request(
                5, "tools/call", {"name": "append_shared_note", "arguments": {"agent": "raw", "text": "on the wire"}}
            )
            assert good["result"]["structuredContent"]["agent"] == "raw"
            assert process.stdin is not None
            await process.stdin.aclose()
            await peer.rest()
            assert await process.wait() == 0

    for line in peer.lines:
        assert json.loads(line)["jsonrpc"] == "2.0", f"not JSON-RPC on stdout: {line!r}"
    assert "Traceback" not in stderr_path.read_text(errors="replace")
