"""One store for every client, in live agent loops: what Claude Code stored on this machine
(a note and a handoff by tool calls, a fact by its Stop hook) is shown to the models of a later
Gemini CLI session and a later Codex session through `resume_session` and `get_context`.

The three clients share HOME, the store, the state folder and the writer id, as on one machine
set up the way docs/clients.md says.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.live_loop import (
    FACT,
    RESUME_SCRIPT,
    Place,
    Seen,
    assert_resume_shows_the_handoff_and_the_note,
    claude_code,
    codex_cli,
    gemini_cli,
    make_place,
    store_script,
)
from tests.e2e.mock_models import MockModel

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Machine:
    place: Place
    gemini: Seen
    codex: Seen


@pytest.fixture(scope="module")
def machine(
    claude_bin: Path,
    gemini_bin: Path,
    codex_bin: Path,
    anthropic_mock: MockModel,
    gemini_mock: MockModel,
    responses_mock: MockModel,
    tmp_path_factory: pytest.TempPathFactory,
) -> Machine:
    place = make_place(tmp_path_factory.mktemp("one-machine"))
    claude_code(claude_bin, anthropic_mock, place).session("Save where we are.", store_script("claude"))
    gemini = gemini_cli(gemini_bin, gemini_mock, place).session("Where were we?", RESUME_SCRIPT)
    codex = codex_cli(codex_bin, responses_mock, place).session("Where were we?", RESUME_SCRIPT)
    return Machine(place, gemini, codex)


def test_claude_code_stored_everything_in_the_one_store(machine: Machine):
    assert [(e["kind"], e["agent"]) for e in machine.place.entries()] == [("note", "claude"), ("handoff", "claude")]
    assert FACT in [n["content"] for n in machine.place.nodes()]


def test_gemini_cli_model_is_shown_what_claude_code_stored(machine: Machine):
    assert_resume_shows_the_handoff_and_the_note(machine.gemini)
    resumed = machine.gemini.result("resume_session")
    assert "agent=claude" in resumed or "by claude" in resumed
    assert FACT in machine.gemini.result("get_context"), "the fact from Claude Code's Stop hook was not found"


def test_codex_model_is_shown_what_claude_code_stored(machine: Machine):
    assert_resume_shows_the_handoff_and_the_note(machine.codex)
    resumed = machine.codex.result("resume_session")
    assert '"agent":"claude"' in resumed or "by claude" in resumed
