"""The seeds' own examples work as written (/work/shared/seeds): seed 000's context records (a `source`
machine, a numeric `thread_id`, a PR waited on), seed 001's timeline names (`parent_thought_id` for the
previous thought, `current_thought_id` for the position)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from contextflow.adapters.cli import main
from contextflow.app import App
from tests.conftest import connect, text_of

pytestmark = pytest.mark.anyio

SEED_000_PR = {
    "key": "pr:Yeraze/meshmonitor:1777",
    "value": {"status": "waiting", "title": "MeshCore support", "submitted": "2026-02-03"},
    "category": "pr",
    "label": "MeshCore PR #1777",
    "source": "chisel",
    "pinned": True,
}


async def call(client: Any, name: str, arguments: dict[str, Any]) -> Any:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, text_of(result)
    return result


async def test_seed_000s_example_record_is_stored_with_its_source(app: App) -> None:
    async with connect(app) as client:
        await call(client, "context_set", SEED_000_PR)
        got = await call(client, "context_get", {"key": SEED_000_PR["key"], "format": "json"})
    assert got.structured_content["source"] == "chisel"


async def test_a_numeric_thread_id_is_looked_up_not_refused_as_a_type(app: App) -> None:
    async with connect(app) as client:
        result = await client.call_tool("context_set", {"key": "fact:x", "value": {"a": 1}, "thread_id": 3})
    assert result.is_error and "no thread id starts with '3'" in text_of(result)


async def test_a_pr_whose_status_is_waiting_shows_under_waiting_on(
    app: App, capsys: pytest.CaptureFixture[str]
) -> None:
    async with connect(app) as client:
        await call(client, "context_set", SEED_000_PR)
        await call(client, "context_set", {"key": "pr:acme/api:2", "value": {"status": "waiting for review"}})
    capsys.readouterr()
    assert main(["whereami"]) == 0
    text = capsys.readouterr().out
    waiting = text.split("## Waiting on")[1].split("## Recent")[0]
    pinned = text.split("## Pinned context")[1].split("## Waiting on")[0]
    assert "pr:Yeraze/meshmonitor:1777" in waiting and "pr:acme/api:2" in waiting
    assert "pr:Yeraze" not in pinned


async def test_seed_001s_names_are_taken_and_given(app_with_tools: Callable[[str], App]) -> None:
    async with connect(app_with_tools("all")) as client:
        thread = (await call(client, "timeline_create_thread", {"name": "journey"})).structured_content["id"]
        first = await call(client, "timeline_add_thought", {"thread_id": thread, "content": "one"})
        first_id = first.structured_content["id"]
        second = await call(
            client, "timeline_add_thought", {"thread_id": thread, "content": "two", "parent_thought_id": first_id}
        )
        assert second.structured_content["parent_thought_id"] == first_id
        wrong = await client.call_tool(
            "timeline_add_thought", {"thread_id": thread, "content": "three", "parent_thought_id": first_id}
        )
        assert wrong.is_error and "not the thread's current position" in text_of(wrong)
        shown = await call(client, "timeline_get_thread", {"thread_id": thread, "format": "json"})
    data = shown.structured_content or json.loads(text_of(shown))
    assert data["current_thought_id"] == second.structured_content["id"]
    assert [t["parent_thought_id"] for t in data["thoughts"] if t["id"] == second.structured_content["id"]] == [
        first_id
    ]


def test_status_shows_the_store_and_its_size_as_seed_003_does(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status"]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith("(new)")
    assert main(["add", "--type", "fact", "a fact worth keeping"]) == 0
    capsys.readouterr()
    assert main(["status"]) == 0
    first, second = capsys.readouterr().out.splitlines()[:2]
    assert first.startswith("Store: ") and first.endswith(" B in 1 log)")
    assert second.startswith("Database: ") and "views.sqlite3 (" in second  # the seed's line, with its size
    assert main(["status", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["store_logs"] == 1 and data["store_bytes"] > 0
    assert data["database"].endswith("views.sqlite3") and data["database_bytes"] > 0
