"""The Health page reads the logs' health with a handle of its own that folds no view: the page's
store stays unfolded (its pages read the derived tables), and a second look reads only what the
logs gained."""

from __future__ import annotations

from starlette.testclient import TestClient

from contextflow.adapters.ui.api import Api
from contextflow.adapters.ui.server import build_app, cookie_name
from contextflow.app import App
from contextflow.sessions import core as sessions
from tests.conftest import open_app
from tests.ui.workload import write_store_sync

PORT, TOKEN = 8766, "t0ken-for-tests-0123456789abcdef"


def test_the_health_page_folds_none_of_the_pages_views_and_sees_new_events() -> None:
    write_store_sync()
    app = App.open()
    pages = Api(app)
    try:
        with TestClient(build_app(app, TOKEN, PORT, pages), base_url=f"http://127.0.0.1:{PORT}") as client:
            cookie = {"cookie": f"{cookie_name(PORT)}={TOKEN}"}
            first = client.get("/api/health", headers=cookie).json()
            assert first["bad_lines"] == 0 and {log["writer"] for log in first["logs"]} >= {"laptop", "desktop"}
            assert getattr(pages, "_checker", None) is not None
            other = open_app(writer="laptop")
            try:
                sessions.append_note(other, project="acme/shop", agent="codex", text="one more", session_id="s-more")
            finally:
                other.close()
            assert client.get("/api/health", headers=cookie).json()["events"] == first["events"] + 1
    finally:
        pages.close()
        app.close()
