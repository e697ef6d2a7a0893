"""The capture-and-handoff scenario of test_live_capture.py, with contextflow installed the way
each client's users install things and never by `contextflow install`: Claude Code only through
`claude plugin marketplace add <checkout>` + `claude plugin install contextflow@contextflow`,
Gemini CLI only through `gemini extensions install <checkout> --consent` (both from a copy of
this repository, no network). Claude Code -> Gemini CLI and back; the same assertions."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.e2e.test_live_capture import (  # collected again here, on this module's handovers
    Handover,
    run_handover,
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
    done: dict[str, Handover] = {}

    def handover_of(first: str) -> Handover:
        if first not in done:
            done[first] = run_handover(request, tmp_path_factory, first, NEXT[first], PACKAGED)
        return done[first]

    return handover_of


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
