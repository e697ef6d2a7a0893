"""`contextflow ui` without a browser: who may connect (token, Host, Origin), the port, and the JSON API
over a store written by real tool calls."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest
from starlette.testclient import TestClient

from contextflow.adapters import hooks
from contextflow.adapters.ui.api import Api
from contextflow.adapters.ui.server import CSP, bind, build_app, cookie_name
from contextflow.app import App
from contextflow.sessions import core as sessions
from tests.conftest import open_app
from tests.ui.serving import running
from tests.ui.workload import CAPTURED_PROJECT, HOSTILE_IMG, Written, write_store_sync

PORT = 8766
TOKEN = "t0ken-for-tests-0123456789abcdef"
BASE = f"http://127.0.0.1:{PORT}"
COOKIE = {"cookie": f"{cookie_name(PORT)}={TOKEN}"}


@pytest.fixture
def written() -> Written:
    return write_store_sync()


@pytest.fixture
def ui(written: Written) -> Iterator[TestClient]:
    app = App.open()
    pages = Api(app)
    try:
        with TestClient(build_app(app, TOKEN, PORT, pages), base_url=BASE, follow_redirects=False) as client:
            yield client
    finally:
        pages.close()
        app.close()


def api(ui: TestClient, name: str, **params: str) -> dict:
    response = ui.get(f"/api/{name}", params=params, headers=COOKIE)
    assert response.status_code == 200, response.text
    return response.json()


def send(ui: TestClient, name: str, body: dict) -> httpx.Response:
    return ui.post(f"/api/{name}", json=body, headers={**COOKIE, "origin": BASE})


# -- who may connect -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [{}, {"cookie": f"{cookie_name(PORT)}=wrong"}, {"cookie": f"other={TOKEN}"}, {"authorization": f"Bearer {TOKEN}"}],
)
def test_requests_without_the_token_are_refused(ui: TestClient, headers: dict[str, str]) -> None:
    for path in ("/", "/api/overview", "/static/app.js", "/api/events"):
        response = ui.get(path, headers=headers)
        assert response.status_code == 401, path
        assert TOKEN not in response.text
        assert response.headers["content-security-policy"] == CSP


def test_a_wrong_token_in_the_url_is_refused(ui: TestClient) -> None:
    assert ui.get("/?token=" + TOKEN[:-1] + "x").status_code == 401


def test_the_token_in_the_url_becomes_a_strict_http_only_cookie(ui: TestClient) -> None:
    response = ui.get(f"/?token={TOKEN}")
    assert response.status_code == 303
    assert response.headers["location"] == "/"  # the token leaves the address bar
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{cookie_name(PORT)}={TOKEN};")
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    assert ui.get("/", headers=COOKIE).status_code == 200
    app = App.open()
    scope = {
        "type": "http",
        "method": "GET",
        "path": "//evil.example/x",
        "query_string": f"token={TOKEN}&a=1".encode(),
        "headers": [(b"host", f"127.0.0.1:{PORT}".encode())],
    }
    redirect = build_app(app, TOKEN, PORT).refusal(scope)
    app.close()
    assert redirect is not None and redirect.headers["location"] == "/evil.example/x?a=1"  # never to another host


@pytest.mark.parametrize(
    "host", ["evil.example", f"evil.example:{PORT}", "127.0.0.1:9999", f"0.0.0.0:{PORT}", f"127.0.0.1.nip.io:{PORT}"]
)
def test_a_foreign_host_header_is_refused_even_with_the_token(ui: TestClient, host: str) -> None:
    for path in ("/api/overview", f"/?token={TOKEN}"):
        response = ui.get(path, headers={**COOKIE, "host": host})
        assert response.status_code == 403, (host, path)
        assert "Host" in response.text


@pytest.mark.parametrize(
    "origin", ["http://evil.example", f"http://127.0.0.1:{PORT + 1}", "null", f"https://127.0.0.1:{PORT}"]
)
def test_a_foreign_origin_is_refused(ui: TestClient, origin: str, written: Written) -> None:
    assert ui.get("/api/overview", headers={**COOKIE, "origin": origin}).status_code == 403
    response = ui.post(
        "/api/node", json={"id": written.nodes["fact"], "action": "pin"}, headers={**COOKIE, "origin": origin}
    )
    assert response.status_code == 403


def test_writes_need_the_page_origin_and_cross_site_fetches_are_refused(ui: TestClient, written: Written) -> None:
    body = {"id": written.nodes["fact"], "action": "pin"}
    assert ui.post("/api/node", json=body, headers=COOKIE).status_code == 403  # no Origin: not from the page
    assert ui.get("/api/overview", headers={**COOKIE, "sec-fetch-site": "cross-site"}).status_code == 403
    assert send(ui, "node", body).status_code == 200


def test_every_response_carries_the_security_headers(ui: TestClient) -> None:
    for path in ("/", "/static/app.js", "/api/overview"):
        response = ui.get(path, headers=COOKIE)
        assert response.headers["content-security-policy"] == CSP
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "no-referrer"
    assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP


def test_port_0_binds_a_free_loopback_port() -> None:
    sock = bind(0)
    try:
        host, port = sock.getsockname()
        assert host == "127.0.0.1" and port > 0
    finally:
        sock.close()


def test_the_command_prints_the_url_with_the_stores_token_first_and_serves_only_with_it(written: Written) -> None:
    command = [sys.executable, "-m", "contextflow", "ui", "--port", "0", "--no-open"]
    urls = []
    for _ in range(2):
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as process:
            try:
                assert process.stdout is not None
                first = process.stdout.readline().strip()  # printed once the socket listens
                assert first.startswith("http://127.0.0.1:") and "/?token=" in first, first
                urls.append(first)
                base = first.split("/?")[0]
                assert httpx.get(base + "/api/overview", timeout=15).status_code == 401
                with httpx.Client(timeout=15, follow_redirects=True) as client:
                    assert client.get(first).status_code == 200  # redirected, with the cookie
                    projects = client.get(base + "/api/overview").json()["projects"]
                assert {p["name"] for p in projects} == {"acme/shop", "acme/api", CAPTURED_PROJECT}
            finally:
                process.terminate()
                process.wait(15)
    assert urls[0].split("token=")[1] == urls[1].split("token=")[1]  # kept for the store (test_address.py)


def test_the_live_stream_says_when_another_writer_appends(written: Written) -> None:
    app = App.open()
    try:
        with running(app) as url, httpx.Client(timeout=15, follow_redirects=True) as client:
            client.get(url)  # the cookie
            with client.stream("GET", url.split("/?")[0] + "/api/events") as stream:
                assert stream.headers["content-type"].startswith("text/event-stream")
                events = (line for line in stream.iter_lines() if line.startswith("data:"))
                assert next(events) == "data: 0"
                other = open_app("other-machine")
                sessions.append_note(other, agent="gemini", text="from elsewhere", project="acme/shop")
                other.close()
                assert next(events) == "data: 1"  # within a poll or two, bounded by the read timeout
    finally:
        app.close()


# -- the JSON API ------------------------------------------------------------------------------


def test_projects_and_a_timeline_across_agents_and_machines(ui: TestClient, written: Written) -> None:
    other = App.open()
    sessions.set_active_session(other, "rate-limits")  # the timeline is every session's, whatever is active
    other.close()
    projects = api(ui, "overview")["projects"]
    assert [p["name"] for p in projects] == ["example-owner/calc-demo", "acme/shop", "acme/api"]
    shop = projects[1]
    assert shop["sessions"] == 1 and shop["entries"] == 5 and shop["agents"] == ["claude", "codex"]
    entries = api(ui, "entries", project="acme/shop")["entries"]
    assert {e["writer"] for e in entries} == {"laptop", "desktop"}
    assert any(e.get("text") == HOSTILE_IMG for e in entries)  # stored text comes back as it was written
    page = api(ui, "entries", project="acme/shop", limit="2")["entries"]
    older = api(ui, "entries", project="acme/shop", limit="2", before=page[0]["id"])["entries"]
    assert [e["id"] for e in older + page] == [e["id"] for e in entries[-4:]]


def test_a_captured_session_shows_its_turns_and_its_automatic_handoff(ui: TestClient, written: Written) -> None:
    session = written.captured_session
    turns = api(ui, "activity", project=CAPTURED_PROJECT, session=session)["turns"]
    assert len(turns) == 1 and turns[0]["turn"]["files"]["created"] == ["calc.py"]
    handoff = api(ui, "entries", project=CAPTURED_PROJECT, session=session)["entries"][-1]
    assert handoff["kind"] == "handoff" and handoff["auto"] is True
    missing = ui.get("/api/activity", params={"project": CAPTURED_PROJECT}, headers=COOKIE)
    assert missing.status_code == 400 and "session_id" in missing.json()["error"]


def test_the_session_start_preview_is_exactly_what_the_hook_prints(ui: TestClient, written: Written) -> None:
    data = api(ui, "start", project="acme/shop", session="checkout-flow")
    env = {
        **os.environ,
        "MCP_SHARED_CONTEXT_PROJECT": "acme/shop",
        "MCP_SHARED_CONTEXT_ACTIVE_SESSION": "checkout-flow",
    }
    rendered = re.compile(r"rendered at [0-9TZ:.-]+")  # the composed view says when it was rendered
    assert rendered.sub("", data["output"]) == rendered.sub("", hooks.run("session-start", b"{}", env))
    assert "Refunds done and tested" in data["context"]
    assert data["chars"] == len(data["context"])
    limits = {item["client"]: item for item in data["limits"]}
    assert limits["claude-code"]["limit"] == 10_000 and limits["claude-code"]["fits"]


def test_search_ranks_as_get_context_and_says_why(ui: TestClient) -> None:
    data = api(ui, "search", q="refunds payments")
    first = data["results"][0]
    assert first["kind"] == "node" and first["excerpt"] == "Refunds go through the payments service"
    assert first["matched"] == {"text": ["payment", "refund"]}  # stemmed, as the index holds them
    thread = next(result for result in data["results"] if result["kind"] == "thread")  # its thoughts may rank above it
    assert thread["matched"] == {"title": ["refund"], "text": ["refund"]}


def test_the_graph_filters_and_shows_a_nodes_neighbourhood(ui: TestClient, written: Written) -> None:
    everything = api(ui, "graph")
    assert everything["count"] == 3 and everything["total"] == 3
    assert [(e["from"], e["to"], e["type"]) for e in everything["edges"]] == [
        (written.nodes["fact"], written.nodes["decision"], "DEPENDS_ON")
    ]
    decisions = api(ui, "graph", type="decision")
    assert [n["id"] for n in decisions["nodes"]] == [written.nodes["decision"]]
    assert api(ui, "graph", tier="reference")["count"] == 1
    assert api(ui, "graph", tag="project:shop", q="refunds")["count"] == 1
    near = api(ui, "graph", around=written.nodes["decision"])
    assert near["around"] == written.nodes["decision"] and near["nodes"][0]["id"] == written.nodes["decision"]
    assert {n["id"] for n in near["nodes"]} == {written.nodes["decision"], written.nodes["fact"]}
    assert [(e["from"], e["to"]) for e in near["edges"]] == [(written.nodes["fact"], written.nodes["decision"])]
    missing = ui.get("/api/graph", params={"around": "zzzz"}, headers=COOKIE)
    assert missing.status_code == 400 and "zzzz" in missing.json()["error"]
    bad = ui.get("/api/graph", params={"type": "nonsense"}, headers=COOKIE)
    assert bad.status_code == 400 and "type must be one of" in bad.json()["error"]


def test_pinning_a_node_reaches_the_next_session_start(ui: TestClient, written: Written) -> None:
    fact = written.nodes["fact"]
    assert "Refunds go through the payments service" not in api(ui, "start")["context"]
    assert send(ui, "node", {"id": fact, "action": "pin"}).status_code == 200
    assert "tier:pinned" in api(ui, "node", id=fact)["tags"]
    assert "Refunds go through the payments service" in api(ui, "start")["context"]
    send(ui, "node", {"id": fact, "action": "archive"})
    assert api(ui, "node", id=fact)["tags"] == ["project:shop", "tier:off-context"]
    assert "Refunds go through the payments service" not in api(ui, "start")["context"]
    send(ui, "node", {"id": fact, "action": "tags", "add_tags": ["task:refunds"], "remove_tags": ["project:shop"]})
    assert api(ui, "node", id=fact)["tags"] == ["task:refunds", "tier:off-context"]
    assert _last_event(ui)["data"] == {"node": fact, "tags": ["project:shop"], "agent": "human"}  # the person
    send(ui, "node", {"id": fact, "action": "forget"})
    assert ui.get("/api/node", params={"id": fact}, headers=COOKIE).status_code == 400
    assert api(ui, "graph")["count"] == 2


def _last_event(ui: TestClient) -> dict:
    """The newest line of this machine's log (the page's writes land there)."""
    from contextflow.core.locate import writer_id
    from contextflow.core.log import read_whole

    log = next(Path(os.environ["CONTEXTFLOW_STORE"]).glob(f"events.{writer_id(os.environ)}.jsonl"))
    return dict(json.loads(read_whole(log)[1][-1][1]))  # the reader's lines: batch markers left out


def test_marking_a_handoff_wrong_changes_what_agents_resume_from(ui: TestClient, written: Written) -> None:
    start = api(ui, "start", project="acme/shop", session="checkout-flow")["context"]
    assert written.handoffs["second"] in start
    assert send(ui, "handoff-wrong", {"id": written.handoffs["second"], "reason": "refunds fail"}).status_code == 200
    start = api(ui, "start", project="acme/shop", session="checkout-flow")["context"]
    assert written.handoffs["first"] in start and written.handoffs["second"] not in start
    note = api(ui, "entries", project="acme/shop")["entries"][-1]
    assert note["agent"] == "human" and note["wrong_handoff"] == written.handoffs["second"]
    assert "refunds fail" in note["text"]
    sessions = api(ui, "sessions", project="acme/shop")["sessions"]
    assert sessions[0]["latest_handoff_summary"].startswith("Checkout works end to end")


def test_records_threads_conversations_and_health(ui: TestClient, written: Written) -> None:
    records = api(ui, "records")["records"]
    assert [r["key"] for r in records] == ["pr:acme/shop:42"] and records[0]["pinned"]
    assert api(ui, "record", key="pr:acme/shop:42")["value"]["title"] == "Refund endpoint"
    send(ui, "record", {"key": "pr:acme/shop:42", "action": "unpin"})
    assert not api(ui, "record", key="pr:acme/shop:42")["pinned"]
    send(ui, "record", {"key": "pr:acme/shop:42", "action": "forget"})
    assert api(ui, "records")["records"] == []
    threads = api(ui, "threads")["threads"]
    assert [t["name"] for t in threads] == ["Refunds"]
    assert [t["content"] for t in api(ui, "thread", id=written.thread)["thoughts"]] == [
        "Start with full refunds",
        "Partial refunds later",
    ]
    conversations = api(ui, "conversations")["conversations"]
    topics = sorted(c["topic"] for c in conversations)  # the captured session is a conversation record too
    assert topics == [
        "Create calc.py with an add function, then fix it to coerce inputs, and run the tests.  Keep notes short.",
        "Money representation",
    ]
    assert api(ui, "conversation", id=written.conversation)["decisions"][1]["status"] == "rejected"
    health = api(ui, "health")
    assert health["bad_lines"] == 0 and {log["writer"] for log in health["logs"]} >= {"laptop", "desktop"}


def test_bad_requests_say_what_was_wrong(ui: TestClient) -> None:
    response = ui.post("/api/node", content=b"not json", headers={**COOKIE, "origin": BASE})
    assert response.status_code == 400 and "not JSON" in response.json()["error"]
    response = send(ui, "node", {"id": "zzzz", "action": "pin"})
    assert response.status_code == 400 and "zzzz" in response.json()["error"]
    assert send(ui, "node", {"id": "zzzz", "action": "explode"}).status_code == 400
    assert json.loads(ui.get("/api/search", headers=COOKIE).text)["error"]


def test_a_note_a_record_and_a_node_added_from_the_page(ui: TestClient) -> None:
    note = send(ui, "note", {"project": "acme/shop", "session_id": "checkout-flow", "text": "added on the page"})
    assert note.status_code == 200, note.text
    entries = api(ui, "entries", project="acme/shop", session="checkout-flow")["entries"]
    assert entries[-1]["text"] == "added on the page" and entries[-1]["agent"] == "human"
    record = send(ui, "new-record", {"key": "waiting:pr-7", "value": "review from the platform team"})
    assert record.status_code == 200, record.text
    assert api(ui, "record", key="waiting:pr-7")["value"] == {"text": "review from the platform team"}
    as_json = send(ui, "new-record", {"key": "machine:nas", "value": '{"ip": "10.0.0.2"}', "label": "the NAS"})
    assert api(ui, "record", key="machine:nas")["value"] == {"ip": "10.0.0.2"} and as_json.json()["label"] == "the NAS"
    node = send(
        ui, "new-node", {"type": "decision", "content": "Refunds are asynchronous", "tags": "project:shop, x:y"}
    )
    assert node.status_code == 200, node.text
    shown = api(ui, "node", id=node.json()["id"])
    assert shown["type"] == "decision" and shown["tags"] == ["project:shop", "x:y"] and shown["agent"] == "human"


def test_a_note_added_from_the_page_without_a_session_starts_one_and_leaves_the_active_session(
    ui: TestClient,
) -> None:
    opened = App.open()
    active = opened.settings.active_session_file
    opened.close()
    assert active is not None
    before = active.read_bytes() if active.exists() else None
    note = send(ui, "note", {"project": "acme/shop", "session_id": "", "text": "added without a session"})
    assert note.status_code == 200, note.text
    session = note.json()["session_id"]
    assert session and session != "checkout-flow"
    entries = api(ui, "entries", project="acme/shop", session=session)["entries"]
    assert [entry["text"] for entry in entries] == ["added without a session"]
    assert (active.read_bytes() if active.exists() else None) == before


@pytest.mark.parametrize(
    ("name", "body", "says"),
    [
        ("note", {"project": "acme/shop", "text": "  "}, "note's text"),
        ("new-record", {"key": "no prefix", "value": "x"}, "prefix:name"),
        ("new-record", {"key": "waiting:x", "value": "{not json"}, "not a JSON object"),
        ("new-record", {"key": "waiting:x", "value": ""}, "give the record a value"),
        ("new-node", {"type": "nonsense", "content": "x"}, "type"),
        ("new-node", {"type": "fact"}, "content"),
    ],
)
def test_bad_additions_say_what_was_wrong_and_store_nothing(ui: TestClient, name: str, body: dict, says: str) -> None:
    before = api(ui, "health")["events"]
    response = send(ui, name, body)
    assert response.status_code == 400 and says in response.json()["error"], response.text
    assert api(ui, "health")["events"] == before


def test_records_of_any_age_are_reachable(ui: TestClient) -> None:
    from datetime import UTC, datetime

    from contextflow.core.clock import HybridClock
    from contextflow.records import core as records

    moment = datetime(2020, 1, 1, tzinfo=UTC)
    old = App.open(
        {**os.environ, "CONTEXTFLOW_WRITER": "old-laptop"}, clock=HybridClock(lambda: int(moment.timestamp() * 1000))
    )
    try:
        records.set_record(old, key="fact:old-one", value={"v": 1}, now=moment)
    finally:
        old.close()
    assert "fact:old-one" in [r["key"] for r in api(ui, "records")["records"]]  # any age by default
    assert "fact:old-one" not in [r["key"] for r in api(ui, "records", days="7")["records"]]


def test_a_search_far_behind_the_logs_says_how_far_the_index_is(
    ui: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextflow.adapters.ui import indexing
    from contextflow.core import progress

    monkeypatch.setattr(indexing, "BACKGROUND_BYTES", 0)  # this small store counts as far behind
    first = api(ui, "search", q="refunds payments")
    assert set(first["indexing"]) >= {"done_bytes", "total_bytes", "events", "seconds_left", "seconds"}
    for _ in range(600):  # the build runs in the background; the page asks again until it is done
        found = api(ui, "search", q="refunds payments")
        if "results" in found:
            break
        progress_state = api(ui, "index")["indexing"]
        assert progress_state is None or progress_state["done_bytes"] <= max(progress_state["total_bytes"], 1)
        wait = threading.Event()
        wait.wait(0.05)
    assert found["results"][0]["excerpt"] == "Refunds go through the payments service"
    assert progress.running() is None


def test_health_shows_the_search_index_and_capture(ui: TestClient, written: Written) -> None:
    api(ui, "search", q="refunds")
    health = api(ui, "health")
    assert health["derived"]["current"] is True and health["derived"]["documents"] > 0
    assert [(row["transcripts"], row["turns"], row["bad"]) for row in health["capture"]] == [(1, 1, 0)]
    assert health["indexing"] is None  # nothing being built


def test_the_feed_shows_every_agent_and_machine_newest_first_and_filters(ui: TestClient, written: Written) -> None:
    feed = api(ui, "feed")
    items = feed["items"]
    assert [item["at"] for item in items] == sorted((item["at"] for item in items), reverse=True)
    assert {"laptop", "desktop"} <= {item["machine"] for item in items}
    assert {"laptop", "desktop"} <= set(feed["facets"]["machines"]) and "acme/shop" in feed["facets"]["projects"]
    handoff = next(item for item in items if item["id"] == written.handoffs["second"])
    assert handoff["kind"] == "handoff" and handoff["agent"] == "codex" and handoff["session_id"] == "checkout-flow"
    from_desktop = api(ui, "feed", machine="desktop")["items"]
    assert from_desktop and all(item["machine"] == "desktop" for item in from_desktop)
    notes = api(ui, "feed", project="acme/shop", kind="note", agent="claude")["items"]
    assert notes and all((i["project"], i["kind"], i["agent"]) == ("acme/shop", "note", "claude") for i in notes)
    older = api(ui, "feed", before=items[0]["id"], limit="2")["items"]
    assert [item["id"] for item in older] == [item["id"] for item in items[1:3]]
    assert api(ui, "feed", before="2000-01-01T00:00:00Z")["items"] == []
    bad = ui.get("/api/feed", params={"before": "not a cursor"}, headers=COOKIE)
    assert bad.status_code == 400 and "before must be the id of a feed item" in bad.json()["error"]


def test_the_state_says_whether_this_machines_views_hold_every_log(ui: TestClient) -> None:
    api(ui, "feed")  # a read brings them up to date
    tables = api(ui, "state")["tables"]
    assert tables["current"] is True and tables["done_bytes"] == tables["total_bytes"] > 0
    other = open_app("other-machine")
    try:
        sessions.append_note(other, agent="gemini", text="new bytes", project="acme/shop")
    finally:
        other.close()
    behind = api(ui, "state")["tables"]
    assert behind["current"] is False and behind["done_bytes"] < behind["total_bytes"]
