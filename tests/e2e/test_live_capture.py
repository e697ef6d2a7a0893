"""Issue 18's "Done means", in live loops of the three real clients (Claude Code, Gemini CLI, Codex),
each against its scripted model API on 127.0.0.1 and set up by `contextflow install CLIENT`.

1. A session of client A in repository R1 in which the model only uses the client's own tools
   (it writes calc.py, runs a command that exits 3, one that succeeds, and ends by stating a
   decision) and never calls a contextflow tool nor writes a `<ctx:...>` directive. A session of
   another client B in R1 is then handed, in its first model request, an automatic handoff naming
   calc.py, the command's outcome and the decision; a session of B in R2 gets none of it.
   One body for the three pairs: claude -> gemini, gemini -> codex, codex -> claude.
2. On a long-used store (2,000 session events and 300 graph nodes) Claude Code's session start
   reaches the model whole (no persisted-output preview) and holds the latest handoff.
3. A bearer token in a command the model ran is nowhere on disk afterwards: store folder, state
   folder (hooks.log among it).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from contextflow.adapters.session_start import SESSION_NOTICE
from contextflow.core.log import read_whole
from tests.e2e.conftest import contextflow_command, describe
from tests.e2e.live_loop import (
    CALC,
    SECRET_TOKEN,
    WORK_DECISION,
    Place,
    Seen,
    live_client,
    make_place,
    work_script,
)
from tests.e2e.mock_models import Recorded, Script

pytestmark = pytest.mark.slow

AGENTS = ("claude", "gemini", "codex")
NEXT = {"claude": "gemini", "gemini": "codex", "codex": "claude"}  # A -> B: always another client
R1_REMOTE = "https://github.com/Owner/R1.git"  # project owner/r1
R2_REMOTE = "git@github.com:owner/r2.git"  # project owner/r2
AUTO = "[automatic handoff]"  # how the automatic handoff's summary begins
CLIENT_NAMES = {"claude": "claude-code", "gemini": "gemini-cli", "codex": "codex", "opencode": "opencode"}
QUIET = Script((), "Noted.")  # a session whose model only answers


@dataclass(frozen=True)
class Handover:
    """A's session in R1, then B's in R1 and in R2, on one machine (one HOME, one store)."""

    first: str
    second: str
    place: Place
    r1: Path
    worked: Seen
    same_repository: Seen
    other_repository: Seen


def repositories(place: Place) -> tuple[Path, Path]:
    return place.repository("r1", R1_REMOTE), place.repository("r2", R2_REMOTE)


@pytest.fixture(scope="module")
def handovers(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Handover]:
    return handovers_of(request, tmp_path_factory, NEXT)


def handovers_of(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    pairs: dict[str, str],
    packaged: frozenset[str] = frozenset(),
) -> Callable[[str], Handover]:
    """Each pair's three sessions (`run_handover`), run once for the module when a test first asks for them."""
    done: dict[str, Handover] = {}

    def handover_of(first: str) -> Handover:
        if first not in done:
            done[first] = run_handover(request, tmp_path_factory, first, pairs[first], packaged)
        return done[first]

    return handover_of


def run_handover(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    first: str,
    second: str,
    packaged: frozenset[str] = frozenset(),
) -> Handover:
    """A's work session in R1, then B's quiet sessions in R1 and R2, on one machine; the clients
    named in `packaged` are set up through their own plugin or extension commands."""
    place = make_place(tmp_path_factory.mktemp(f"{first}-to-{second}"))
    r1, r2 = repositories(place)
    a = live_client(request, first, place, capture=True, packaged=first in packaged)
    b = live_client(request, second, place, capture=True, packaged=second in packaged)
    worked = a.session("Write calc.py and check it.", work_script(first, r1), cwd=r1)
    same = b.session("Where were we?", QUIET, cwd=r1)
    other = b.session("Where were we?", QUIET, cwd=r2)
    return Handover(first, second, place, r1, worked, same, other)


@pytest.fixture(scope="module", params=AGENTS)
def handover(request: pytest.FixtureRequest, handovers: Callable[[str], Handover]) -> Handover:
    return handovers(request.param)


def automatic_handoff_shown(request: Recorded) -> str:
    """The text of `request` that holds the automatic handoff, as the client wrapped the session
    start: Claude Code's `SessionStart hook additional context` reminder, Gemini's
    `<hook_context>` (with `<` and `>` escaped), Codex's developer message."""
    return "\n".join(text for text in request.texts() if AUTO in text)


def stored_events(place: Place) -> list[dict[str, Any]]:
    """Every event in the store's logs, as the log reader gives them (batch markers are not events)."""

    logs = sorted(place.store.glob("events.*.jsonl"))
    return [json.loads(line) for log in logs for _, line in read_whole(log)[1]]


# -- 1. an automatic handoff from one client to another, in its repository only -----------------


def test_the_session_used_the_clients_own_tools_and_they_worked(handover: Handover):
    assert (handover.r1 / "calc.py").read_text() == CALC
    shown = [text for results in handover.worked.results.values() for text in results]
    assert any(re.search(r"(^|\s)5(\s|$)", text) for text in shown), shown  # calc.add("2", 3) ran


def test_nothing_but_capture_wrote_the_store(handover: Handover):
    """No session called a contextflow tool or wrote a directive: the store holds captured turns,
    automatic handoffs and the session's conversation record (it stated a decision) only."""
    kinds = {(event["kind"], event["data"].get("auto")) for event in stored_events(handover.place)}
    assert kinds == {("capture.turn", None), ("handoff", True), ("conversation.save", None)}  # the session's record


def test_the_store_holds_an_automatic_handoff_of_the_first_client_in_the_first_repository(handover: Handover):
    written = [
        event["data"]
        for event in stored_events(handover.place)
        if event["kind"] == "handoff" and event["data"]["agent"] == CLIENT_NAMES[handover.first]
    ]
    assert written and all(data["project"] == "owner/r1" for data in written), written
    assert written[-1]["summary"].startswith(AUTO) and "calc.py" in written[-1]["files"], written[-1]


def test_the_next_client_in_the_repository_is_handed_the_file_the_outcome_and_the_decision(handover: Handover):
    first = handover.same_repository.first_turn()
    shown = automatic_handoff_shown(first)
    assert shown, f"{handover.second}'s first request holds no automatic handoff:\n{first.text[:3000]}"
    assert "calc.py" in shown, shown
    assert any("sys.exit(3)" in line and "exit 3" in line for line in shown.splitlines()), shown
    assert WORK_DECISION in shown, shown


def test_the_handoff_is_in_the_first_model_request(handover: Handover):
    """No request before the agent loop's first (a side request such as a title) held it, and
    that first request did."""
    requests = handover.same_repository.requests
    first = handover.same_repository.first_turn()
    assert all(AUTO not in r.text for r in requests[: requests.index(first)])
    assert AUTO in first.text


def test_a_session_in_another_repository_is_handed_none_of_it(handover: Handover):
    first = handover.other_repository.first_turn().text
    assert "calc.py" not in first and "coerce inputs" not in first and AUTO not in first, first[:3000]


# -- 3. a secret in a captured command line --------------------------------------------------


def files_holding(folder: Path, needle: str) -> list[Path]:
    return [path for path in sorted(folder.rglob("*")) if path.is_file() and needle.encode() in path.read_bytes()]


def test_a_secret_in_a_captured_command_is_nowhere_on_disk(handover: Handover):
    place = handover.place
    assert files_holding(place.store, "Authorization: Bearer [REDACTED"), "the command line was not captured"
    for folder in (place.store, place.state):  # the state folder holds hooks.log and capture's read positions
        assert files_holding(folder, SECRET_TOKEN) == []
        assert files_holding(folder, SECRET_TOKEN[-12:]) == []


# -- 2. Claude Code's session start on a long-used store -------------------------------------

LATEST = "Parser rewrite merged; the CLI wiring is next"


def seed_long_used_store(place: Place, repository: Path) -> int:
    """2,000 notes and handoffs over 40 sessions (half in the repository's project, half shared),
    300 graph nodes (pinned, reference and working, the repository's and shared ones), then the
    latest handoff; written in this process as another contextflow on the machine would."""
    from contextflow.app import App
    from contextflow.graph import writes
    from contextflow.sessions import core as sessions

    app = App.open({**place.machine_env(), "HOME": str(place.home)}, cwd=repository)
    try:
        project = app.settings.default_project
        assert project == "owner/r1"
        app.store.append_many(
            [
                (
                    "handoff" if n % 10 == 0 else "note",
                    {
                        "agent": ("codex", "gemini-cli", "claude-code")[n % 3],
                        "project": project if n % 2 else "shared",
                        "session_id": f"s{n % 40}",
                        **(
                            {"summary": f"handoff {n} " + "h" * 200}
                            if n % 10 == 0
                            else {"text": f"note {n} " + "x" * 200}
                        ),
                    },
                )
                for n in range(1_999)
            ]
        )
        tiers = ("tier:pinned", "tier:reference", "tier:working")
        app.store.append_many(
            [
                writes.node_item(
                    type=("fact", "decision", "pattern")[n % 3],
                    content=f"node {n} " + "k" * 240,
                    tags=[tiers[n % 3], *([f"project:{project}"] if n % 2 else [])],
                    agent="claude-code",
                )
                for n in range(300)
            ]
        )
        sessions.write_handoff(app, agent="claude-code", summary=LATEST, next_steps=["wire it"], session_id="s-late")
        return app.store.event_count
    finally:
        app.close()


def session_start_output(place: Place, repository: Path) -> str:
    """What `contextflow hook session-start` gives a session starting in `repository`, run the way
    the installed hook command runs it."""
    payload = {"session_id": "probe", "cwd": str(repository), "hook_event_name": "SessionStart", "source": "startup"}
    env = {**place.base_env(), **place.machine_env(), "CONTEXTFLOW_CLIENT": "claude-code"}
    done = subprocess.run(
        [contextflow_command(), "hook", "session-start"],
        input=json.dumps(payload),
        env=env,
        cwd=repository,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and done.stdout, describe(done)
    return str(json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"])


@dataclass(frozen=True)
class LongUsed:
    events: int
    injected: str  # what the hook gives a session in R1 on this store
    seen: Seen


@pytest.fixture(scope="module")
def long_used(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> LongUsed:
    place = make_place(tmp_path_factory.mktemp("long-used"))
    r1, _ = repositories(place)
    claude = live_client(request, "claude", place, capture=True)
    events = seed_long_used_store(place, r1)
    injected = session_start_output(place, r1)
    return LongUsed(events, injected, claude.session("Where were we?", QUIET, cwd=r1))


def untimed(text: str) -> str:
    """The session start without the instant it was rendered at (the test's run and the client's differ)."""
    return re.sub(r"rendered at [0-9T:.Z-]+", "rendered at T", text)


def difference(expected: str, shown: str) -> str:
    """Where the session start the model got first differs from the hook's output."""
    start = shown.find(expected[:40])
    got = shown[start:] if start >= 0 else shown
    at = next((n for n, (a, b) in enumerate(zip(expected, got, strict=False)) if a != b), min(len(expected), len(got)))
    near = slice(max(0, at - 80), at + 120)
    return f"differs at {at} of {len(expected)}: expected {expected[near]!r}, got {got[near]!r}"


def test_the_long_used_store_has_2000_events_and_300_graph_nodes(long_used: LongUsed):
    assert long_used.events >= 2_300


def test_claude_code_session_start_on_a_long_used_store_reaches_the_model_whole(long_used: LongUsed):
    """Claude Code swaps a hook's output over 10,000 characters for a 2,000-character preview and
    a file path; the default session start stays under it, so the model gets all of it."""
    first = long_used.seen.first_turn()
    reminders = [text for text in first.texts() if "SessionStart hook additional context" in text]
    assert len(reminders) == 1, [text[:200] for text in first.texts()]
    assert "persisted-output" not in reminders[0] and "Output too large" not in reminders[0]
    assert 2_000 < len(long_used.injected) <= 10_000, len(long_used.injected)  # more than a preview would keep
    expected, shown = untimed(long_used.injected), untimed(reminders[0])
    assert expected in shown, difference(expected, shown)
    assert expected.rstrip()[-200:] in shown  # its end too


def test_claude_code_session_start_on_a_long_used_store_holds_the_latest_handoff(long_used: LongUsed):
    notice, first = long_used.injected.split("\n\n", 1)  # the one line saying it is remembered data, then the handoff
    assert notice == SESSION_NOTICE and first.startswith("## Latest handoff in project owner/r1"), first[:300]
    assert f"> {LATEST}" in long_used.injected
    assert "## Recent sessions" in long_used.injected and "node " in long_used.injected
