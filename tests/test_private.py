"""`<private>...</private>` text is never stored (README), whatever writes it: a CLI note, an MCP tool's
argument, a context record, a graph node, an import's batch."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextflow.adapters.cli import main
from contextflow.app import App
from contextflow.core.private import strip, without_private
from tests.conftest import connect

pytestmark = pytest.mark.anyio
SECRET = "the launch codes"


def stored_bytes(store: Path) -> str:
    return "".join(path.read_text() for path in store.glob("events.*.jsonl"))


def test_a_cli_note_keeps_what_is_outside_the_private_span(store_dir: Path) -> None:
    assert main(["note", f"parser done <private>{SECRET}</private> tests next", "--agent", "me"]) == 0
    assert main(["context", "set", "k:1", f'{{"status": "ok <PRIVATE>{SECRET}</PRIVATE>"}}']) == 0
    assert main(["add", "--type", "fact", f"a fact <private>{SECRET}"]) == 0  # unclosed: to the end
    stored = stored_bytes(store_dir)
    assert SECRET not in stored and "parser done" in stored and "tests next" in stored and "a fact" in stored


def test_a_note_of_only_private_text_is_refused_as_empty(store_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["note", f"<private>{SECRET}</private>", "--agent", "me"]) == 2
    assert "TEXT is required" in capsys.readouterr().err
    assert SECRET not in stored_bytes(store_dir)


async def test_an_mcp_tools_text_argument_is_stored_without_its_private_span(app: App, store_dir: Path) -> None:
    async with connect(app) as client:
        who = {"agent": "codex", "session_id": "s"}
        note = await client.call_tool("append_shared_note", {**who, "content": f"done <private>{SECRET}</private>"})
        handoff = await client.call_tool(
            "write_shared_handoff", {**who, "summary": "s", "next_steps": [f"<private>{SECRET}</private>x"]}
        )
        assert not note.is_error and not handoff.is_error
    assert SECRET not in stored_bytes(store_dir) and "done" in stored_bytes(store_dir)


def test_every_store_write_drops_private_text_even_below_the_operations(app: App, store_dir: Path) -> None:
    app.store.append("note", {"text": f"direct <private>{SECRET}</private>", "tags": [f"<private>{SECRET}</private>"]})
    assert SECRET not in stored_bytes(store_dir) and "direct" in stored_bytes(store_dir)


def test_strip_leaves_data_without_private_text_as_the_same_object() -> None:
    data = {"text": "plain <b>bold</b>", "list": ["a", {"b": 1}]}
    assert strip(data) is data
    assert without_private("a<private>x</private>b<private>y") == "ab"
