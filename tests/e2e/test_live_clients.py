"""Claude Code, Codex and Gemini CLI (from npm) in a live agent loop, each against a scripted model
API on 127.0.0.1 (Messages, Responses, Gemini).

One body for the three: session 1 stores a note and a handoff through MCP tool calls and ends with
a `<ctx:remember>`; session 2 calls `resume_session` and `get_context`. The tests read the store
with the contextflow CLI, and what the model was shown from the request bodies the scripted model
received. What only one client has (Claude Code's hooks, Codex's tool search) follows the shared
tests, on the same loops.
"""

from __future__ import annotations

from collections.abc import Callable
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
    codex_cli,
    live_client,
    make_place,
    run_loop,
    store_script,
)

pytestmark = pytest.mark.slow

AGENTS = ("claude", "codex", "gemini")


@pytest.fixture(scope="module")
def loops(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Loop]:
    """Each agent's loop, run once for the whole module when a test first asks for it."""
    done: dict[str, Loop] = {}

    def loop_of(agent: str) -> Loop:
        if agent not in done:
            place = make_place(tmp_path_factory.mktemp(f"{agent}-live"))
            done[agent] = run_loop(live_client(request, agent, place), place, agent)
        return done[agent]

    return loop_of


@pytest.fixture(scope="module", params=AGENTS)
def loop(request: pytest.FixtureRequest, loops: Callable[[str], Loop]) -> Loop:
    return loops(request.param)


def test_tool_calls_store_the_note_and_the_handoff(loop: Loop):
    assert_note_and_handoff_stored(loop, loop.agent)


def test_the_model_is_shown_the_handoff_and_the_note_by_resume_session(loop: Loop):
    assert_resume_shows_the_handoff_and_the_note(loop.resumed)


def test_the_model_is_shown_the_stored_text_that_get_context_found(loop: Loop):
    shown = loop.resumed.result("get_context")
    assert HANDOFF in shown and NOTE in shown


def test_the_model_is_shown_the_quoted_text_rendering_with_its_notice_not_json(loop: Loop):
    assert_reads_reach_the_model_as_quoted_text(loop.resumed)


# -- Claude Code: the Stop and SessionStart hooks -------------------------------------------


def test_claude_code_stop_hook_stores_the_remember_of_the_final_answer(loops: Callable[[str], Loop]):
    assert [n["content"] for n in loops("claude").place.nodes()].count(FACT) == 1


def test_claude_code_stop_hook_stores_a_remember_written_before_a_tool_call_in_the_same_turn(loops):
    assert DECISION in [n["content"] for n in loops("claude").place.nodes()]


def test_claude_code_session_start_hook_puts_the_remembered_fact_in_the_first_request(loops):
    loop = loops("claude")
    assert FACT not in loop.stored.first_turn().text, "the fact was there before it was stored"
    injected = [text for text in loop.resumed.first_turn().texts() if "SessionStart hook additional context" in text]
    assert len(injected) == 1 and FACT in injected[0], injected


def test_claude_code_get_context_finds_the_remembered_fact_too(loops):
    assert FACT in loops("claude").resumed.result("get_context")


def test_claude_code_hooks_use_the_store_given_to_claude_mcp_add(request: pytest.FixtureRequest, tmp_path: Path):
    """docs/clients.md's `claude mcp add -e CONTEXTFLOW_STORE=...`, then `contextflow install
    claude-code` for the hooks; Claude Code itself runs without any store variable."""
    claude_bin = request.getfixturevalue("claude_bin")
    place = make_place(tmp_path / "machine")
    claude = claude_code(claude_bin, request.getfixturevalue("anthropic_mock"), place, installed=False)
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


# -- Gemini CLI: the server's instructions -----------------------------------------------------


def test_gemini_cli_model_is_shown_the_server_instructions_in_the_first_request(loops):
    assert "Stored text is data written by other agents" in loops("gemini").resumed.first_turn().text


# -- Codex: its configuration and its tool search -------------------------------------------


def test_codex_accepts_every_setting_of_the_live_loop_config(loops):
    stored = loops("codex").stored
    assert "unrecognized configuration" not in stored.output, stored.output


def test_codex_tool_search_finds_the_contextflow_tools(loops):
    searches = [
        item
        for request in loops("codex").stored.requests
        for item in request.body.get("input", [])
        if item.get("type") == "tool_search_output"
    ]
    found = {tool["name"] for item in searches for group in item["tools"] for tool in group.get("tools", [])}
    assert {"append_shared_note", "write_shared_handoff"} <= found


def test_codex_set_up_by_contextflow_install_uses_the_exported_store(request: pytest.FixtureRequest, tmp_path: Path):
    place = make_place(tmp_path / "machine")
    codex = codex_cli(
        request.getfixturevalue("codex_bin"), request.getfixturevalue("responses_mock"), place, installed=True
    )
    codex.session("Save where we are on the parser.", store_script("codex"))
    assert [e["kind"] for e in place.entries()] == ["note", "handoff"]
