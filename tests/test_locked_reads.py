"""Another process holds views.sqlite3 exclusively, in rollback-journal mode (readers shut out too) or in WAL mode:
each read answers from the logs or says plainly it is partial, having waited for the lock once, not once per
statement.

Waits are counted, never timed (`tests/locking.py`)."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contextflow.app import App
from tests.locking import Waits, counted_waits, shut_out
from tests.table import run

BASE = {"agent": "claude", "project": "p", "session_id": "s-lock"}


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> Waits:
    return counted_waits(monkeypatch)


def cli(*argv: str) -> tuple[int, str]:
    """`contextflow ARGV` in this process (a new App, as a new process opens): exit code and output."""
    from contextflow.adapters.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue() + err.getvalue()


def plainly_partial(text: str) -> bool:
    return "PARTIAL:" in text or "could not read" in text


def stocked() -> Path:
    """A store of a few dozen notes and handoffs, its tables and search index built; the tables' path."""
    app = App.open()
    try:
        for n in range(40):
            run(app, "append_shared_note", **BASE, text=f"note {n} about the websocket reconnect")
            if n % 10 == 0:
                run(app, "write_shared_handoff", **BASE, task=f"task {n}", summary=f"handoff {n}")
        assert "task 30" in run(app, "get_latest_handoff", project="p").text
        assert "websocket" in run(app, "get_context", query="websocket").text
        return app.tables().path
    finally:
        app.close()


# Each read under the lock: its command line, and what shows the handoff written under it (None: a search,
# whose index positions are in the locked file, says plainly it is partial instead)
READS: tuple[tuple[tuple[str, ...], str | None], ...] = (
    (("latest", "--project", "p"), "task=the task under the lock"),
    (("resume", "--project", "p", "s-lock"), "latest_handoff:\n"),
    (("sessions", "--project", "p"), "> latest handoff: written under the lock"),
    (("whereami",), "## Latest handoff (active session s-lock)\n"),
    (("search", "websocket"), None),
)


@pytest.mark.parametrize("mode", ["rollback", "wal"])
def test_each_read_under_an_exclusive_lock_waits_once_and_shows_the_handoff_just_written_or_says_partial(
    waits: Waits, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    from contextflow.adapters import hooks

    monkeypatch.setenv("MCP_SHARED_CONTEXT_PROJECT", "p")
    path = stocked()
    assert cli("use", "s-lock")[0] == 0
    with shut_out(path, mode):
        waits.count = 0
        code, text = cli(
            "handoff", "--session", "s-lock", "--task", "the task under the lock", "written under the lock"
        )
        assert code == 0 and "Wrote handoff" in text, text  # written, and said so
        assert waits.count <= 1, f"the write waited for the lock {waits.count} times"
        for argv, newest in READS:
            waits.count = 0
            code, text = cli(*argv)
            assert code == 0 and waits.count <= 1, (argv, f"waited {waits.count} times", text)
            if newest is None:
                assert plainly_partial(text), (argv, text)
                assert "0% of" not in text, (argv, text)  # (how far the index is cannot be read: never "nothing")
                assert "No stored records match" not in text, (argv, text)  # (what was not searched is not "none")
            elif newest.endswith("\n"):  # (a heading: the line after it)
                after = text.split(newest, 1)[-1].split("\n", 1)[0]
                assert newest in text and "task=the task under the lock" in after, (argv, text)
            else:
                assert newest in text, (argv, text)
        waits.count = 0
        app = App.open()
        try:
            shown = run(app, "get_latest_handoff", project="p").text  # as the MCP server runs a tool
        finally:
            app.close()
        assert waits.count <= 1 and "task=the task under the lock" in shown, (waits.count, shown)
        waits.count = 0
        start = {"session_id": "s-next", "cwd": str(Path.cwd()), "hook_event_name": "SessionStart"}
        shown = hooks.run("session-start", json.dumps(start).encode())
        assert waits.count <= 1 and "the task under the lock" in shown, (waits.count, shown)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["rollback", "wal"])
async def test_an_mcp_request_under_an_exclusive_lock_waits_once_and_shows_the_handoff_just_written(
    waits: Waits, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """Each MCP request (a tool call with its check of the prompt list, the prompt list, a prompt, a resource)
    waits for the lock once, as a CLI command does, and what it shows is the handoff written under the lock."""
    from mcp import Client

    from contextflow.adapters.server.app import ContextflowServer

    monkeypatch.setenv("MCP_SHARED_CONTEXT_PROJECT", "p")
    path = stocked()
    with shut_out(path, mode):  # (before the server opens: rollback-journal mode needs no other connection)
        app = App.open()
        try:
            async with Client(ContextflowServer(app).server, mode="legacy") as client:
                waits.count = 0
                await client.list_prompts()  # (listed: each call then checks whether they changed)
                assert waits.count <= 1, f"the prompt list waited {waits.count} times"
                waits.count = 0
                await client.call_tool(
                    "write_shared_handoff", {**BASE, "task": "the task under the lock", "summary": "under the lock"}
                )
                assert waits.count <= 1, f"the write waited {waits.count} times"
                requests: dict[str, Callable[[], Any]] = {
                    "get_latest_handoff": lambda: client.call_tool("get_latest_handoff", {"project": "p"}),
                    "prompts/list": client.list_prompts,
                    "resume_1": lambda: client.get_prompt("resume_1", {}),
                    "resources/read": lambda: client.read_resource("shared-context://latest"),
                }
                for name, request in requests.items():
                    waits.count = 0
                    shown = json.dumps((await request()).model_dump(mode="json"))
                    assert waits.count <= 1, (name, f"waited {waits.count} times", shown)
                    if name != "prompts/list":
                        assert "the task under the lock" in shown, (name, shown)
        finally:
            app.close()
