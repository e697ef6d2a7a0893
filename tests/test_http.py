"""The HTTP bridge: bearer tokens, per-token project scopes, loopback binding, real clients.

Servers run on 127.0.0.1 with a kernel-chosen port, in a thread (or, for the CLI, a
subprocess); each is bounded in time and always stopped, also when a test fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from contextflow.adapters.server.auth import Grant, GrantVerifier, load_grants, parse_grants
from contextflow.adapters.server.http import HttpBridge, bind, build_http_app
from contextflow.app import App
from contextflow.core.errors import InputError
from tests.folding import view_of

pytestmark = pytest.mark.anyio

START_TIMEOUT = 15.0
STOP_TIMEOUT = 15.0
MARKER = "zebra-quartz"  # what project A asks for
PAYLOAD = "B-only-payload-x7"  # what only project B's records hold; it must never reach A
TOKENS = {
    "all": "all-0123456789abcdef-token",
    "a": "a-0123456789abcdef-token",
    "b": "b-0123456789abcdef-token",
    "ro": "ro-0123456789abcdef-token",
    "mixed": "mixed-0123456789abcdef-tok",
}
GRANTS_JSON = {
    "tokens": [
        {"name": "all", "token": TOKENS["all"], "read": ["*"], "write": ["*"]},
        {"name": "a", "token": TOKENS["a"], "read": ["A"], "write": ["A"]},
        {"name": "b", "token": TOKENS["b"], "read": ["B"], "write": ["B"]},
        {"name": "ro", "token": TOKENS["ro"], "read": ["*"]},
        {"name": "mixed", "token": TOKENS["mixed"], "read": ["A", "B"], "write": ["A"], "project": "A"},
    ]
}


def grants() -> list[Grant]:
    return parse_grants(json.dumps(GRANTS_JSON), "test grants")


@contextmanager
def running(app: App, host: str = "127.0.0.1") -> Iterator[str]:
    """The bridge served from a thread on an ephemeral loopback port; stopped on exit, whatever happened."""
    bridge = HttpBridge(app, grants())
    sock = bind(host, 0)
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(build_http_app(bridge, host), log_level="warning", access_log=False, lifespan="on")
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not server.started:
            assert thread.is_alive(), "the HTTP server thread died while starting"
            assert time.monotonic() < deadline, "the HTTP server did not start in time"
            time.sleep(0.01)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(STOP_TIMEOUT)
        sock.close()
        bridge.close()
        assert not thread.is_alive(), "the HTTP server did not stop"


@asynccontextmanager
async def connect(url: str, token: str, mode: str = "legacy") -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,  # type: ignore[arg-type]
    ):
        yield client


@pytest.fixture
def all_tools_app(monkeypatch: pytest.MonkeyPatch) -> Iterator[App]:
    monkeypatch.setenv("CONTEXTFLOW_TOOLS", "all")
    opened = App.open()
    yield opened
    opened.close()


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


# -- authentication ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "Bearer wrong-token-0123456789",
        "Bearer " + TOKENS["a"][:-1],
        "Basic " + TOKENS["a"],
        TOKENS["a"],
        "Bearer  x",
    ],
)
def test_requests_without_a_valid_bearer_token_get_401(app: App, authorization: str | None) -> None:
    headers = dict(HEADERS)
    if authorization is not None:
        headers["Authorization"] = authorization
    with running(app) as url:
        response = httpx2.post(url, json=INITIALIZE, headers=headers, timeout=10)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert TOKENS["a"] not in response.text


def test_a_token_in_the_query_string_is_not_accepted(app: App) -> None:
    with running(app) as url:
        response = httpx2.post(f"{url}?token={TOKENS['all']}", json=INITIALIZE, headers=HEADERS, timeout=10)
    assert response.status_code == 401


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_valid_token_connects_in_both_protocol_eras(app: App, mode: str) -> None:
    with running(app) as url:
        async with connect(url, TOKENS["all"], mode) as client:
            written = await client.call_tool("append_shared_note", {"agent": "remote", "text": "hi", "session_id": "s"})
            assert not written.is_error
            read = await client.call_tool("read_shared_context", {"session_id": "s"})
    assert "> hi" in read.content[0].text  # type: ignore[union-attr]
    assert app.store.event_count == 1


async def test_token_values_never_reach_logs_or_output(
    app: App, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level("DEBUG")
    with running(app) as url:
        httpx2.post(url, json=INITIALIZE, headers={**HEADERS, "Authorization": "Bearer not-a-token-at-all-xyz"})
        async with connect(url, TOKENS["mixed"]) as client:
            await client.call_tool("append_shared_note", {"agent": "remote", "text": "hello"})
            await client.call_tool("append_shared_note", {"agent": "remote", "text": "x", "project": "B"})
    captured = capsys.readouterr()
    seen = caplog.text + captured.out + captured.err
    for token in (*TOKENS.values(), "not-a-token-at-all-xyz"):
        assert token not in seen


# -- scopes --------------------------------------------------------------------------------


async def test_a_read_only_token_sees_only_read_tools_and_cannot_write(app: App) -> None:
    from contextflow.sessions import core as sessions

    sessions.append_note(app, agent="owner", text="there is a session to choose", session_id="s")
    before = app.store.event_count
    with running(app) as url:
        async with connect(url, TOKENS["ro"]) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            note = await client.call_tool("append_shared_note", {"agent": "ro", "text": "sneaky"})
            choose = await client.call_tool("choose_session", {"session_id": "s"})
    assert "read_shared_context" in names
    assert not names & {"append_shared_note", "write_shared_handoff", "choose_session"}
    assert note.is_error and "read-only" in note.content[0].text  # type: ignore[union-attr]
    # choosing would succeed (session "s" exists): it is refused because the token may only read
    assert choose.is_error and "is read-only" in choose.content[0].text  # type: ignore[union-attr]
    assert sessions.active_session(app) is None
    assert app.store.event_count == before


async def test_a_token_cannot_write_a_project_it_may_only_read(app: App) -> None:
    with running(app) as url:
        async with connect(url, TOKENS["mixed"]) as client:
            to_b = await client.call_tool("append_shared_note", {"agent": "m", "text": "no", "project": "B"})
            to_a = await client.call_tool("append_shared_note", {"agent": "m", "text": "yes"})
    assert to_b.is_error
    assert "may not write to project 'B'" in to_b.content[0].text  # type: ignore[union-attr]
    assert not to_a.is_error
    assert to_a.structured_content is not None and to_a.structured_content["project"] == "A"
    assert app.store.event_count == 1


async def test_each_token_has_its_own_active_session(app: App) -> None:
    from contextflow.sessions import core as sessions

    app.store.append("note", {"agent": "x", "project": "A", "session_id": "alpha", "text": "a"})
    with running(app) as url:
        async with connect(url, TOKENS["a"]) as client:
            chosen = await client.call_tool("choose_session", {"session_id": "alpha"})
            resumed = await client.call_tool("resume_session", {})
    assert not chosen.is_error and not resumed.is_error
    assert sessions.active_session(app) is None, "the local active session is untouched"


def _value_for(name: str, schema: dict[str, Any], marker: str, payload: str = "") -> Any:
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "string":
        return f"note:{marker.lower()}" if name == "key" else f"{marker} {name} {payload}".strip()
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "number":
        return 1
    if kind == "boolean":
        return False
    if kind == "array":
        items = schema.get("items", {})
        return [{"text": f"{marker} {payload}"}] if items.get("type") == "object" else [f"{marker} item {payload}"]
    if kind == "object":
        return {"text": f"{marker} {payload}"}
    return marker


FREE_TEXT = {
    "text",
    "content",
    "summary",
    "value",
    "description",
    "name",
    "title",
    "topic",
    "agent",
    "task",
    "label",
    "category",
    "source",
    "decision",
    "reasoning",
    "overall_summary",
}


async def _seed_everything(client: Client) -> list[str]:
    """Call every writing tool with the marker in its text; return the ids it created."""
    ids: list[str] = []
    for tool in (await client.list_tools()).tools:
        if tool.annotations is not None and tool.annotations.read_only_hint:
            continue
        props: dict[str, Any] = tool.input_schema.get("properties", {})
        required = set(tool.input_schema.get("required", []))
        attempts = [
            {n: _value_for(n, s, MARKER, PAYLOAD) for n, s in props.items() if n in required or n in FREE_TEXT},
            {n: _value_for(n, s, MARKER, PAYLOAD) for n, s in props.items() if n != "project"},
        ]
        for arguments in attempts:
            result = await client.call_tool(tool.name, arguments)
            if not result.is_error:
                created = (result.structured_content or {}).get("id")
                if isinstance(created, str):
                    ids.append(created)
                break
    return ids


def _leaks(result: Any) -> bool:
    shown = json.dumps(result.model_dump(mode="json"), ensure_ascii=False)
    return PAYLOAD in shown


async def _sweep(client: Client, b_ids: list[str]) -> list[str]:
    """Every read-only tool (many argument shapes), resource and prompt: where project B's payload shows."""
    leaks: list[str] = []
    for tool in (await client.list_tools()).tools:
        if not (tool.annotations and tool.annotations.read_only_hint):
            continue
        props = tool.input_schema.get("properties", {})
        required = tool.input_schema.get("required", [])
        base = {n: _value_for(n, props[n], MARKER) for n in required}
        tries = [base, {**base, **{n: "B" for n in props if n == "project"}}]
        tries += [{**base, n: MARKER} for n in props if n in ("query", "q", "text", "prefix")]
        tries += [{**base, n: i} for n in props if n.endswith("id") for i in b_ids]
        tries += [{**base, n: i[:6]} for n in props if n.endswith("id") for i in b_ids]
        for arguments in tries:
            if _leaks(await client.call_tool(tool.name, arguments)):
                leaks.append(f"{tool.name}({arguments})")
    for resource in (await client.list_resources()).resources:
        if _leaks(await client.read_resource(resource.uri)):
            leaks.append(f"resource {resource.uri}")
    for prompt in (await client.list_prompts()).prompts:
        if PAYLOAD in (prompt.description or ""):
            leaks.append(f"prompt description {prompt.name}")
    return leaks


async def test_a_project_a_token_sees_nothing_of_project_b(all_tools_app: App) -> None:
    with running(all_tools_app) as url:
        async with connect(url, TOKENS["b"]) as writer_b:
            b_ids = await _seed_everything(writer_b)
        async with connect(url, TOKENS["b"]) as reader_b:
            seen_by_b = await _sweep(reader_b, b_ids)
        async with connect(url, TOKENS["all"]) as reader_all:
            seen_by_all = await _sweep(reader_all, b_ids)
        async with connect(url, TOKENS["a"]) as reader_a:
            seen_by_a = await _sweep(reader_a, b_ids)
    # the sweep finds B's records when the token may see them: through many tools, not one
    assert len({leak.split("(")[0] for leak in seen_by_b}) >= 4, seen_by_b
    assert len({leak.split("(")[0] for leak in seen_by_all}) >= 4, seen_by_all
    assert not seen_by_a, "project B's data reached a project A token:\n" + "\n".join(seen_by_a)


# -- configuration and the real command ----------------------------------------------------


def test_grants_parse_scopes_and_defaults() -> None:
    by_name = {grant.name: grant for grant in grants()}
    assert by_name["all"].reads_everything and by_name["all"].can_write("anything")
    assert by_name["ro"].read_only and by_name["ro"].can_read("x") and not by_name["ro"].can_write("x")
    assert by_name["mixed"].can_read("B") and not by_name["mixed"].can_write("B")
    assert by_name["a"].default_project("shared") == "A"
    assert TOKENS["all"] not in repr(by_name["all"])  # only a digest is kept, never the value
    assert all(TOKENS[name] not in grant.describe() for name, grant in by_name.items())


async def test_the_verifier_matches_plain_and_hashed_tokens() -> None:
    import hashlib

    hashed = hashlib.sha256(b"hashed-token-0123456789").hexdigest()
    verifier = GrantVerifier(
        parse_grants(
            json.dumps(
                {
                    "tokens": [
                        {"name": "plain", "token": "plain-token-0123456789", "read": ["*"]},
                        {"name": "hashed", "sha256": hashed, "read": ["p"], "write": ["p"]},
                    ]
                }
            ),
            "t",
        )
    )
    assert (await verifier.verify_token("plain-token-0123456789")).client_id == "plain"  # type: ignore[union-attr]
    assert (await verifier.verify_token("hashed-token-0123456789")).scopes == ["read", "write"]  # type: ignore[union-attr]
    assert await verifier.verify_token("hashed-token-012345678") is None
    assert await verifier.verify_token("") is None


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("not json", "not valid JSON"),
        ('{"tokens": []}', "at least one token"),
        ('{"tokens": [{"name": "x", "read": ["*"]}]}', "exactly one of token or sha256"),
        ('{"tokens": [{"name": "x", "token": "short", "read": ["*"]}]}', "at least 16 characters"),
        ('{"tokens": [{"name": "x", "token": "0123456789abcdefgh", "read": []}]}', "may read nothing"),
        ('{"tokens": [{"name": "x", "token": "0123456789abcdefgh", "read": "A"}]}', "list of project names"),
        ('{"tokens": [{"name": "x", "token": "0123456789abcdefgh", "read": ["*"], "admin": true}]}', "unknown field"),
        ('{"tokens": [{"name": "bad name", "token": "0123456789abcdefgh", "read": ["*"]}]}', "name must be"),
        (
            '{"tokens": [{"name": "x", "token": "0123456789abcdefgh", "read": ["*"]},'
            ' {"name": "x", "token": "0123456789abcdefgX", "read": ["*"]}]}',
            "unique",
        ),
    ],
)
def test_bad_grant_documents_are_clear_errors(document: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_grants(document, "tokens.json")


def test_a_tokens_file_readable_by_others_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps(GRANTS_JSON))
    path.chmod(0o644)
    with pytest.raises(InputError, match="chmod 600"):
        load_grants({}, str(path))
    path.chmod(0o600)
    assert len(load_grants({}, str(path))) == len(GRANTS_JSON["tokens"])


def test_grants_come_from_the_environment_too() -> None:
    assert load_grants({"CONTEXTFLOW_HTTP_TOKENS": json.dumps(GRANTS_JSON)})[0].name == "all"
    single = load_grants({"CONTEXTFLOW_HTTP_TOKEN": "env-token-0123456789abc"})
    assert single[0].reads_everything and single[0].write is None
    with pytest.raises(InputError, match="needs bearer tokens"):
        load_grants({})


def _cli(*args: str, **kwargs: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "contextflow", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        **kwargs,
    )


def test_serve_http_without_tokens_exits_with_a_clear_error() -> None:
    with _cli("serve", "--http", "--port", "0") as process:
        _, err = process.communicate(timeout=30)
    assert process.returncode == 2
    assert "needs bearer tokens" in err


async def test_the_real_command_listens_on_loopback_only_by_default(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps(GRANTS_JSON))
    tokens.chmod(0o600)
    with _cli("serve", "--http", "--port", "0", "--tokens", str(tokens)) as process:
        try:
            assert process.stderr is not None
            banner = process.stderr.readline()
            assert "http://127.0.0.1:" in banner, banner
            url = banner.split(" at ")[1].split()[0]
            listening = _listening_addresses(process.pid)
            assert listening and all(address.startswith("127.0.0.1:") for address in listening), listening
            async with connect(url, TOKENS["a"]) as client:
                result = await client.call_tool("append_shared_note", {"agent": "cli", "text": "over http"})
            assert not result.is_error
            for token in TOKENS.values():
                assert token not in banner
        finally:
            process.terminate()
            try:
                process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _listening_addresses(pid: int) -> list[str]:
    """Local addresses of the listening TCP sockets `pid` owns (from /proc)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                host_hex, port_hex = fields[1].split(":")
                host = ".".join(str(int(host_hex[i : i + 2], 16)) for i in (6, 4, 2, 0)) if width == 8 else host_hex
                found.append(f"{host}:{int(port_hex, 16)}")
    return found


# -- a real client: the MCP Inspector CLI from npm -------------------------------------------


@pytest.mark.slow
def test_the_mcp_inspector_cli_connects_with_a_bearer_header(app: App) -> None:
    from tests.e2e.conftest import CLIENTS, client_env, describe, install_client, run_bounded

    inspector = install_client(CLIENTS["inspector"])
    env = client_env()
    with running(app) as url:
        base = [str(inspector), "--cli", "--server-url", url, "--transport", "http"]
        listed = run_bounded(
            [*base, "--header", f"Authorization: Bearer {TOKENS['a']}", "--method", "tools/list"], env=env
        )
        called = run_bounded(
            [
                *base,
                "--header",
                f"Authorization: Bearer {TOKENS['a']}",
                "--method",
                "tools/call",
                "--tool-name",
                "append_shared_note",
                "--tool-arg",
                "agent=inspector",
                "text=from the inspector",
            ],
            env=env,
        )
        refused = run_bounded(
            [*base, "--header", "Authorization: Bearer wrong-wrong-wrong-wrong", "--method", "tools/list"], env=env
        )
    assert listed.returncode == 0, describe(listed)
    names = {tool["name"] for tool in json.loads(listed.stdout)["tools"]}
    assert "append_shared_note" in names
    assert called.returncode == 0 and "Appended note" in called.stdout, describe(called)
    assert "tools" not in refused.stdout or refused.returncode != 0, describe(refused)
    entries = view_of(app.store, "sessions").project_entries("A")
    assert [event.data["text"] for event in entries] == ["from the inspector"]


@pytest.mark.slow
def test_the_load_benchmark_runs_clean_on_a_small_load(tmp_path: Path) -> None:
    bench = Path(__file__).resolve().parent.parent / "scripts" / "bench_http.py"
    done = subprocess.run(
        [sys.executable, str(bench), "--clients", "4", "--calls", "300", "--workdir", str(tmp_path / "bench")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "result: PASS (zero errors, zero lost writes)" in done.stdout
    assert "p99 ms" in done.stdout
