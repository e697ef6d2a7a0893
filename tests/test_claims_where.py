"""Every claim carries where it was made (branch, HEAD, machine, checkout) and the state of the files
it cites; a session start names a claim from another branch, machine or checkout as such, and
re-qualifies one whose files changed since (`filestate.qualify`)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from contextflow.capture import filestate
from tests.test_handoff_trust import captured, machine, started

GIT_ENV = {"PATH": os.environ.get("PATH", ""), "HOME": os.devnull, "GIT_CONFIG_GLOBAL": os.devnull}


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=folder, env=GIT_ENV, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def configured(folder: Path) -> Path:
    git(folder, "config", "user.name", "t")
    git(folder, "config", "user.email", "t@example.invalid")
    return folder


def make_repo(folder: Path) -> Path:
    folder.mkdir(parents=True)
    git(folder, "init", "-q", "-b", "main")
    configured(folder)
    (folder / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(folder, "add", "-A")
    git(folder, "commit", "-qm", "one")
    return folder


def clone(origin: Path, folder: Path) -> Path:
    git(origin.parent, "clone", "-q", str(origin), str(folder))
    return configured(folder)


def test_a_turns_state_names_its_branch_head_machine_and_checkout(tmp_path):
    repo = make_repo(tmp_path / "app")
    git(repo, "switch", "-q", "-c", "feature-x")
    state = filestate.states(str(repo), ["calc.py"], "laptop")
    assert state["branch"] == "feature-x" and state["commit"] == git(repo, "rev-parse", "HEAD")
    assert state["machine"] == "laptop" and state["root"] == str(repo)
    here = filestate.Here(str(repo), "laptop")
    assert filestate.qualify(state, here) == []  # made here, files as they were: it stands


def test_a_claim_from_another_branch_is_named_as_that_branchs(tmp_path):
    repo = make_repo(tmp_path / "app")
    env = machine(tmp_path, "laptop")
    git(repo, "switch", "-q", "-c", "feature-x")
    (repo / "money.py").write_text("CENTS = 100\n")
    turn = {
        "prompt": "money",
        "steps": [{"edit": "money.py"}],
        "final": "We decided to store money as integer cents in money.py because floats drift.",
    }
    captured(env, repo, "s1", [turn])
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "money")
    git(repo, "switch", "-q", "main")
    shown = started(env, repo)
    assert "on feature-x; you are on main" in shown
    assert "money.py is on branch feature-x, not here" in shown and "money.py was deleted since" not in shown
    git(repo, "switch", "-q", "feature-x")
    assert "you are on" not in started(env, repo)  # back on its branch: nothing to say


def test_a_file_this_machine_never_had_is_on_the_other_machine_not_deleted(tmp_path):
    origin = make_repo(tmp_path / "laptop-app")
    other = clone(origin, tmp_path / "desktop-app")
    (origin / "notes.py").write_text("TODO = 1\n")
    turn = {"prompt": "notes", "steps": [{"write": "notes.py", "content": "TODO = 1\n"}], "final": "Notes written."}
    captured(machine(tmp_path, "laptop"), origin, "s1", [turn])
    shown = started(machine(tmp_path, "desktop"), other)
    assert "notes.py is on machine laptop, not here" in shown
    assert "notes.py was deleted since" not in shown


def test_another_checkouts_uncommitted_change_is_not_uncommitted_here(tmp_path):
    first = make_repo(tmp_path / "app")
    second = clone(first, tmp_path / "app-review")
    env = machine(tmp_path, "laptop")
    (first / "calc.py").write_text("def add(a, b):\n    return int(a) + int(b)\n")  # not committed
    turn = {"prompt": "ints", "steps": [{"edit": "calc.py"}], "final": "I decided to cast to int in calc.py."}
    captured(env, first, "s1", [turn])
    shown = started(env, second)
    assert "calc.py changed since (not committed)" not in shown
    assert f"calc.py differs here from its copy in the checkout {first}" in shown
    assert f"in another checkout ({first})" in shown
    assert "changed since" not in started(env, first)  # in its own checkout it stands


def test_qualify_requalifies_a_passing_outcome_whose_files_changed_since(tmp_path):
    repo = make_repo(tmp_path / "app")
    state = filestate.states(str(repo), ["calc.py"], "laptop")  # `pytest` passed with calc.py as it was
    here = filestate.Here(str(repo), "laptop")
    assert filestate.qualify(state, here) == []
    (repo / "calc.py").write_text("def add(a, b):\n    return 0\n")
    git(repo, "commit", "-qam", "two")
    assert filestate.qualify(state, filestate.Here(str(repo), "laptop")) == ["calc.py changed since (1 commit later)"]
    elsewhere = filestate.Here(str(repo), "desktop")
    assert filestate.qualify(state, elsewhere)[0] == "on machine laptop"
    assert filestate.qualify({"files": "x"}, here) == [] and filestate.qualify({}, here) == []


def test_a_new_sessions_suggested_id_is_the_branch_read_without_running_git(tmp_path, monkeypatch, app):
    from contextflow.sessions.core import suggest_session_id

    repo = make_repo(tmp_path / "app")
    git(repo, "switch", "-q", "-c", "feature/login")

    def refuse(*args, **kwargs):
        raise AssertionError("the branch is read from .git: git must not run")

    monkeypatch.setattr(subprocess, "run", refuse)
    monkeypatch.setattr(subprocess, "Popen", refuse)
    assert suggest_session_id(app, repo) == "feature/login"
    assert suggest_session_id(app, tmp_path).startswith("session-")  # no repository: a fresh id
