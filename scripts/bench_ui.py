#!/usr/bin/env python3
"""Benchmark `contextflow ui` on a large store: the first page, the first search, the server's memory.

Generates a store of N note/handoff events (default 100k), starts `contextflow ui --port 0
--no-open` as a real process and measures in Debian's chromium (Playwright):

- the first page: from asking for the busiest project's page to its first timeline entry;
- the first search: from asking for it to the first word on screen about it (results, or the
  index being built with its progress), and to its results;
- the server's memory (peak and current resident set) after both.

Twice: with fresh state (a new machine: no derived state) and warm (a second
server on the state the first one left). Then another writer's note on the open page. Each
figure is printed beside its target. Prints figures only.

    scripts/bench_ui.py [--events 100000]
    scripts/bench_ui.py --pages     # the pages of tests/ui/bigstore.py's store instead (see page_figures)

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
from dataclasses import dataclass  # noqa: E402
from typing import Any  # noqa: E402
from urllib.parse import quote  # noqa: E402

from benchlib.storegen import generate_store  # noqa: E402

from tests.ui.serving import browser, have_chromium  # noqa: E402

QUERY = "parser tests"
# targets: seconds (memory in MB)
TARGETS = {
    "page fresh": 2.0,
    "page warm": 1.0,
    "search says something fresh": 1.0,
    "search results fresh": 30.0,
    "search warm": 1.0,
    "memory": 400.0,
    "live": 2.0,
    "health": 1.0,
    "graph 2000": 2.0,
    "find": 1.0,
    "neighbourhood": 2.0,
}


@dataclass
class Server:
    url: str
    pid: int


@contextmanager
def ui_process(env: dict[str, str]) -> Iterator[Server]:
    """`contextflow ui` in its own process; yields the URL it printed first; always stopped."""
    command = [sys.executable, "-m", "contextflow", "ui", "--port", "0", "--no-open"]
    env = {**env, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as process:
        try:
            assert process.stdout is not None
            yield Server(process.stdout.readline().strip(), process.pid)
        finally:
            process.terminate()
            process.wait(60)


def memory_mb(pid: int) -> tuple[float, float]:
    """(peak, current) resident set of a live process in MB."""
    found = {"VmHWM": 0.0, "VmRSS": 0.0}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name = line.split(":")[0]
        if name in found:
            found[name] = int(line.split()[1]) / 1024
    return found["VmHWM"], found["VmRSS"]


def first_page(page: Any, url: str, project: str) -> float:
    """Seconds from asking for the project's page to its first timeline entry on screen."""
    began = time.perf_counter()
    page.goto(url.split("/?")[0] + "/#/project/" + quote(project, safe=""))
    page.wait_for_selector("#timeline article", timeout=120_000)
    return time.perf_counter() - began


def first_search(page: Any, url: str) -> tuple[float | None, float]:
    """Seconds from asking for a search to the page saying anything about it (results, or that the
    index is being built), None when it never did before the results; and to its results."""
    began = time.perf_counter()
    page.goto(url.split("/?")[0] + "/#/search?q=" + quote(QUERY))
    said = None
    deadline = began + 300
    while time.perf_counter() < deadline:
        state = page.evaluate(
            "() => document.querySelector('ol.results li, main .results-none') ? 'results'"
            " : (document.querySelector('#index-progress') ? 'progress' : '')"
        )
        now = time.perf_counter() - began
        if state and said is None:
            said = now
        if state == "results":
            return said, now
        page.wait_for_timeout(50)
    raise TimeoutError("no search results within 300 s")


# when the open page first shows the marker note (window.seenAt, ms since the epoch)
SEEN = """() => {
  const observer = new MutationObserver(() => {
    if (document.body.textContent.includes("live-marker-note")) { window.seenAt = Date.now(); observer.disconnect(); }
  });
  observer.observe(document.body, { childList: true, subtree: true, characterData: true });
}"""


def live_update(page: Any, env: dict[str, str], project: str) -> float:
    """Seconds from another writer's append to its entry on the open page (no reload)."""
    from contextflow.app import App
    from contextflow.sessions import core as sessions

    other = App.open({**env, "CONTEXTFLOW_WRITER": "elsewhere"})
    try:
        other.store.refresh()  # a writer that is already running (an agent's server): its own fold is not timed
        page.evaluate(SEEN)  # stamped by the page itself: Playwright's own polling (up to 0.5 s) is not timed
        began = time.time()
        sessions.append_note(other, agent="bench", text="live-marker-note", project=project)
        page.wait_for_function("() => window.seenAt !== undefined", timeout=60_000)
        return float(page.evaluate("window.seenAt")) / 1000 - began
    finally:
        other.close()


def rendered(page: Any, base: str, route: str, ready: str) -> float:
    """Seconds from asking for a route (in the open page) to `ready` on screen, drawn anew."""
    before = page.evaluate("document.body.dataset.rendered || ''")
    began = time.perf_counter()
    page.goto(f"{base}/#{route}")
    page.wait_for_function("b => (document.body.dataset.rendered || '') !== b", arg=before, timeout=120_000)
    page.wait_for_selector(ready, timeout=120_000)
    return time.perf_counter() - began


def page_figures(root: Path, env: dict[str, str]) -> None:
    """The pages of a 100,000-event store with 2,000 graph nodes and 200 sessions with long handoffs
    (`tests/ui/bigstore.py`), its derived tables built first, on a server that has warmed up: the
    Health page, all 2,000 nodes drawn, a node found by its words and its neighbourhood drawn, and
    the height of the busiest project's page."""
    from contextflow.app import App
    from tests.ui.bigstore import build

    big = build(Path(env["CONTEXTFLOW_STORE"]))
    app = App.open(env)
    app.tables().update(600, foreground=True)
    app.close()
    print(f"store: tests/ui/bigstore.py, 100,000 events, {len(big.nodes):,} graph nodes; project {big.busiest}")
    with ui_process(env) as server, browser() as page:
        page.goto(server.url)
        base = server.url.split("/?")[0]
        page.wait_for_selector("main h1", timeout=120_000)
        health = min(rendered(page, base, f"/health?n={n}", "main table") for n in range(3))  # after the warm-up
        drawn = rendered(page, base, "/graph?limit=2000", "#graph-canvas[data-ready]")
        layout = float(page.get_attribute("#graph-canvas", "data-layout-ms") or "nan") / 1000
        page.get_by_label("Find a node").fill("(#1500)")
        began = time.perf_counter()
        page.get_by_role("button", name="Find", exact=True).click()
        page.wait_for_selector(f'#find-results a[data-id="{big.nodes[1500]}"]')
        found = time.perf_counter() - began
        before = page.evaluate("document.body.dataset.rendered")
        began = time.perf_counter()
        page.locator("#find-results a").first.click()
        page.wait_for_function("b => document.body.dataset.rendered !== b", arg=before)
        page.wait_for_selector("#graph-canvas[data-ready]")
        near = time.perf_counter() - began
        rendered(page, base, "/project/" + quote(big.busiest, safe=""), "#timeline article")
        height = page.evaluate("document.documentElement.scrollHeight")
    load = os.getloadavg()[0]
    print(f"pages (warm server; load average {load:.1f} on {os.cpu_count()} cores):")
    print(row("Health page", health, TARGETS["health"]))
    print(row("2,000 graph nodes on screen", drawn, TARGETS["graph 2000"]))
    print(f"  {'  of which built and placed':34} {layout:7.2f} s")
    print(row("find a node: its results", found, TARGETS["find"]))
    print(row("a found node's neighbourhood drawn", near, TARGETS["neighbourhood"]))
    print(f"  {'busiest project page, height':34} {height:7d} px")


def row(label: str, value: float | None, target: float, unit: str = "s") -> str:
    shown = "never" if value is None else (f"{value:7.2f} {unit}" if unit == "s" else f"{value:7.0f} {unit}")
    ok = value is not None and value <= target
    return f"  {label:34} {shown:>10}   target {target:g} {unit}  {'ok' if ok else 'MISSED'}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--pages", action="store_true", help="the pages of tests/ui/bigstore.py's store instead")
    args = parser.parse_args()
    events = args.events
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
        if args.pages:
            page_figures(root, env)
            return 0
        store = generate_store(root / "store", events)
        project = max(store.sessions, key=lambda p: len(store.sessions[p]))
        print(f"store: {events:,} events, {store.bytes / 1e6:.1f} MB; page: project {project}; search {QUERY!r}")
        for label in ("fresh", "warm"):
            with ui_process(env) as server, browser() as page:
                page.goto(server.url)
                shown = first_page(page, server.url, project)
                said, results = first_search(page, server.url)
                peak, now = memory_mb(server.pid)
                if label == "warm":
                    first_page(page, server.url, project)  # back on the project's page
                live = live_update(page, env, project) if label == "warm" else None
            print(
                f"{label} state ({'a new machine' if label == 'fresh' else 'a second server on what the first left'}):"
            )
            print(row("first page", shown, TARGETS[f"page {label}"]))
            if label == "fresh":
                print(row("first search: first word on screen", said, TARGETS["search says something fresh"]))
                print(row("first search: results", results, TARGETS["search results fresh"]))
            else:
                print(row("first search: results", results, TARGETS["search warm"]))
            print(row("server memory, peak", peak, TARGETS["memory"], "MB"))
            print(f"  {'server memory, now':34} {now:7.0f} MB")
            if live is not None:
                print(row("another writer's note on screen", live, TARGETS["live"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
