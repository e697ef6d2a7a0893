"""The graph page's data: a node found by its words (as typed, operator words and quotes included),
a node's edges with their other ends' labels."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from contextflow.adapters.ui.api import Api
from contextflow.adapters.ui.server import build_app, cookie_name
from contextflow.app import App
from tests.ui.workload import Written, write_store_sync

PORT, TOKEN = 8766, "t0ken-for-tests-0123456789abcdef"
COOKIE = {"cookie": f"{cookie_name(PORT)}={TOKEN}"}


@pytest.fixture
def written() -> Written:
    return write_store_sync()


@pytest.fixture
def ui(written: Written) -> Iterator[TestClient]:
    app = App.open()
    pages = Api(app)
    try:
        with TestClient(build_app(app, TOKEN, PORT, pages), base_url=f"http://127.0.0.1:{PORT}") as client:
            yield client
    finally:
        pages.close()
        app.close()


def get(ui: TestClient, name: str, **params: str) -> dict:
    response = ui.get(f"/api/{name}", params=params, headers=COOKIE)
    assert response.status_code == 200, response.text
    return response.json()


def test_a_node_is_found_by_words_of_its_text_whatever_they_are(ui: TestClient, written: Written) -> None:
    assert [n["id"] for n in get(ui, "graph", find="integer CENTS")["nodes"]] == [written.nodes["decision"]]
    assert [n["id"] for n in get(ui, "graph", find="go through the")["nodes"]] == [written.nodes["fact"]]  # "the"
    assert get(ui, "graph", find='AND "(" NOT')["count"] == 0  # operator words and quotes are only words
    empty = ui.get("/api/graph", params={"find": ' " '}, headers=COOKIE)
    assert empty.status_code == 400 and "type some words" in empty.json()["error"]


def test_a_nodes_edges_carry_the_labels_of_their_other_ends(ui: TestClient, written: Written) -> None:
    decision = get(ui, "node", id=written.nodes["decision"])
    assert [e["from"] for e in decision["edges_in"]] == [written.nodes["fact"]]
    assert decision["labels"][written.nodes["fact"]] == {
        "type": "fact",
        "label": "Refunds go through the payments service",
    }
