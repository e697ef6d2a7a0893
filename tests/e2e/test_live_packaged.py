"""The capture-and-handoff scenario of test_live_capture.py, with contextflow installed the way
each client's users install things and never by `contextflow install`: Claude Code only through
`claude plugin marketplace add <checkout>` + `claude plugin install contextflow@contextflow`,
Gemini CLI only through `gemini extensions install <checkout> --consent` (both from a copy of
this repository, no network). Claude Code -> Gemini CLI and back; the same assertions."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace

import pytest

from tests.e2e.conftest import contextflow_command, run_bounded
from tests.e2e.live_loop import Seen, claude_code, gemini_cli, make_place
from tests.e2e.test_live_capture import (  # collected again here, on this module's handovers
    QUIET,
    Handover,
    handovers_of,
    repositories,
    test_a_secret_in_a_captured_command_is_nowhere_on_disk,
    test_a_session_in_another_repository_is_handed_none_of_it,
    test_nothing_but_capture_wrote_the_store,
    test_the_handoff_is_in_the_first_model_request,
    test_the_next_client_in_the_repository_is_handed_the_file_the_outcome_and_the_decision,
    test_the_session_used_the_clients_own_tools_and_they_worked,
    test_the_store_holds_an_automatic_handoff_of_the_first_client_in_the_first_repository,
)

pytestmark = pytest.mark.slow

NEXT = {"claude": "gemini", "gemini": "claude"}
PACKAGED = frozenset(NEXT)

__all__ = [
    "test_a_secret_in_a_captured_command_is_nowhere_on_disk",
    "test_a_session_in_another_repository_is_handed_none_of_it",
    "test_nothing_but_capture_wrote_the_store",
    "test_the_handoff_is_in_the_first_model_request",
    "test_the_next_client_in_the_repository_is_handed_the_file_the_outcome_and_the_decision",
    "test_the_session_used_the_clients_own_tools_and_they_worked",
    "test_the_store_holds_an_automatic_handoff_of_the_first_client_in_the_first_repository",
]


@pytest.fixture(scope="module")
def handovers(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Handover]:
    return handovers_of(request, tmp_path_factory, NEXT, PACKAGED)


@pytest.fixture(scope="module", params=sorted(NEXT))
def handover(request: pytest.FixtureRequest, handovers: Callable[[str], Handover]) -> Handover:
    return handovers(request.param)


def test_the_clients_were_set_up_by_their_own_commands_only(handover: Handover):
    """No config file names contextflow but what the plugin and extension commands wrote: no
    server entry or hook that `contextflow install` would have merged into the user's settings."""
    home = handover.place.home
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert settings["enabledPlugins"] == {"contextflow@contextflow": True} and "hooks" not in settings
    assert "contextflow" not in json.loads((home / ".claude.json").read_text()).get("mcpServers", {})
    assert "contextflow" not in (home / ".gemini" / "settings.json").read_text()
    assert (home / ".gemini" / "extensions" / "contextflow" / "gemini-extension.json").is_file()


# -- both ways in one client ---------------------------------------------------------------------

BOTH_HANDOFF = "Both ways: the parser rewrite is merged"


@dataclass(frozen=True)
class Both:
    client: str
    before: Seen  # contextflow install, then the plugin: install's hooks run, the package's stand aside
    doctor_before: str
    after: Seen  # contextflow install run again: the plugin or extension alone
    doctor_after: str
    hooks_log: str


WAYS = {
    "claude": ("claude-code", "plugin contextflow@contextflow", "plugin (contextflow@contextflow) is enabled"),
    "gemini": ("gemini", "extension contextflow", "extension (contextflow) is enabled"),
}


@pytest.fixture(scope="module", params=sorted(WAYS))
def both(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Both:
    """Installed by `contextflow install`, then by the client's own commands; a session; install
    again; a session. Claude Code's second session runs with no store variable in its environment
    (the plugin gets the store from the `env` setting install wrote); Gemini CLI's keeps them."""
    agent = request.param
    client, _, said = WAYS[agent]
    place = make_place(tmp_path_factory.mktemp(f"both-ways-{agent}"))
    r1, _ = repositories(place)
    if agent == "claude":
        mock = request.getfixturevalue("anthropic_mock")
        live = claude_code(request.getfixturevalue("claude_bin"), mock, place, plugin=True, project=None)
    else:
        mock = request.getfixturevalue("gemini_mock")
        live = gemini_cli(
            request.getfixturevalue("gemini_bin"), mock, place, installed=True, extension=True, project=None
        )
    env = {**place.base_env(), **place.machine_env()}
    handoff = ["handoff", BOTH_HANDOFF, "--agent", "codex", "--session", "s-both"]
    assert run_bounded([contextflow_command(), *handoff], env=env, cwd=r1).returncode == 0

    def doctor() -> str:
        return run_bounded([contextflow_command(), "doctor"], env=env, cwd=r1).stdout

    before, doctor_before = live.session("Where were we?", QUIET, cwd=r1), doctor()
    done = run_bounded([contextflow_command(), "install", client], env=env, cwd=place.work)
    assert done.returncode == 0 and said in done.stdout, done.stdout
    if agent == "claude":
        live = replace(live, env={k: v for k, v in live.env.items() if k not in place.machine_env()})
    after, doctor_after = live.session("Where were we?", QUIET, cwd=r1), doctor()
    return Both(agent, before, doctor_before, after, doctor_after, (place.state / "hooks.log").read_text())


def session_starts(seen: Seen) -> list[str]:
    """The texts of the first request holding a session start (Claude Code's reminder, Gemini CLI's
    `<hook_context>`, whose system prompt also names that tag)."""
    return [text for text in seen.first_turn().texts() if "## Latest handoff in project" in text]


def test_installed_both_ways_the_session_start_comes_once(both: Both):
    for seen in (both.before, both.after):
        starts = session_starts(seen)
        assert len(starts) == 1 and starts[0].count("## Latest handoff") == 1, [s[:300] for s in starts]
        assert BOTH_HANDOFF in starts[0]


def test_the_packages_hooks_stand_aside_while_installs_are_there(both: Both):
    assert "run instead" in both.hooks_log


def test_doctor_says_which_way_is_active(both: Both):
    client, way, _ = WAYS[both.client]
    assert f"{client}: both the {way} and contextflow install" in both.doctor_before
    assert "active: the hooks `contextflow install` wrote" in both.doctor_before
    assert "has contextflow twice" in both.doctor_before
    assert f"{client}: {way} (active)" in both.doctor_after
    assert "has contextflow twice" not in both.doctor_after
