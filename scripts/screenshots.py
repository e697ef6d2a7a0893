"""Screenshots of the main pages of `contextflow ui` for the README (docs/screenshots/*.png).

Writes a demo store by real tool calls (the one the UI tests use) in a temporary folder, serves
the UI on a free loopback port and photographs each page in Debian's chromium through Playwright.

    .venv/bin/python scripts/screenshots.py [OUT_DIR]
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PAGES = [  # file name, route, what to wait for
    ("projects", "/", "main table"),
    ("timeline", "/project/acme%2Fshop", "#timeline article"),
    ("session-start", "/start/acme%2Fshop?session=checkout-flow", "#start-context"),
    ("search", "/search?q=refunds+cents", "ol.results li"),
    ("graph", "/graph?node={fact}", "#node-detail"),
    ("health", "/health", "main table"),
]


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
                    page.goto(f"{base}/#{route.format(**written.nodes)}")
                    page.wait_for_selector(ready)
                    page.wait_for_function("document.getElementById('live').textContent === 'live'")
                    target = out / f"{name}.png"
                    page.screenshot(path=str(target), full_page=False)
                    print(target.relative_to(ROOT) if target.is_relative_to(ROOT) else target)
        finally:
            app.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
