"""Handoffs you can trust, in live loops of the three real clients against scripted model APIs on
127.0.0.1, each set up by `contextflow install CLIENT` (capture on, the project follows the repository).

1. The agent's word wins, the same on every machine: Claude Code's model writes calc.py, then calls
   `write_shared_handoff` with no session id. The next Gemini CLI session on this machine, and a
   Codex session on a second machine (another HOME and state folder, another writer id, the same
   synced store folder), are both shown the agent's text as the latest handoff, not an automatic one.
2. Decisions outlive the session, and claims are checked against the code: Gemini CLI's model
   states a decision while writing calc.py (session 1); Codex writes an unrelated file (session 2);
   calc.py is then edited and committed. The first request of Claude Code's session 3 holds the
   decision of session 1 and marks calc.py as changed since.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.conftest import describe, run_bounded
from tests.e2e.live_loop import (
    AGENT_SUMMARY,
    CALC,
    UNRELATED_FINAL,
    WORK_DECISION,
    Place,
    Seen,
    handoff_script,
    live_client,
    make_place,
    other_machine,
    unrelated_script,
    work_script,
)
from tests.e2e.mock_models import Recorded, Script

pytestmark = pytest.mark.slow

R1_REMOTE = "https://github.com/Owner/R1.git"  # project owner/r1
QUIET = Script((), "Noted.")
AUTO = "[automatic handoff]"


def session_start_shown(request: Recorded) -> str:
    """The texts of the first request that hold the session start (as each client wraps it)."""
    return "\n".join(text for text in request.texts() if "## Latest handoff" in text)


def repository(place: Place, name: str = "r1") -> Path:
    """A git repository with one commit, whose origin is R1 (the same project on every machine)."""
    folder = place.repository(name, R1_REMOTE)
    (folder / "README.md").write_text("r1\n")
    commit(place, folder, "start")
    return folder


def commit(place: Place, folder: Path, message: str) -> None:
    env = {
        **place.base_env(),
        "GIT_AUTHOR_NAME": "e2e",
        "GIT_AUTHOR_EMAIL": "e2e@example.invalid",
        "GIT_COMMITTER_NAME": "e2e",
        "GIT_COMMITTER_EMAIL": "e2e@example.invalid",
    }
    for args in (["add", "-A"], ["commit", "-qm", message]):
        done = run_bounded(["git", *args], env=env, cwd=folder, timeout=60)
        assert done.returncode == 0, describe(done)


# -- 1. the agent's handoff, on two machines ------------------------------------------------


@dataclass(frozen=True)
class AgentWord:
    wrote: Seen
    same_machine: Seen
    second_machine: Seen


@pytest.fixture(scope="module")
def agent_word(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> AgentWord:
    place = make_place(tmp_path_factory.mktemp("agent-word"))
    r1 = repository(place)
    claude = live_client(request, "claude", place, capture=True)
    gemini = live_client(request, "gemini", place, capture=True)
    wrote = claude.session("Write calc.py, then hand off.", handoff_script("claude", r1), cwd=r1)
    same = gemini.session("Where were we?", QUIET, cwd=r1)
    desktop = other_machine(tmp_path_factory.mktemp("desktop"), place)
    r1_there = repository(desktop)  # the same repository, cloned on the other machine
    codex = live_client(request, "codex", desktop, capture=True)
    there = codex.session("Where were we?", QUIET, cwd=r1_there)
    return AgentWord(wrote, same, there)


def test_the_model_called_write_shared_handoff_with_no_session_id(agent_word: AgentWord):
    """The call named no session (see handoff_script): the server started one and said so."""
    shown = agent_word.wrote.result("write_shared_handoff")
    assert '"new_session":true' in shown and '"project":"owner/r1"' in shown, shown


@pytest.mark.parametrize("seen", ["same_machine", "second_machine"])
def test_the_next_session_is_shown_the_agents_handoff_not_an_automatic_one(agent_word: AgentWord, seen: str):
    first = getattr(agent_word, seen).first_turn()
    shown = session_start_shown(first)
    assert shown, f"no session start in the first request:\n{first.text[:3000]}"
    block = shown.split("## Latest handoff", 1)[1].split("\n## ", 1)[0]
    assert AGENT_SUMMARY in block and "(written by the agent)" in block, block
    assert AUTO not in block, block


def test_both_machines_show_the_same_latest_handoff(agent_word: AgentWord):
    """The same handoff event (its id in the provenance header) on both machines."""
    ids = []
    for seen in (agent_word.same_machine, agent_word.second_machine):
        block = session_start_shown(seen.first_turn()).split("## Latest handoff", 1)[1].split("## ", 1)[0]
        ids.append(re.findall(r"\bid=\"?([0-9a-z]+)", block))
    assert ids[0] and ids[0] == ids[1], ids


# -- 2. a decision of session 1 in session 3; a file changed since ---------------------------


@dataclass(frozen=True)
class Later:
    r1: Path
    first: Seen
    unrelated: Seen
    third: Seen


@pytest.fixture(scope="module")
def later(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Later:
    place = make_place(tmp_path_factory.mktemp("later"))
    r1 = repository(place)
    gemini = live_client(request, "gemini", place, capture=True)
    codex = live_client(request, "codex", place, capture=True)
    claude = live_client(request, "claude", place, capture=True)
    first = gemini.session("Write calc.py and check it.", work_script("gemini", r1), cwd=r1)
    unrelated = codex.session("Write the release notes.", unrelated_script("codex", r1), cwd=r1)
    assert (r1 / "calc.py").read_text() == CALC
    with open(r1 / "calc.py", "a", encoding="utf-8") as handle:  # edited after the handoff, and committed
        handle.write("\n\ndef sub(a, b):\n    return int(a) - int(b)\n")
    commit(place, r1, "sub")
    third = claude.session("Where were we?", QUIET, cwd=r1)
    return Later(r1, first, unrelated, third)


def test_the_unrelated_session_is_the_latest_handoff(later: Later):
    shown = session_start_shown(later.third.first_turn())
    block = shown.split("## Latest handoff", 1)[1].split("## Decisions", 1)[0]
    assert UNRELATED_FINAL in block, shown[:3000]


def test_a_decision_of_session_1_is_in_the_first_request_of_session_3(later: Later):
    shown = session_start_shown(later.third.first_turn())
    assert "## Decisions and open questions that stand (newest first)" in shown, shown[:3000]
    decisions = shown.split("## Decisions and open questions that stand (newest first)", 1)[1].split("## ", 1)[0]
    assert WORK_DECISION in decisions, decisions


def test_a_file_edited_after_the_handoff_is_marked_changed_at_the_next_session_start(later: Later):
    shown = session_start_shown(later.third.first_turn())
    assert "calc.py changed since (1 commit later)" in shown, shown[:4000]


def test_the_repositorys_git_history_is_what_the_test_made(later: Later):
    log = subprocess.run(["git", "log", "--format=%s"], cwd=later.r1, capture_output=True, text=True, timeout=30)
    assert log.stdout.split() == ["sub", "start"]
