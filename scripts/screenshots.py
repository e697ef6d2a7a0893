"""Screenshots of the main pages of `contextflow ui` for the README (docs/screenshots/*.png).

Writes a demo store by real tool calls (the one the UI tests use, and a few dozen more graph nodes
through the same operations) in a temporary folder, serves the UI on a free loopback port and
photographs each page in Debian's chromium through Playwright. Then the graph of a big store
(`tests/ui/bigstore.py`: 2,000 nodes): all of them grouped by type, and a node found by its words
with its neighbourhood and details.

    .venv/bin/python scripts/screenshots.py [OUT_DIR]
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contextflow.app import App

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PAGES = [  # file name, route, what to wait for
    ("feed", "/feed", "#feed li"),
    ("projects", "/", "main table"),
    ("timeline", "/project/acme%2Fshop", "#timeline article"),
    ("session-start", "/start/acme%2Fshop?session=checkout-flow", "#start-context"),
    ("search", "/search?q=refunds+cents", "ol.results li"),
    ("graph", "/graph?node={fact}", "#node-detail"),
    ("graph-neighbourhood", "/graph?around={decision}&depth=2", "#graph-canvas[data-ready]"),
    ("health", "/health", "main table"),
]


TOPICS = (
    "Refunds settle asynchronously through the payments worker",
    "Partial refunds need the original line items",
    "Cart totals are integers in cents everywhere",
    "The checkout API rejects floats with a 422",
    "Currency conversion happens once, at order time",
    "Refund emails are sent by the notifications service",
    "Idempotency keys guard every payment call",
    "Stripe webhooks retry for three days",
    "Order history is paginated by created_at",
    "Taxes are computed by the tax service, never locally",
    "Discount codes are case-insensitive",
    "The settlement report runs nightly at 02:00 UTC",
)


def more_nodes(app: App, decision: str) -> None:
    """A few dozen nodes and edges written through the operations table, for a graph worth a picture."""
    from contextflow.operations.spec import operations

    ops = {op.name: op for op in operations()}
    made = [decision]
    kinds = ("fact", "decision", "pattern", "observation", "task", "open-question")
    for n, topic in enumerate(TOPICS * 3):
        links = [{"to": made[(n * 7) % len(made)], "type": ("DEPENDS_ON", "RELATES_TO", "DERIVED_FROM")[n % 3]}]
        args = {"type": kinds[n % len(kinds)], "content": f"{topic} ({n // len(TOPICS) + 1})", "links": links}
        made.append(ops["graph_remember"].run(app, {**args, "agent": ("claude", "codex", "gemini")[n % 3]}).data["id"])


def big_graph(out: Path, tmp: str) -> None:
    """All 2,000 nodes of the big store; and a node found by its words, its neighbourhood drawn."""
    from contextflow.app import App
    from tests.ui.bigstore import build
    from tests.ui.serving import browser, running

    os.environ.update(CONTEXTFLOW_STORE=f"{tmp}/big", CONTEXTFLOW_STATE=f"{tmp}/big-state")
    big = build(Path(f"{tmp}/big"))
    app = App.open()
    app.tables().update(600, foreground=True)
    try:
        with running(app) as url, browser() as page:
            page.set_default_timeout(60_000)
            page.goto(url)
            base = url.split("/?")[0]
            page.goto(f"{base}/#/graph?limit=2000")
            page.wait_for_selector("#graph-canvas[data-ready]")
            shoot(page, out / "graph-2000.png")
            page.goto(f"{base}/#/graph")
            page.wait_for_selector("#graph-canvas[data-ready]")
            page.get_by_label("Find a node").fill("(#1502)")
            page.get_by_role("button", name="Find", exact=True).click()
            page.locator("#find-results a").first.click()
            page.wait_for_selector(f'#node-detail[data-id="{big.nodes[1502]}"]')
            page.wait_for_selector("#graph-canvas[data-ready]")
            shoot(page, out / "graph-find.png")
    finally:
        app.close()


def shoot(page: Any, target: Path, full_page: bool = False) -> None:
    page.wait_for_function("document.getElementById('live').textContent === 'live'")
    page.screenshot(path=str(target), full_page=full_page)
    print(target.relative_to(ROOT) if target.is_relative_to(ROOT) else target)


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.update(
            CONTEXTFLOW_STORE=f"{tmp}/store",
            CONTEXTFLOW_STATE=f"{tmp}/state",
            CONTEXTFLOW_WRITER="laptop",
            MCP_SHARED_CONTEXT_PROJECT="acme/shop",
        )
        from contextflow.app import App
        from tests.ui.serving import browser, have_chromium, running
        from tests.ui.workload import write_store_sync

        missing = have_chromium()
        if missing:
            print(f"screenshots: {missing}", file=sys.stderr)
            return 1
        written = write_store_sync()
        app = App.open()
        try:
            with running(app) as url, browser() as page:
                page.goto(url)
                base = url.split("/?")[0]
                for name, route, ready in PAGES:
                    if name == "search":  # after the feed and the timeline: a graph worth a picture
                        more_nodes(app, written.nodes["decision"])
                    page.goto(f"{base}/#{route.format(**written.nodes)}")
                    page.wait_for_selector(ready)
                    shoot(page, out / f"{name}.png", full_page=name.startswith("graph"))
        finally:
            app.close()
        big_graph(out, tmp)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
