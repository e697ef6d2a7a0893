"""`contextflow ui` in a real browser (Debian's chromium through Playwright), over a store written by
real tool calls: every page, search, pinning a node into the next session start, marking a handoff
wrong, live updates from another writer, and stored markup that must stay text."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import pytest

from contextflow.adapters import hooks
from contextflow.app import App
from contextflow.sessions import core as sessions
from tests.conftest import open_app
from tests.ui.serving import browser, have_chromium, running
from tests.ui.workload import HOSTILE_IMG, HOSTILE_SCRIPT, Written, write_store_sync

pytestmark = [pytest.mark.slow, pytest.mark.skipif(have_chromium() is not None, reason=str(have_chromium()))]


@pytest.fixture
def written() -> Written:
    return write_store_sync()


@pytest.fixture
def ui(written: Written) -> Iterator[tuple[Any, str]]:
    """A page logged in to a running UI server: (page, base URL)."""
    app = App.open()
    try:
        with running(app) as url, browser() as page:
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(url)  # the token becomes a cookie and leaves the address bar
            assert "token=" not in page.url
            page.wait_for_selector("main h1")
            yield page, url.split("/?")[0]
            assert errors == [], errors
    finally:
        app.close()


def visit(page: Any, base: str, route: str) -> None:
    """Open a route and wait until the page rendered it."""
    settled(page, lambda: page.goto(f"{base}/#{route}") if page.url != f"{base}/#{route}" else page.reload())


def settled(page: Any, action: Any) -> None:
    """Do something that renders the page again, and wait for that render to finish."""
    before = page.evaluate("document.body.dataset.rendered || ''")
    action()
    page.wait_for_function("before => (document.body.dataset.rendered || '') !== before", arg=before)


def main_text(page: Any) -> str:
    return str(page.inner_text("main"))


def session_start(project: str = "shared", session: str = "") -> str:
    env = {**os.environ, "MCP_SHARED_CONTEXT_PROJECT": project, "MCP_SHARED_CONTEXT_ACTIVE_SESSION": session}
    return hooks.run("session-start", b"{}", env)


def assert_labelled(page: Any) -> None:
    """Every control has a name a screen reader can say: a label, or its own text."""
    unnamed = page.evaluate("""() => [...document.querySelectorAll('input, select, textarea, button')]
        .filter((el) => !el.hidden && !el.closest('[hidden]'))
        .filter((el) => !(el.labels && el.labels.length) && !el.textContent.trim() && !el.getAttribute('aria-label'))
        .map((el) => el.outerHTML)""")
    assert unnamed == []


def assert_no_markup_ran(page: Any) -> None:
    assert page.evaluate("window.__pwned") is None
    assert page.locator("main img, main script").count() == 0


def test_every_page_shows_the_store(ui: tuple[Any, str], written: Written) -> None:
    page, base = ui
    assert page.locator("main table tbody tr").count() == 3
    assert "acme/shop" in main_text(page) and "acme/api" in main_text(page)
    settled(page, lambda: page.click("text=acme/shop"))
    text = main_text(page)
    assert "machine laptop" in text and "machine desktop" in text and "Handoff by codex" in text
    assert page.locator("#timeline article").count() == 5
    visit(page, base, f"/project/example-owner%2Fcalc-demo?session={written.captured_session}")
    text = main_text(page)
    assert "Automatic handoff by" in text and "Asked: Create calc.py" in text and "created: calc.py" in text
    for route, expected in [
        ("/start/acme%2Fshop?session=checkout-flow", "Refunds done and tested"),
        ("/records", "pr:acme/shop:42"),
        ("/threads", "Refunds"),
        ("/conversations", "Money representation"),
        ("/health", "Bad lines"),
        ("/graph", "Showing 3 of 3 nodes"),
        ("/feed", "Picked up checkout on desktop"),
    ]:
        visit(page, base, route)
        assert expected in main_text(page), route
        assert_labelled(page)
    visit(page, base, "/health")
    assert page.locator("#capture-state tbody tr").count() == 1  # one transcript captured (the Stop hook's)
    assert "not built yet on this machine" in page.inner_text("#index-state")  # no search yet
    visit(page, base, "/start/acme%2Fshop?session=checkout-flow")
    assert re.search(r"Claude Code\s+10,000 characters\s+[\d,]+\s+fits", main_text(page))
    visit(page, base, "/records")
    page.click("text=pr:acme/shop:42")
    page.wait_for_selector("main .detail pre")
    assert '"title": "Refund endpoint"' in page.inner_text("main .detail pre")
    visit(page, base, "/threads")
    page.click("main >> text=Refunds")
    page.wait_for_selector("text=Partial refunds later")
    visit(page, base, "/conversations")
    page.click("text=Money representation")
    page.wait_for_selector("text=[rejected]")
    assert "why: rounding errors" in main_text(page)


def test_search_shows_ranked_results_and_why_they_matched(ui: tuple[Any, str]) -> None:
    page, base = ui
    visit(page, base, "/search")
    page.get_by_label("Search", exact=True).fill("refunds payments")
    settled(page, lambda: page.get_by_role("button", name="Search").click())
    first = page.locator("ol.results li").first
    assert "Refunds go through the payments service" in first.inner_text()
    assert "matched payment, refund in text" in first.inner_text()
    first.get_by_role("link").click()  # a node opens in the graph
    page.wait_for_selector("#node-detail")
    assert page.inner_text("#node-content") == "Refunds go through the payments service"


def test_pinning_a_node_in_the_graph_puts_it_in_the_next_session_start(ui: tuple[Any, str], written: Written) -> None:
    page, base = ui
    assert "Refunds go through the payments service" not in session_start()
    visit(page, base, "/graph")
    page.wait_for_selector("#graph-canvas[data-ready]")
    page.locator("summary", has_text="as a list").click()
    node = page.locator(f'.node-list button[data-id="{written.nodes["fact"]}"]')
    node.focus()
    page.keyboard.press("Enter")  # keyboard: a node of the list opens its details
    page.wait_for_selector("#node-detail")
    detail = page.inner_text("#node-detail")
    assert "agent claude" in detail and "machine laptop" in detail and "DEPENDS_ON" in detail
    page.get_by_role("button", name="Pin", exact=True).click()
    page.get_by_role("button", name="Unpin").wait_for()
    assert "Pinned: every session start now carries it." in page.inner_text("#notice")
    assert "Refunds go through the payments service" in session_start()
    visit(page, base, "/start")
    assert "Refunds go through the payments service" in page.inner_text("#start-context")


def test_marking_a_handoff_wrong_changes_the_next_session_start(ui: tuple[Any, str], written: Written) -> None:
    page, base = ui
    bad, good = written.handoffs["second"], written.handoffs["first"]
    assert bad in session_start("acme/shop", "checkout-flow")
    visit(page, base, "/project/acme%2Fshop")
    card = page.locator(f'article[data-id="{bad}"]')
    card.get_by_role("button", name="Show all").click()  # a compact entry opens to its lists and actions
    card.get_by_role("button", name="Mark this handoff as wrong").click()
    card.get_by_label("Reason").fill("refunds still fail")
    card.get_by_role("button", name="Mark wrong").click()
    page.wait_for_selector(f'article[data-id="{bad}"] .badge')
    assert "marked wrong" in page.inner_text(f'article[data-id="{bad}"]')
    output = session_start("acme/shop", "checkout-flow")
    assert good in output and bad not in output


def test_stored_markup_stays_text(ui: tuple[Any, str], written: Written) -> None:
    page, base = ui
    visit(page, base, "/project/acme%2Fshop")
    page.wait_for_selector("#timeline article")
    assert HOSTILE_IMG in main_text(page) and HOSTILE_SCRIPT in main_text(page)
    assert_no_markup_ran(page)
    visit(page, base, f"/graph?node={written.nodes['hostile']}")
    page.wait_for_selector("#node-detail")
    assert page.inner_text("#node-content") == HOSTILE_SCRIPT
    page.wait_for_selector("#graph-canvas[data-ready]")
    label = page.evaluate(
        f"document.querySelector('#graph-canvas')._cy.$id('{written.nodes['hostile']}').data('label')"
    )
    assert label.startswith("</script>")  # drawn on the canvas as text
    visit(page, base, "/search?q=script+pwned")
    assert "/script>" in main_text(page)  # as text (a hit's text is the model's: spaced out, "< /script>")
    assert_no_markup_ran(page)


def test_a_note_written_elsewhere_appears_without_reloading(ui: tuple[Any, str]) -> None:
    page, base = ui
    visit(page, base, "/project/acme%2Fshop")
    page.evaluate("window.__sameDocument = true")
    other = open_app("other-machine")
    try:
        sessions.append_note(
            other, agent="gemini", text="written on another machine", project="acme/shop", session_id="checkout-flow"
        )
    finally:
        other.close()
    page.wait_for_selector("text=written on another machine", timeout=60_000)  # live: no reload
    assert page.evaluate("window.__sameDocument") is True
    assert page.locator("#live").inner_text() == "live"


def test_forgetting_asks_first_can_be_undone_and_says_what_happened(ui: tuple[Any, str], written: Written) -> None:
    page, base = ui
    fact = written.nodes["fact"]
    visit(page, base, f"/graph?node={fact}")
    page.wait_for_selector("#node-detail")
    page.get_by_role("button", name="Forget (delete)").click()
    page.get_by_role("dialog").get_by_role("button", name="Cancel").click()  # asked first: cancelled, nothing sent
    page.get_by_role("button", name="Forget (delete)").click()
    page.get_by_role("dialog").get_by_role("button", name="Forget").click()
    assert "Forgetting node Refunds go through" in page.inner_text("#notice")
    page.locator("#notice").get_by_role("button", name="Undo").click()
    assert page.inner_text("#notice") == "Undone: nothing was changed."
    page.wait_for_selector("#notice", state="hidden", timeout=10_000)  # a notice goes away by itself
    app = App.open()
    try:
        from contextflow.graph.writes import graph

        assert fact in graph(app).live  # undone: still there
    finally:
        app.close()
    drawn = page.evaluate("document.body.dataset.rendered")
    page.get_by_role("button", name="Forget (delete)").click()
    page.get_by_role("dialog").get_by_role("button", name="Forget").click()
    page.wait_for_function(
        "() => document.getElementById('notice').textContent.startsWith('Forgot node')", timeout=15_000
    )
    page.wait_for_function("before => document.body.dataset.rendered !== before", arg=drawn)  # drawn again
    assert "node=" not in page.url  # the page no longer asks for the node
    assert page.locator("main .error").count() == 0  # no "was deleted" beside the notice that says it went well
    assert page.locator("#node-detail").count() == 0
    app = App.open()
    try:
        assert fact not in graph(app).live
    finally:
        app.close()
    visit(page, base, "/records")
    assert page.locator("#notice").is_hidden()  # a notice does not follow you to another page


def test_a_note_added_from_the_page_reaches_the_timeline(ui: tuple[Any, str]) -> None:
    page, base = ui
    visit(page, base, "/project/acme%2Fshop?session=checkout-flow")
    page.locator("summary", has_text="Add a note").click()
    page.get_by_label("Note", exact=True).fill("Refund emails go out from the worker")
    page.get_by_role("button", name="Add the note").click()
    page.wait_for_selector("#timeline >> text=Refund emails go out from the worker")
    assert "Added a note to acme/shop (session checkout-flow)" in page.inner_text("#notice")
    visit(page, base, "/feed")
    assert "Refund emails go out from the worker" in page.inner_text("#feed li >> nth=0")
