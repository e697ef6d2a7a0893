"""OpenCode as a fourth client, in the capture-and-handoff scenario of test_live_capture.py: OpenCode
(pinned from npm, its Anthropic provider pointed at the scripted Messages API on 127.0.0.1) set
up by `contextflow install opencode`, then Gemini CLI in the same repository, and the reverse.
An OpenCode session that calls no contextflow tool hands its automatic handoff to Gemini CLI's
first model request; a Gemini CLI session's handoff reaches OpenCode's first model request."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.e2e.test_live_capture import (  # collected again here, on this module's handovers
    AUTO,
    Handover,
    handovers_of,
    test_a_secret_in_a_captured_command_is_nowhere_on_disk,
    test_a_session_in_another_repository_is_handed_none_of_it,
    test_nothing_but_capture_wrote_the_store,
    test_the_handoff_is_in_the_first_model_request,
    test_the_next_client_in_the_repository_is_handed_the_file_the_outcome_and_the_decision,
    test_the_session_used_the_clients_own_tools_and_they_worked,
    test_the_store_holds_an_automatic_handoff_of_the_first_client_in_the_first_repository,
)

pytestmark = pytest.mark.slow

NEXT = {"opencode": "gemini", "gemini": "opencode"}

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
    return handovers_of(request, tmp_path_factory, NEXT)


@pytest.fixture(scope="module", params=sorted(NEXT))
def handover(request: pytest.FixtureRequest, handovers: Callable[[str], Handover]) -> Handover:
    return handovers(request.param)


def test_opencode_gets_the_session_start_once_in_its_first_request(handovers: Callable[[str], Handover]):
    """The session start is a part of the session's first prompt: in the first request of the
    agent loop, once, and in none of the side requests (the title) before it."""
    seen = handovers("gemini").same_repository
    first = seen.first_turn()
    assert sum(AUTO in text for text in first.texts()) == 1, [t[:200] for t in first.texts() if AUTO in t]
    before = seen.requests[: seen.requests.index(first)]
    assert all(AUTO not in json.dumps(r.body) for r in before)
