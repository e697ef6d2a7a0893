"""Another process holds views.sqlite3 exclusively, in rollback-journal mode (readers shut out too) or in WAL mode:
each read answers from the logs or says plainly it is partial, having waited for the lock once, not once per
statement.

Waits are counted, never timed: every SQLite connection of the test's process counts its statements that
failed busy after waiting (its busy timeout shortened to WAITED_MS so the test runs quickly)."""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from contextflow.app import App
from contextflow.core import tables
from tests.table import run

WAITED_MS = 50  # every busy timeout of the test's process (a wait is counted, not timed)
HOLD = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
if sys.argv[2] == "rollback":
    db.execute("PRAGMA journal_mode=DELETE")  # a rollback journal: readers are shut out too
db.execute("BEGIN EXCLUSIVE")
print("held", flush=True)
sys.stdin.read()  # until the test closes its end
"""
BASE = {"agent": "claude", "project": "p", "session_id": "s-lock"}


class Waits:
    """The statements of this process that waited out another process's lock on SQLite."""

    def __init__(self) -> None:
        self.count = 0


def in_request() -> bool:
    """Whether this thread serves the request (the server's idle commit to the search index waits in its own
    thread, in the background: no request waits for it)."""
    return threading.current_thread() is threading.main_thread()


def counting(waits: Waits) -> type[sqlite3.Connection]:
    class Counting(sqlite3.Connection):
        """A connection whose busy waits are short and counted (a statement failing busy after waiting)."""

        def __init__(self, *args: Any, timeout: float = 5.0, **kwargs: Any) -> None:
            kwargs["timeout"] = min(timeout, WAITED_MS / 1000)
            super().__init__(*args, **kwargs)

        def _counted(self, run: Callable[..., sqlite3.Cursor], sql: str, *rest: Any) -> sqlite3.Cursor:
            if sql.lstrip().upper().startswith("PRAGMA BUSY_TIMEOUT"):
                asked = int(sql.split("=")[1])
                sql = f"PRAGMA busy_timeout = {min(asked, WAITED_MS)}"
            try:
                return run(sql, *rest)
            except sqlite3.OperationalError as exc:
                message = str(exc).lower()
                if ("locked" in message or "busy" in message) and self._patience() > 0 and in_request():
                    waits.count += 1
                raise

        def _patience(self) -> int:
            return int(super().execute("PRAGMA busy_timeout").fetchone()[0])

        def execute(self, sql: str, *params: Any) -> sqlite3.Cursor:
            return self._counted(super().execute, sql, *params)

        def executemany(self, sql: str, *params: Any) -> sqlite3.Cursor:
            return self._counted(super().executemany, sql, *params)

        def executescript(self, sql: str) -> sqlite3.Cursor:
            return self._counted(super().executescript, sql)

    return Counting


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> Waits:
    found = Waits()
    factory, real = counting(found), sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        return real(*args, factory=factory, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    monkeypatch.setattr(tables, "WAIT_S", WAITED_MS / 2000)  # (a new connection's tries end with its first wait)
    return found


@contextlib.contextmanager
def shut_out(path: Path, mode: str) -> Iterator[None]:
    """Another process holds `path` exclusively until the block ends: in rollback-journal `mode` (readers shut
    out too) or in "wal" mode (writers only)."""
    command = [sys.executable, "-c", HOLD, str(path), mode]
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as holder:
        assert holder.stdin is not None and holder.stdout is not None
        try:
            assert holder.stdout.readline() == "held\n"
            other = contextlib.closing(sqlite3.connect(path, timeout=0, isolation_level=None))
            with other as db, pytest.raises(sqlite3.OperationalError, match="locked"):  # (held indeed)
                db.execute("BEGIN IMMEDIATE" if mode == "wal" else "SELECT count(*) FROM sqlite_master")
            yield
        finally:
            holder.stdin.close()
            holder.wait(timeout=60)


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
