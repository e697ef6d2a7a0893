"""What the next session is told across what happens between sessions, in live loops of the real
clients against scripted model APIs on 127.0.0.1, each set up by `contextflow install CLIENT` (capture
on, the project follows the folder):

1. A standing decision: Claude Code's session 1 states a decision while writing calc.py; ten sessions
   of Gemini CLI, Codex and Claude Code in turn only ask a question, which the model answers after
   reading calc.py with the client's own tool (Codex: `cat`); the first request of the next session
   holds the decision.
2. Projects of one name: two repositories without a remote, both named `app`, and two plain folders
   (no git), both named `notes`. A session works and decides in one; the first request of a session in
   the other holds nothing of it.
3. A client killed (SIGKILL to its process group) during a tool call: its model wrote calc.py stating a
   decision, then ran a command that blocks; no Stop or SessionEnd hook ran. The first request of the
   next session of that client holds the decision.
4. A branch switch: Claude Code works on `feature-x` and the work is committed there, then `git
   checkout main`; the first request of the next session names `feature-x`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import describe, run_bounded
from tests.e2e.live_loop import CALC, WORK_DECISION, Place, Seen, _codex_add, live_client, make_place, work_script
from tests.e2e.mock_models import Script, ToolCall

pytestmark = pytest.mark.slow

KILLED_DECISION = "I decided to keep the importer streaming because the bank files are large"
QUESTIONS = ("What does calc.py do?", "Is there a CLI yet?", "Which Python do we target?", "Where are the tests?")


def git(place: Place, folder: Path, *args: str) -> None:
    env = {**place.base_env(), "GIT_AUTHOR_NAME": "e2e", "GIT_AUTHOR_EMAIL": "e2e@example.invalid"}
    env |= {"GIT_COMMITTER_NAME": "e2e", "GIT_COMMITTER_EMAIL": "e2e@example.invalid"}
    done = run_bounded(["git", *args], env=env, cwd=folder, timeout=60)
    assert done.returncode == 0, describe(done)


def folder(place: Place, path: str, *, remote: str | None = None, git_init: bool = True) -> Path:
    """A folder under the place: a repository with one commit (its README holding `path`, so two
    repositories of one name have different first commits), with `remote` or none; or a plain folder."""
    made = place.root / path
    made.mkdir(parents=True)
    (made / "README.md").write_text(f"{path}\n")
    if git_init:
        git(place, made, "init", "-q", "-b", "main")
        if remote:
            git(place, made, "remote", "add", "origin", remote)
        git(place, made, "add", "-A")
        git(place, made, "commit", "-qm", "start")
    return made


def first_request(seen: Seen) -> str:
    return "\n".join(seen.first_turn().texts())


def session_start(shown: str) -> str:
    """For a failure message: the session start's part of a first request (from its first heading)."""
    marks = [shown.find(mark) for mark in ("## Latest handoff", "## Decisions", "## Recent sessions", "<!-- ctx")]
    found = [mark for mark in marks if mark >= 0]
    return shown[min(found) :][:4000] if found else "(no session start in the first request)"


def on_disk(home: Path, text: str) -> list[Path]:
    """The files under the client's home (its own transcripts) that hold `text`."""
    return [
        p
        for p in home.rglob("*")
        if p.is_file() and p.suffix in (".jsonl", ".json") and text in p.read_text(errors="replace")
    ]


# -- 1. a decision after ten sessions that only asked ---------------------------------------


def read(agent: str, path: Path) -> ToolCall:
    """The client's own way to read a file."""
    if agent == "claude":
        return ToolCall("Read", {"file_path": str(path)})
    if agent == "gemini":
        return ToolCall("read_file", {"file_path": str(path)})
    return ToolCall("exec_command", {"cmd": f"cat {path.name}"})


def test_a_decision_of_session_1_is_in_the_first_request_after_ten_sessions_that_only_asked(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    place = make_place(tmp_path)
    repo = folder(place, "ledger", remote="https://github.com/Owner/Ledger.git")
    clients = {agent: live_client(request, agent, place, capture=True) for agent in ("claude", "gemini", "codex")}
    clients["claude"].session("Write calc.py and check it.", work_script("claude", repo), cwd=repo)
    order = ("gemini", "codex", "claude")
    for n in range(10):
        agent = order[n % 3]
        answer = Script((read(agent, repo / "calc.py"),), "It adds two numbers; nothing else yet.")
        clients[agent].session(QUESTIONS[n % len(QUESTIONS)], answer, cwd=repo)
    shown = first_request(clients["gemini"].session("Where were we?", Script((), "Noted."), cwd=repo))
    assert WORK_DECISION in shown, session_start(shown)


# -- 2. projects of one name ------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["repository without a remote", "plain folder"])
def test_a_folder_gets_nothing_of_another_of_the_same_name(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str
) -> None:
    place = make_place(tmp_path)
    plain = kind == "plain folder"
    name = "notes" if plain else "app"
    one, two = (folder(place, f"{side}/{name}", git_init=not plain) for side in ("one", "two"))
    claude = live_client(request, "claude", place, capture=True)
    gemini = live_client(request, "gemini", place, capture=True)
    claude.session("Write calc.py and check it.", work_script("claude", one), cwd=one)
    assert (one / "calc.py").read_text() == CALC
    shown = first_request(gemini.session("Where were we?", Script((), "Nothing here yet."), cwd=two))
    assert WORK_DECISION not in shown and "calc.py" not in shown, session_start(shown)
    own = first_request(gemini.session("Where were we?", Script((), "Noted."), cwd=one))
    assert WORK_DECISION in own, session_start(own)  # (what the first folder did is carried there)


# -- 3. a client killed during a tool call ------------------------------------------------------


def blocking_script(agent: str, repo: Path, started: Path) -> Script:
    """Write calc.py saying a decision, then run a command that signals it started and blocks."""
    command = f"echo running > {started} && sleep 120"
    calc = str(repo / "calc.py")
    if agent == "claude":
        write = ToolCall("Write", {"file_path": calc, "content": CALC}, KILLED_DECISION + ".")
        run = ToolCall("Bash", {"command": command, "description": "Import"})
    elif agent == "gemini":
        write = ToolCall("write_file", {"file_path": calc, "content": CALC}, KILLED_DECISION + ".")
        run = ToolCall("run_shell_command", {"command": command, "description": "Import"})
    else:
        added = _codex_add("calc.py", CALC)
        write = ToolCall(added.tool, added.arguments, KILLED_DECISION + ".", added.freeform)
        run = ToolCall("exec_command", {"cmd": command})
    return Script((write, run), "(never reached)")


@pytest.mark.parametrize("agent", ["claude", "gemini", "codex"])
def test_a_client_killed_during_a_tool_call_loses_nothing_the_next_session_needs(
    request: pytest.FixtureRequest, tmp_path: Path, agent: str
) -> None:
    place = make_place(tmp_path)
    repo = folder(place, "importer", remote="https://github.com/Owner/Importer.git")
    client = live_client(request, agent, place, capture=True)
    started = place.root / "tool-started"
    seen = client.killed_session(
        "Write calc.py, then run the import.", blocking_script(agent, repo, started), started, repo
    )
    assert seen, f"{agent} never called the scripted model"
    assert (repo / "calc.py").read_text() == CALC
    records = on_disk(place.home, KILLED_DECISION)
    assert records, f"{agent} wrote no record of the decision before it was killed"
    then = time.time() - 300  # the next session starts minutes later, not within the same second
    for record in records:
        os.utime(record, (then, then))
    shown = first_request(client.session("Where were we?", Script((), "Noted."), cwd=repo))
    # the decision and its reason, as the handoff quotes the reply or as the standing decisions list it (a client
    # killed before it flushed its tool calls to the transcript leaves only the reply: no handoff to quote)
    decided, reason = KILLED_DECISION.split(" because ")
    assert decided in shown and reason in shown, session_start(shown)


# -- 4. a branch switch ----------------------------------------------------------------------------


def test_after_a_branch_switch_the_next_session_is_told_which_branch_the_work_was_on(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    place = make_place(tmp_path)
    repo = folder(place, "shop", remote="https://github.com/Owner/Shop.git")
    git(place, repo, "checkout", "-q", "-b", "feature-x")
    claude = live_client(request, "claude", place, capture=True)
    codex = live_client(request, "codex", place, capture=True)
    claude.session("Write calc.py and check it.", work_script("claude", repo), cwd=repo)
    git(place, repo, "add", "-A")
    git(place, repo, "commit", "-qm", "calc on feature-x")
    git(place, repo, "checkout", "-q", "main")
    shown = first_request(codex.session("Where were we?", Script((), "Noted."), cwd=repo))
    assert WORK_DECISION in shown, session_start(shown)
    assert "feature-x" in shown, session_start(shown)
    assert "calc.py was deleted since" not in shown, session_start(shown)
