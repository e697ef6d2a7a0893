"""Claude Code (from npm) in a live agent loop against a scripted Messages API on 127.0.0.1.

Set up by `contextflow install claude-code` (the MCP server, the three hooks and the skill).
Session 1 stores a note and a handoff through MCP tool calls, and its final answer carries a
`<ctx:remember>` for the Stop hook; session 2 calls `resume_session` and `get_context`. The
tests read the store with the contextflow CLI and read what the model was shown from the
request bodies the scripted model received.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import contextflow_command, describe, run_bounded
from tests.e2e.live_loop import (
    DECISION,
    FACT,
    HANDOFF,
    NOTE,
    Loop,
    assert_note_and_handoff_stored,
    assert_reads_reach_the_model_as_quoted_text,
    assert_resume_shows_the_handoff_and_the_note,
    claude_code,
    make_place,
    run_loop,
    store_script,
)
from tests.e2e.mock_models import MockModel

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def loop(claude_bin: Path, anthropic_mock: MockModel, tmp_path_factory: pytest.TempPathFactory) -> Loop:
    place = make_place(tmp_path_factory.mktemp("claude-live"))
    return run_loop(claude_code(claude_bin, anthropic_mock, place), place, "claude")


def test_claude_code_tool_calls_store_the_note_and_the_handoff(loop: Loop):
    assert_note_and_handoff_stored(loop, "claude")


def test_claude_code_stop_hook_stores_the_remember_of_the_final_answer(loop: Loop):
    assert [n["content"] for n in loop.place.nodes()].count(FACT) == 1


def test_claude_code_stop_hook_stores_a_remember_written_before_a_tool_call_in_the_same_turn(loop: Loop):
    assert DECISION in [n["content"] for n in loop.place.nodes()]


def test_claude_code_session_start_hook_puts_the_remembered_fact_in_the_first_request(loop: Loop):
    assert FACT not in loop.stored.first_turn().text, "the fact was there before it was stored"
    injected = [text for text in loop.resumed.first_turn().texts() if "SessionStart hook additional context" in text]
    assert len(injected) == 1 and FACT in injected[0], injected


def test_claude_code_model_is_shown_the_handoff_and_the_note_by_resume_session(loop: Loop):
    assert_resume_shows_the_handoff_and_the_note(loop.resumed)


def test_claude_code_model_is_shown_the_stored_text_that_get_context_found(loop: Loop):
    shown = loop.resumed.result("get_context")
    assert HANDOFF in shown and NOTE in shown and FACT in shown


def test_claude_code_model_is_shown_the_quoted_text_rendering_with_its_notice_not_json(loop: Loop):
    assert_reads_reach_the_model_as_quoted_text(loop.resumed)


def test_claude_code_hooks_use_the_store_given_to_claude_mcp_add(
    claude_bin: Path, anthropic_mock: MockModel, tmp_path: Path
):
    """docs/clients.md's `claude mcp add -e CONTEXTFLOW_STORE=...`, then `contextflow install
    claude-code` for the hooks; Claude Code itself runs without any store variable."""
    place = make_place(tmp_path / "machine")
    claude = claude_code(claude_bin, anthropic_mock, place, installed=False)
    flags = [arg for key, value in place.store_env().items() for arg in ("-e", f"{key}={value}")]
    added = run_bounded(
        [claude_bin, "mcp", "add", "--scope", "user", "contextflow", *flags, "--", "contextflow", "serve"],
        env=claude.env,
        cwd=place.work,
    )
    assert added.returncode == 0, describe(added)
    installed = run_bounded([contextflow_command(), "install", "claude-code"], env=claude.env, cwd=place.work)
    assert installed.returncode == 0, describe(installed)

    claude.session("Save where we are on the parser.", store_script("claude"))
    assert [e["kind"] for e in place.entries()] == ["note", "handoff"], "the server did not use the -e store"
    assert FACT in [n["content"] for n in place.nodes()], "the Stop hook wrote to another store"
