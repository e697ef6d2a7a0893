#!/usr/bin/env python3
"""Benchmark `contextflow ui` on a large store: how long the first page takes to render.

Generates a store of N note/handoff events (default 100k, the budget: the first page renders
within 1 s of the request), starts `contextflow ui --port 0 --no-open` as a real process, and
measures in Debian's chromium (Playwright) the time from asking for the busiest project's page
to its first timeline entry on screen: right after start-up (the server is still folding the
store), and again once warm; with and without the machine-local snapshot. Also the JSON calls
of that page alone. Prints figures only.

    scripts/bench_ui.py [--events 100000]

Everything lives in a temporary folder; the real home is never touched.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
if (VENV / "bin" / "python").exists() and Path(sys.prefix).resolve() != VENV.resolve():
    os.execv(str(VENV / "bin" / "python"), [str(VENV / "bin" / "python"), __file__, *sys.argv[1:]])
sys.path[:0] = [str(Path(__file__).resolve().parent), str(ROOT)]

import argparse  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from typing import Any  # noqa: E402
from urllib.parse import quote  # noqa: E402

import httpx2  # noqa: E402
from benchlib.storegen import generate_store  # noqa: E402

from tests.ui.serving import browser, have_chromium  # noqa: E402


@contextmanager
def ui_process(env: dict[str, str]) -> Iterator[str]:
    """`contextflow ui` in its own process; yields the URL it printed first; always stopped."""
    command = [sys.executable, "-m", "contextflow", "ui", "--port", "0", "--no-open"]
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as process:
        try:
            assert process.stdout is not None
            yield process.stdout.readline().strip()
        finally:
            process.terminate()
            process.wait(30)


def first_page(page: Any, url: str, project: str) -> float:
    """Seconds from asking for the project's page to its first timeline entry on screen."""
    began = time.perf_counter()
    page.goto(url + "#/project/" + quote(project, safe=""))
    page.wait_for_selector("#timeline article", timeout=120_000)
    return time.perf_counter() - began


def api_calls(url: str, project: str) -> tuple[float, float, float]:
    """Seconds for the page's two JSON calls (sessions and the first page of entries), warm; then
    for the first search (it loads the search index) and a second one."""
    with httpx2.Client(timeout=120, follow_redirects=True) as client:
        client.get(url)
        base = url.split("/?")[0]
        began = time.perf_counter()
        client.get(base + "/api/sessions", params={"project": project}).raise_for_status()
        client.get(base + "/api/entries", params={"project": project}).raise_for_status()
        page = time.perf_counter()
        client.get(base + "/api/search", params={"q": "parser tests"}).raise_for_status()
        first = time.perf_counter()
        client.get(base + "/api/search", params={"q": "sync conflict"}).raise_for_status()
        return page - began, first - page, time.perf_counter() - first


def live_update(page: Any, env: dict[str, str], project: str) -> float:
    """Seconds from another writer's append to its entry on the open page (no reload)."""
    from contextflow.app import App
    from contextflow.sessions import core as sessions

    other = App.open({**env, "CONTEXTFLOW_WRITER": "elsewhere"})
    try:
        other.store.refresh()  # a writer that is already running (an agent's server): its own fold is not timed
        began = time.perf_counter()
        sessions.append_note(other, agent="bench", text="live-marker-note", project=project)
        page.wait_for_selector("text=live-marker-note", timeout=60_000)
        return time.perf_counter() - began
    finally:
        other.close()


def save_snapshot(env: dict[str, str]) -> float:
    from contextflow.app import App

    began = time.perf_counter()
    app = App.open(env)
    for view in ("sessions", "graph", "search"):
        app.store.view(view)
    app.store.save_snapshot(force=True)
    app.close()
    return time.perf_counter() - began


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    events = parser.parse_args().events
    missing = have_chromium()
    if missing:
        print(f"bench_ui: {missing}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        inherited = {k: v for k, v in os.environ.items() if not k.startswith(("CONTEXTFLOW_", "MCP_SHARED_CONTEXT_"))}
        env = {
            **inherited,
            "HOME": str(root),
            "CONTEXTFLOW_STORE": str(root / "store"),
            "CONTEXTFLOW_STATE": str(root / "state"),
            "CONTEXTFLOW_WRITER": "bench",
        }
        store = generate_store(root / "store", events)
        project = max(store.sessions, key=lambda p: len(store.sessions[p]))
        print(f"store: {events:,} events, {store.bytes / 1e6:.1f} MB; page: project {project}")
        for label in ("no snapshot", "with snapshot"):
            if label == "with snapshot":
                print(f"  (folding and saving the snapshot took {save_snapshot(env):.2f} s)")
            with ui_process(env) as url, browser() as page:
                cold = first_page(page, url, project)
                warm = first_page(page, url, project)
                calls, search, again = api_calls(url, project)
                shown = live_update(page, env, project)
            print(
                f"{label:14} first page right after start-up: {cold:6.2f} s | warm: {warm:5.2f} s "
                f"(budget 1 s) | its JSON calls: {calls * 1000:5.0f} ms | first search {search:5.2f} s, "
                f"next {again * 1000:4.0f} ms | another writer's note on screen after {shown:4.2f} s"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
