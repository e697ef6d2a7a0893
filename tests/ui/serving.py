"""The UI server in a thread on a free loopback port, and Debian's chromium through Playwright; both
bounded in time and always stopped, also when a test fails. Used by the browser tests and
`scripts/screenshots.py`."""

from __future__ import annotations

import secrets
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from contextflow.adapters.ui.api import Api
from contextflow.adapters.ui.server import bind, build_app
from contextflow.app import App

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
START_TIMEOUT = 15.0
STOP_TIMEOUT = 15.0


@contextmanager
def running(app: App) -> Iterator[str]:
    """The UI served from a thread; yields the URL with its token."""
    sock = bind(0)
    port = sock.getsockname()[1]
    token = secrets.token_urlsafe(16)
    api = Api(app)
    config = uvicorn.Config(
        build_app(app, token, port, api),
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    api.stopping = lambda: server.should_exit
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        # the socket already listens: requests queue until uvicorn accepts them, so nothing to wait for
        assert thread.is_alive(), "the UI server thread died while starting"
        yield f"http://127.0.0.1:{port}/?token={token}"
    finally:
        server.should_exit = True
        thread.join(STOP_TIMEOUT)
        sock.close()
        api.close()  # a search index build it started stops too
        assert not thread.is_alive(), "the UI server did not stop"


def have_chromium() -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[dev]')"
    if shutil.which(CHROMIUM) is None:
        return f"{CHROMIUM} is missing (scripts/test installs Debian's chromium as root)"
    return None


@contextmanager
def browser() -> Iterator[Any]:
    """A headless chromium page (1280 x 900), closed whatever happens."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=30_000)
        try:
            context = launched.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            page.set_default_timeout(10_000)
            yield page
        finally:
            launched.close()
