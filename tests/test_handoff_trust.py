"""What the next session is told can be trusted: each check's last outcome, decisions read from
every turn, files checked against the code, the agent's word over the automatic handoff."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from contextflow.capture import digest, filestate, outcomes, prose, substance
from tests.folding import view_of

# -- outcomes ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("pytest -q", "python -m pytest tests/"),
        ("pytest", "python3 -m pytest ./tests -x"),
        ("pytest tests/test_a.py", "pytest -q ./tests/test_a.py"),
    ],
)
def test_spellings_of_one_check_have_one_key(a, b):
    assert outcomes.check_key(a) == outcomes.check_key(b)


def test_a_narrower_run_is_a_different_check_that_a_wider_pass_covers():
    whole, one = outcomes.check_key("pytest -q"), outcomes.check_key("pytest tests/test_a.py::test_x")
    assert whole != one
    assert outcomes.covers(whole, one) and not outcomes.covers(one, whole)
    assert outcomes.covers(outcomes.check_key("pytest tests/test_a.py"), one)
    assert not outcomes.covers(outcomes.check_key("go test ./..."), one)


def test_a_later_pass_clears_the_failure_and_a_later_failure_replaces_the_pass():
    checks: dict[str, dict[str, object]] = {}
    outcomes.fold(checks, {"command": "pytest -q", "exit": 1, "error": "E   assert 3 == 4"}, 1)
    outcomes.fold(checks, {"command": "pytest tests/test_a.py::test_x", "exit": 1, "error": "boom"}, 1)
    assert len(outcomes.failing(checks)) == 2
    outcomes.fold(checks, {"command": "python -m pytest tests/", "exit": 0}, 2)
    assert outcomes.failing(checks) == [] and [c["command"] for c in checks.values()] == ["python -m pytest tests/"]
    outcomes.fold(checks, {"command": "pytest", "exit": 2, "error": "E   ImportError: no calc"}, 3)
    assert [c["error"] for c in outcomes.failing(checks)] == ["E   ImportError: no calc"]


def test_a_failure_names_its_assertion_not_its_progress_line():
    output = (
        "============ test session starts ============\n"
        "collected 2 items\n\n"
        ".F                                   [100%]\n"
        "=== FAILURES ===\n"
        ">       assert add(1, 2) == 4\n"
        "E       assert 3 == 4\n"
        "FAILED tests/test_calc.py::test_add - assert 3 == 4\n"
    )
    assert outcomes.error_line(output) == "E       assert 3 == 4"
    assert outcomes.error_line("Traceback:\n  File x\nValueError: bad input\n") == "ValueError: bad input"
    assert outcomes.error_line(".F [100%]\n") == ""
    assert outcomes.error_line("") == ""


# -- substance -----------------------------------------------------------------------------


def test_a_decision_carries_its_reason_and_the_option_it_rejected():
    said = prose.extract(
        "Looked at both. We decided to round per line rather than per invoice because per-invoice "
        "rounding hides cents.\n\nOpen question: should refunds reuse the invoice id?\nTODO: add a CLI"
    )
    chosen, rejected = said["decisions"]
    assert chosen["status"] == "chosen" and chosen["decision"].startswith("We decided to round per line")
    assert chosen["reasoning"] == "per-invoice rounding hides cents."
    assert rejected == {
        "decision": "per invoice",
        "status": "rejected",
        "reasoning": "per-invoice rounding hides cents.",
    }
    assert said["questions"] == ["should refunds reuse the invoice id?"]
    assert said["todos_said"] == ["add a CLI"]


@pytest.mark.parametrize(
    "closing",
    ["Thanks, that's all!", "Glad to help! Anything else?", "Would you like me to run the tests?", ""],
)
def test_a_closing_turn_states_nothing_and_changes_nothing(closing):
    said = prose.extract(closing)
    assert said == {}
    before = prose.extract("I decided to keep the cache because reads dominate.")
    assert substance.accumulate(before, said) == before


def test_a_later_decision_answers_an_open_question_and_resolved_drops_it():
    session = substance.accumulate({}, prose.extract("Open question: which cache backend should we use?"))
    session = substance.accumulate(session, prose.extract("Open question: is the token scope right?"))
    session = substance.accumulate(session, prose.extract("We decided to use sqlite as the cache backend."))
    assert session["questions"] == ["is the token scope right?"]
    session = substance.accumulate(session, prose.extract("Resolved: the token scope is right."))
    assert "questions" not in session


def test_the_same_decision_restated_is_kept_once_in_its_latest_wording():
    session = substance.accumulate({}, prose.extract("We decided to store money as integer cents."))
    session = substance.accumulate(session, prose.extract("We decided to store money as integer cents, always."))
    assert [d["decision"] for d in session["decisions"]] == ["We decided to store money as integer cents, always."]


def test_prose_that_is_huge_or_strange_is_read_within_bounds():
    said = prose.extract(("I decided to " + "x" * 5_000 + ". ") * 200 + "```\nDecision: in code\n```")
    assert len(said["decisions"]) <= substance.MAX_KEEP
    assert all(len(d["decision"]) <= substance.MAX_ITEM for d in said["decisions"])
    assert not any("in code" in d["decision"] for d in said["decisions"])


# -- file state ----------------------------------------------------------------------------

GIT = shutil.which("git")
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, capture_output=True, text=True, timeout=30, check=True)
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if GIT is None:
        pytest.fail("git is needed for these tests")
    folder = tmp_path / "repo"
    folder.mkdir()
    git(folder, "init", "-q")
    (folder / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(folder, "add", "-A")
    git(folder, "commit", "-qm", "one")
    return folder


def test_a_files_blob_is_gits_and_head_is_read_without_git(repo: Path):
    state = filestate.states(str(repo), ["calc.py", "missing.py"])
    assert state["commit"] == git(repo, "rev-parse", "HEAD")
    assert state["files"] == {"calc.py": git(repo, "hash-object", "calc.py"), "missing.py": filestate.GONE}


def test_a_file_changed_since_says_how_many_commits_later(repo: Path):
    state = filestate.states(str(repo), ["calc.py"])
    assert filestate.changes(str(repo), state) == []
    (repo / "calc.py").write_text("def add(a, b):\n    return int(a) + int(b)\n")
    assert [c.text() for c in filestate.changes(str(repo), state)] == ["calc.py changed since (not committed)"]
    git(repo, "commit", "-qam", "two")
    (repo / "calc.py").write_text("def add(a, b):\n    return 0\n")
    git(repo, "commit", "-qam", "three")
    assert [c.text() for c in filestate.changes(str(repo), state)] == ["calc.py changed since (2 commits later)"]
    (repo / "calc.py").unlink()
    assert filestate.changes(str(repo), state)[0].text() == "calc.py was deleted since"


def test_paths_out_of_the_repository_fifos_and_links_out_are_not_read(repo: Path, tmp_path: Path):
    secret = tmp_path / "outside.txt"
    secret.write_text("not yours")
    (repo / "link.txt").symlink_to(secret)
    os.mkfifo(repo / "pipe")
    reader = threading.Thread(target=filestate.states, args=(str(repo), ["../outside.txt", "link.txt", "pipe"]))
    reader.start()
    reader.join(5)
    assert not reader.is_alive(), "reading a FIFO blocked"
    assert filestate.states(str(repo), ["../outside.txt", "link.txt", "pipe", "/etc/passwd"]) == {}
    assert filestate.changes(str(repo), {"files": {"../outside.txt": "x", "pipe": "y"}, "commit": "z"}) == []


def test_bad_recorded_state_is_ignored(repo: Path):
    for bad in ({}, {"files": "calc.py"}, {"files": {"calc.py": 3}}, {"files": {"calc.py": "x"}, "commit": "; rm"}):
        found = filestate.changes(str(repo), bad)  # type: ignore[arg-type]
        assert all(change.commits is None for change in found)


# -- the automatic handoff of a session, from its turns -------------------------------------


def test_the_automatic_handoff_keeps_substance_over_a_closing_thanks_and_clears_fixed_failures():
    turns = [
        {
            "request": "fix totals",
            "files": {"edited": ["totals.py"]},
            "commands": [{"command": "pytest -q", "exit": 1, "error": "E   assert 3 == 4"}],
            "final": "I decided to round per line because totals must match.",
            "decisions": [
                {"decision": "I decided to round per line", "reasoning": "totals must match.", "status": "chosen"}
            ],
        },
        {"request": "again", "commands": [{"command": "python -m pytest tests/", "exit": 0}], "final": "Green now."},
        {"request": "thanks", "final": "Glad to help!"},
    ]
    folded: dict[str, object] = {}
    for turn in turns:
        folded = digest.fold(folded, turn)
    fields = digest.auto_handoff(folded)
    assert fields["summary"] == "Green now."
    assert fields["tests"] == ["python -m pytest tests/ -> ok"]
    assert "errors" not in fields and "failing" not in fields
    assert [d["decision"] for d in fields["decisions"]] == ["I decided to round per line"]


# -- the session start, through the real hooks ------------------------------------------------


def _writer():
    import importlib.util
    import sys

    path = Path(__file__).resolve().parent.parent / "scripts" / "benchlib" / "transcripts.py"
    spec = importlib.util.spec_from_file_location("bench_transcripts", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_transcripts", module)
    spec.loader.exec_module(module)
    return module


def machine(tmp_path: Path, name: str) -> dict[str, str]:
    """Another machine on the same (synced) store: its own HOME, state folder and writer id."""
    return {
        "HOME": str(tmp_path / name),
        "CONTEXTFLOW_STORE": str(tmp_path / "store"),
        "CONTEXTFLOW_STATE": str(tmp_path / name / "state"),
        "CONTEXTFLOW_WRITER": name,
        "PATH": os.environ.get("PATH", ""),
    }


def captured(env: dict[str, str], repo: Path, session: str, turns: list[dict[str, object]]) -> None:
    """A Claude Code session in `repo`, captured turn by turn by the Stop hook, then SessionEnd."""
    import json

    from contextflow.adapters import hooks

    writer = _writer()
    transcript = Path(env["HOME"]) / ".claude" / "projects" / f"{session}.jsonl"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    payload = {"session_id": session, "cwd": str(repo), "transcript_path": str(transcript)}
    for n in range(len(turns)):
        lines = writer.claude(turns[: n + 1], session)
        transcript.write_text("".join(lines).replace(writer.ROOT, str(repo)))
        stop = {**payload, "hook_event_name": "Stop", "last_assistant_message": turns[n]["final"]}
        hooks.run("stop", json.dumps(stop).encode(), {**env, "CONTEXTFLOW_CLIENT": "claude-code"})
    hooks.run("session-end", json.dumps({**payload, "hook_event_name": "SessionEnd"}).encode(), env)


def started(env: dict[str, str], repo: Path, client: str = "codex") -> str:
    import json

    from contextflow.adapters import hooks

    payload = {"session_id": "next", "cwd": str(repo), "hook_event_name": "SessionStart"}
    out = hooks.run("session-start", json.dumps(payload).encode(), {**env, "CONTEXTFLOW_CLIENT": client})
    return str(json.loads(out)["hookSpecificOutput"]["additionalContext"]) if out else ""


def test_a_decision_outlives_unrelated_sessions_and_a_changed_file_is_marked(tmp_path: Path, repo: Path):
    env = machine(tmp_path, "laptop")
    (repo / "money.py").write_text("CENTS = 100\n")
    captured(
        env,
        repo,
        "s1",
        [
            {
                "prompt": "money type",
                "steps": [{"edit": "money.py"}],
                "final": "We decided to store money as integer cents in money.py because floats drift.",
            }
        ],
    )
    (repo / "README.md").write_text("# calc\n")
    captured(env, repo, "s2", [{"prompt": "readme", "steps": [{"write": "README.md"}], "final": "README written."}])
    shown = started(env, repo)
    assert "README written." in shown  # the latest handoff: the unrelated session's
    assert "store money as integer cents in money.py" in shown and "floats drift" in shown
    assert "changed since" not in shown
    (repo / "money.py").write_text("CENTS = 1000\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "later")
    shown = started(env, repo)
    assert "money.py changed since (1 commit later)" in shown


def test_every_machine_shows_the_same_latest_handoff_whatever_its_active_session(tmp_path: Path, repo: Path):
    from contextflow.app import App
    from contextflow.sessions import core as sessions

    laptop, desktop = machine(tmp_path, "laptop"), machine(tmp_path, "desktop")
    turns = [
        {"prompt": "work", "steps": [{"write": "calc.py"}], "final": "calc written."},
        {"prompt": "hand off", "steps": [{"handoff": "Calc done; the CLI is next"}], "final": "Handed off."},
    ]
    app = App.open(laptop, cwd=repo)
    try:
        sessions.write_handoff(app, agent="codex", summary="Old work", session_id="some-old-session")
    finally:
        app.close()
    captured(laptop, repo, "s1", turns[:1])
    app = App.open(laptop, cwd=repo)
    try:  # the server writes the tool's handoff while the turn runs: it has no session id
        sessions.write_handoff(app, agent="claude-code", summary="Calc done; the CLI is next")
        sessions.set_active_session(app, "some-old-session")  # machine-local: it must not matter
    finally:
        app.close()
    captured(laptop, repo, "s1", turns)
    on_laptop, on_desktop = started(laptop, repo), started(desktop, repo, "gemini-cli")
    assert "(written by the agent)" in on_laptop and "> Calc done; the CLI is next" in on_laptop
    handoff = on_laptop.split("## ")[1]
    assert "[automatic handoff]" not in handoff and "> Old work" not in handoff
    assert on_laptop.split("## ")[1] == on_desktop.split("## ")[1]  # the same handoff block on both machines


def test_a_failure_in_a_file_changed_since_is_not_shown_as_current(tmp_path: Path, repo: Path):
    env = machine(tmp_path, "laptop")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_calc.py").write_text("def test_add(): assert False\n")
    failing = {"run": "pytest tests/test_calc.py", "exit": 1, "output": "E       assert False\n1 failed"}
    captured(env, repo, "s1", [{"prompt": "test", "steps": [{"edit": "tests/test_calc.py"}, failing], "final": "Red."}])
    shown = started(env, repo)
    assert "failing now (as last run)" in shown and "E       assert False" in shown
    (repo / "tests" / "test_calc.py").write_text("def test_add(): assert True\n")
    shown = started(env, repo)
    assert "failing now" not in shown
    assert "failed before files it covers changed (re-run to know)" in shown
    assert "tests/test_calc.py changed since (not committed)" in shown


def test_turn_records_of_any_shape_from_another_machine_never_break_the_session_start(tmp_path: Path, repo: Path):
    from contextflow.app import App

    env = machine(tmp_path, "laptop")
    captured(env, repo, "s1", [{"prompt": "work", "steps": [{"write": "calc.py"}], "final": "We decided to keep it."}])
    hostile = [
        {"decisions": [{"reasoning": "no decision"}, "text", {"decision": 3}], "questions": [1, None, "ok?"]},
        {"state": "calc.py", "handoff": {"id": 5}, "commands": [{"command": None}, "rm -rf /"], "files": {"edited": 3}},
        {"state": {"files": {"calc.py": 7, "../../etc/passwd": "x"}, "commit": ["a"]}, "todos": "all"},
        {"decisions": {"decision": "not a list"}, "todos_said": "x", "resolved": [{"a": 1}], "final": 42},
    ]
    app = App.open(machine(tmp_path, "desktop"), cwd=repo)
    try:
        for n, turn in enumerate(hostile):
            data = {"session_id": "s9", "turn_id": f"bad-{n}", "turn": {"files": {"created": ["x.py"]}, **turn}}
            app.store.append("capture.turn", {**data, "agent": "codex", "project": app.settings.default_project})
    finally:
        app.close()
    shown = started(env, repo)
    assert "## Latest handoff" in shown and "We decided to keep it." in shown, shown


def test_a_captured_session_is_a_conversation_record_get_context_finds(tmp_path: Path, repo: Path):
    from contextflow.app import App
    from contextflow.search import retrieval

    env = machine(tmp_path, "laptop")
    final = "We decided to round per line rather than per invoice because per-invoice rounding hides cents."
    captured(env, repo, "s1", [{"prompt": "totals", "steps": [{"write": "totals.py"}], "final": final}])
    captured(env, repo, "s1", [{"prompt": "totals", "steps": [{"write": "totals.py"}], "final": final}])
    app = App.open(env, cwd=repo)
    try:
        assert len(view_of(app.store, "conversations").records) == 1  # one record per session
        found = retrieval.get_context(app, query="why did we round per line?", kinds=["conversation"])
    finally:
        app.close()
    assert "per-invoice rounding hides cents" in found.text and "rejected" in found.text, found.text
    lines = [line for log in (tmp_path / "store").glob("events.*.jsonl") for line in log.read_text().splitlines()]
    assert sum('"kind":"conversation.save"' in line for line in lines) == 1  # written again only when it changed
