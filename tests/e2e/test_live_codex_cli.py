"""Codex CLI (from npm) in a live agent loop against a scripted Responses API on 127.0.0.1.

Codex uses the mock as a custom `model_provider` (`wire_api = "responses"`) and starts
`contextflow serve` from its config.toml. It defers MCP tools: the model finds each one with
a client-side `tool_search` call before calling it, as the scripted model does. Session 1
stores a note and a handoff; session 2 calls `resume_session` and `get_context`. Codex has no
contextflow hooks, so the `<ctx:remember>` in session 1's answer is not expected in the store.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.live_loop import (
    HANDOFF,
    NOTE,
    Loop,
    assert_note_and_handoff_stored,
    assert_reads_reach_the_model_as_quoted_text,
    assert_resume_shows_the_handoff_and_the_note,
    codex_cli,
    make_place,
    run_loop,
    store_script,
)
from tests.e2e.mock_models import MockModel

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def loop(codex_bin: Path, responses_mock: MockModel, tmp_path_factory: pytest.TempPathFactory) -> Loop:
    place = make_place(tmp_path_factory.mktemp("codex-live"))
    return run_loop(codex_cli(codex_bin, responses_mock, place), place, "codex")


def test_codex_tool_calls_store_the_note_and_the_handoff(loop: Loop):
    assert_note_and_handoff_stored(loop, "codex")


def test_codex_accepts_every_setting_of_the_live_loop_config(loop: Loop):
    assert "unrecognized configuration" not in loop.stored.output, loop.stored.output


def test_codex_tool_search_finds_the_contextflow_tools(loop: Loop):
    searches = [
        item
        for request in loop.stored.requests
        for item in request.body.get("input", [])
        if item.get("type") == "tool_search_output"
    ]
    found = {tool["name"] for item in searches for group in item["tools"] for tool in group.get("tools", [])}
    assert {"append_shared_note", "write_shared_handoff"} <= found


def test_codex_model_is_shown_the_handoff_and_the_note_by_resume_session(loop: Loop):
    assert_resume_shows_the_handoff_and_the_note(loop.resumed)


def test_codex_model_is_shown_the_stored_text_that_get_context_found(loop: Loop):
    shown = loop.resumed.result("get_context")
    assert HANDOFF in shown and NOTE in shown


def test_codex_set_up_by_contextflow_install_uses_the_exported_store(
    codex_bin: Path, responses_mock: MockModel, tmp_path: Path
):
    place = make_place(tmp_path / "machine")
    codex = codex_cli(codex_bin, responses_mock, place, installed=True)
    codex.session("Save where we are on the parser.", store_script("codex"))
    assert [e["kind"] for e in place.entries()] == ["note", "handoff"]


def test_codex_model_is_shown_the_quoted_text_rendering_with_its_notice_not_json(loop: Loop):
    assert_reads_reach_the_model_as_quoted_text(loop.resumed)
