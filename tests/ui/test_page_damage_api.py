"""The page's JSON API over damaged or deleted derived state: with one derived file zeroed, deleted, halved or
overwritten in turn, every endpoint answers as it does over intact state (the tables and the index rebuilt
from the logs), or says plainly that it is partial, or gives a clear one-line error: never a traceback, an
HTTP 500, an empty list given as complete, or a hang. The logs are never touched."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from contextflow.adapters.ui.api import Api
from contextflow.adapters.ui.server import build_app
from contextflow.app import App
from contextflow.core import rest
from contextflow.search import derived
from tests.test_derived_damage import GARBAGE
from tests.test_own_writes_while_building import building_elsewhere
from tests.test_page_damage import views, zero_first_page
from tests.ui.test_server import BASE, COOKIE, PORT, TOKEN
from tests.ui.workload import CAPTURED_PROJECT, Written, write_store_sync


def requests(written: Written) -> dict[str, tuple[str, dict[str, str]]]:
    """The page's main reads: name -> (endpoint, query)."""
    return {
        "feed": ("feed", {}),
        "notes": ("entries", {"project": "acme/shop"}),
        "sessions": ("sessions", {}),
        "session": ("entries", {"project": "acme/shop", "session": "checkout-flow"}),
        "activity": ("activity", {"project": CAPTURED_PROJECT, "session": written.captured_session}),
        "records": ("records", {}),
        "record": ("record", {"key": "pr:acme/shop:42"}),
        "threads": ("threads", {}),
        "thread": ("thread", {"id": written.thread}),
        "graph": ("graph", {}),
        "node": ("node", {"id": written.nodes["fact"]}),
        "conversations": ("conversations", {}),
        "conversation": ("conversation", {"id": written.conversation}),
        "search": ("search", {"q": "refunds"}),
        "start": ("start", {"project": "acme/shop", "session": "checkout-flow"}),
        "overview": ("overview", {}),
    }


ZEROED = ("sessions_entries", "sessions", "records_rows", "graph_nodes", "graph_nodes_dedupe", "feed")
CHECKED = ("health", "state", "index")  # what they report is the damage itself: answered, not compared
LIMIT_S = 300  # far beyond a rebuild of this small store: the page's reads taking longer hang


def answers(written: Written, meanwhile: Callable[[], None] | None = None) -> dict[str, tuple[int, Any]]:
    """Every read's status and JSON from a page server started now (as a page opened after the damage asks),
    or asked once, then after `meanwhile` damaged its state (as an open page asks). Bounded in time: a read
    that hangs fails the test."""
    pool = ThreadPoolExecutor(1)
    try:
        return pool.submit(_answers, written, meanwhile).result(LIMIT_S)
    finally:
        pool.shutdown(wait=False)


def _answers(written: Written, meanwhile: Callable[[], None] | None) -> dict[str, tuple[int, Any]]:
    app = App.open()
    pages = Api(app)
    try:
        with TestClient(build_app(app, TOKEN, PORT, pages), base_url=BASE, raise_server_exceptions=False) as ui:
            found: dict[str, tuple[int, Any]] = {}
            if meanwhile is not None:
                for endpoint, query in requests(written).values():
                    assert ui.get(f"/api/{endpoint}", params=query, headers=COOKIE).status_code == 200
                meanwhile()
            for name, (endpoint, query) in requests(written).items():
                response = ui.get(f"/api/{endpoint}", params=query, headers=COOKIE)
                found[name] = (response.status_code, response.json() if _is_json(response.text) else response.text)
            for endpoint in CHECKED:
                response = ui.get(f"/api/{endpoint}", headers=COOKIE)
                found[endpoint] = (response.status_code, "answered" if _is_json(response.text) else response.text)
            return found
    finally:
        pages.close()
        app.close()
        for thread in threading.enumerate():  # (the search index's merges end before its folder is put back)
            if thread.name == "search-merges":
                thread.join()


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def index_folder() -> Path:
    app = App.open()
    try:
        return derived.search_for(app.store).index_folder()
    finally:
        app.close()


def checkpointed(damage: Callable[[Path], None]) -> Callable[[], None]:
    """`damage` done to views.sqlite3 with every commit written into the file first."""

    def done() -> None:
        with contextlib.closing(sqlite3.connect(views())) as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        damage(views())

    return done


def halved(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def garbage(path: Path) -> None:
    with path.open("r+b") as file:
        file.write(GARBAGE)


def zeroed(name: str) -> Callable[[], None]:
    return lambda: zero_first_page(views(), name)


DAMAGES: dict[str, Callable[[], None]] = {
    **{f"zeroed {name}": zeroed(name) for name in ZEROED},
    "index folder deleted": lambda: shutil.rmtree(index_folder()),
    "index meta.json deleted": lambda: (index_folder() / "meta.json").unlink(),
    "views halved": checkpointed(halved),
    "views garbage": checkpointed(garbage),
}


class Saved:
    """The store as written, its state copied aside: each case starts from it, at the paths it was built for."""

    def __init__(self, written: Written, aside: Path) -> None:
        self.written, self.state, self.aside = written, views().parent, aside
        self.logs = {
            path: path.read_bytes() for path in Path(os.environ["CONTEXTFLOW_STORE"]).rglob("*") if path.is_file()
        }
        self.want = answers(written)
        assert all(status == 200 for status, _ in self.want.values()), self.want
        shutil.copytree(self.state, aside)

    def restored(self) -> None:
        shutil.rmtree(self.state)
        shutil.copytree(self.aside, self.state)

    def wrong(
        self, damage: Callable[[], None], allowed: Callable[[int, Any], bool] = lambda status, data: False
    ) -> dict[str, Any]:
        """What the page answers differently from the intact state (unless `allowed`), with the state so damaged
        before the page starts, or under a page already open."""
        found: dict[str, Any] = {}
        for opened in (False, True):
            self.restored()
            if not opened:
                damage()
            got = answers(self.written, damage if opened else None)
            for name, want in self.want.items():
                if got[name] != want and not allowed(*got[name]):
                    found[f"{name} ({'open page' if opened else 'page started after'})"] = got[name]
        assert {path: path.read_bytes() for path in self.logs} == self.logs  # nothing stored is lost
        return found


@pytest.fixture
def saved(tmp_path: Path) -> Saved:
    return Saved(write_store_sync(), tmp_path / "state-aside")


@pytest.mark.parametrize("how", DAMAGES)
def test_each_page_read_over_damaged_derived_state_answers_as_over_intact_state(saved: Saved, how: str) -> None:
    assert saved.wrong(DAMAGES[how]) == {}


def test_the_first_page_of_any_table_or_index_zeroed_the_page_answers_as_over_intact_state(saved: Saved) -> None:
    """Every table and index of views.sqlite3 (found with `dbstat`: a new one is covered the day it appears)."""
    with contextlib.closing(sqlite3.connect(views())) as db:
        names = [name for (name,) in db.execute("SELECT DISTINCT name FROM dbstat ORDER BY name")]
    assert len(names) > 20
    wrong = {name: found for name in names if (found := saved.wrong(zeroed(name)))}
    assert wrong == {}


def plainly_partial_or_refused(status: int, data: Any) -> bool:
    """An answer that says it is partial (with how far the build is), or a clear one-line error."""
    if status == 200:
        said = data.get("partial") if isinstance(data, dict) else None  # how far the build is, or (search) a sentence
        return (isinstance(said, dict) and "log_bytes" in said) or (isinstance(said, str) and "PARTIAL" in said)
    return status in (400, 503) and isinstance(data, dict) and "\n" not in str(data.get("error", "\n"))


@pytest.mark.parametrize("how", [name for name in DAMAGES if "index" not in name])
def test_while_the_tables_are_rebuilt_elsewhere_each_page_read_is_whole_or_says_it_is_partial(
    saved: Saved, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rest, "REST_BYTES", 0)  # (as if the logs were larger than a call reads,
    building_elsewhere(monkeypatch)  # and built in the background)
    assert saved.wrong(DAMAGES[how], plainly_partial_or_refused) == {}
