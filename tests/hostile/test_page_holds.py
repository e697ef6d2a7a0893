"""The page cannot be held down without its token, and its token never appears on a command line.

1,100 connections that send half a request and wait (at a common 1,024 open-file limit) used to take
every descriptor `contextflow ui` had: now connections that have not shown the token are capped (the
oldest closed first) and must send their headers within a bound, so a request with the token is
answered while they are held. The browser is opened on a one-time code, not the token.

The test waits for events, not deadlines: the server runs with its header timeout out of reach, so the
only way the request can be answered is the cap; and the newest held connection is checked to be still
open when the answer comes. HANG_GUARD_S only stops a broken run from hanging the suite."""

from __future__ import annotations

import contextlib
import resource
import socket
import subprocess
import sys
from collections.abc import Iterator

import httpx2 as httpx
import pytest

from contextflow.adapters.ui import server as ui_server
from contextflow.adapters.ui.server import build_app
from contextflow.app import App

HELD = 1_100
HANG_GUARD_S = 120.0  # not a speed expectation: the bound on a run that would otherwise hang
# `contextflow ui` with its unproven connections' header timeout far beyond the test: only the cap can free a descriptor
SERVE = (
    "import sys, runpy; from contextflow.adapters.ui import transport; "
    "transport.Connections.__init__.__defaults__ = (transport.MAX_UNPROVEN, 3600.0); "
    "sys.argv = ['contextflow', 'ui', '--port', '0', '--no-open']; "
    "runpy.run_module('contextflow', run_name='__main__')"
)


def _limit_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


@contextlib.contextmanager
def _ui() -> Iterator[str]:
    command = [sys.executable, "-c", SERVE]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, preexec_fn=_limit_files
    )
    try:
        assert process.stdout is not None
        yield process.stdout.readline().strip()
    finally:
        process.kill()
        process.wait(15)
        if process.stdout is not None:
            process.stdout.close()


def test_a_request_with_the_token_is_answered_while_1100_half_open_connections_are_held():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < HELD + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, HELD + 256), hard))
    held: list[socket.socket] = []
    with _ui() as url:
        port = int(url.split(":")[2].split("/")[0])
        try:
            for _ in range(HELD):
                conn = socket.create_connection(("127.0.0.1", port), timeout=5)
                conn.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ".encode())  # never finished
                held.append(conn)
            response = httpx.get(url, timeout=HANG_GUARD_S)
            assert response.status_code == 303 and response.cookies, response
            newest = held[-1]
            newest.setblocking(False)
            with pytest.raises(BlockingIOError):  # still open, nothing sent back: it was held all along
                newest.recv(1)
        finally:
            for conn in held:
                conn.close()


def test_the_browser_is_opened_on_a_one_time_code_not_the_token(monkeypatch, app):
    opened: list[str] = []
    monkeypatch.setattr(ui_server.webbrowser, "open", lambda url, *a, **k: opened.append(url) or True)
    monkeypatch.setattr("uvicorn.Server.run", lambda self, sockets=None: None)
    monkeypatch.setattr(ui_server.threading, "Thread", _InlineThread)
    printed: list[str] = []
    monkeypatch.setattr("builtins.print", lambda *a, **k: printed.append(" ".join(map(str, a))))
    ui_server.run_ui(app, 0, open_browser=True)
    token = printed[0].split("token=")[1]
    assert opened and token not in opened[0] and "code=" in opened[0]


class _InlineThread:
    def __init__(self, target, args=(), kwargs=None, daemon=None):  # type: ignore[no-untyped-def]
        self.run = lambda: target(*args, **(kwargs or {}))

    def start(self) -> None:
        self.run()


def test_the_one_time_code_works_once(app: App):
    from starlette.testclient import TestClient

    guard = build_app(app, "the-token", 8123)
    code = guard.one_time_code()
    client = TestClient(guard, base_url="http://127.0.0.1:8123")
    first = client.get(f"/?code={code}", follow_redirects=False)
    assert first.status_code == 303 and "contextflow_ui_8123" in first.cookies
    again = TestClient(guard, base_url="http://127.0.0.1:8123").get(f"/?code={code}", follow_redirects=False)
    assert again.status_code == 401


@pytest.mark.parametrize("code", ["", "wrong", "x" * 500])
def test_a_wrong_code_is_refused(app: App, code: str):
    from starlette.testclient import TestClient

    guard = build_app(app, "the-token", 8123)
    guard.one_time_code()
    response = TestClient(guard, base_url="http://127.0.0.1:8123").get(f"/?code={code}", follow_redirects=False)
    assert response.status_code == 401
