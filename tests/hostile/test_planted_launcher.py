"""The Claude Code plugin's and the Gemini CLI extension's launcher run in the folder of the repository
the client opened. A `contextflow` planted there must never run: not through a relative PATH entry
(an empty one, `.`, `bin`), not through a relative CONTEXTFLOW_COMMAND, and not before the one the
user installed in an absolute place."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LAUNCHERS = (REPO / "claude-plugin" / "bin" / "contextflow-launch", REPO / "gemini-extension" / "contextflow-launch")


def executable(path: Path, says: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\necho {says} "$@"\n')
    path.chmod(0o755)
    return path


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    """A repository holding a `contextflow` of its own at its root and in bin/."""
    repo = tmp_path / "repo"
    executable(repo / "contextflow", "PLANTED")
    executable(repo / "bin" / "contextflow", "PLANTED")
    return repo


def launch(
    launcher: Path, cwd: Path, home: Path, path: str, *args: str, **extra: str
) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(home), "PATH": path, **extra}
    return subprocess.run(
        ["/bin/sh", str(launcher), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
    )


RELATIVE_PATHS = [":/usr/bin:/bin", ".:/usr/bin:/bin", "/usr/bin:/bin:", "/usr/bin::/bin", "bin:/usr/bin:/bin"]


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=["claude-plugin", "gemini-extension"])
@pytest.mark.parametrize("path", RELATIVE_PATHS)
def test_the_installed_command_runs_not_the_one_planted_in_the_repository(tmp_path, planted, launcher, path):
    home = tmp_path / "home"
    executable(home / ".local" / "bin" / "contextflow", "REAL")
    done = launch(launcher, planted, home, path, "hook", "stop")
    assert done.returncode == 0 and done.stdout.split() == ["REAL", "hook", "stop"], done


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=["claude-plugin", "gemini-extension"])
@pytest.mark.parametrize("path", RELATIVE_PATHS)
def test_with_nothing_installed_a_planted_command_is_not_run_either(tmp_path, planted, launcher, path):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    served = launch(launcher, planted, home, path, "serve")
    assert "PLANTED" not in served.stdout and served.returncode == 127 and "was not found" in served.stderr
    relative = launch(launcher, planted, home, "/usr/bin:/bin", "serve", CONTEXTFLOW_COMMAND="contextflow")
    assert "PLANTED" not in relative.stdout and relative.returncode == 127


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=["claude-plugin", "gemini-extension"])
def test_the_absolute_places_install_uses_are_found_off_path(tmp_path, planted, launcher):
    home = tmp_path / "home"
    venv = executable(home / ".local" / "share" / "contextflow" / "venv" / "bin" / "contextflow", "VENV")
    assert launch(launcher, planted, home, ".:/usr/bin:/bin", "--version").stdout.split()[0] == "VENV"
    tools = executable(tmp_path / "tools" / "contextflow", "UV")
    found = launch(launcher, planted, home, ":/usr/bin", "--version", UV_TOOL_BIN_DIR=str(tools.parent))
    assert found.stdout.split()[0] == "UV"
    os.unlink(venv)
    on_path = executable(tmp_path / "elsewhere" / "contextflow", "ONPATH")
    found = launch(launcher, planted, home, f".:{on_path.parent}:/usr/bin", "--version")
    assert found.stdout.split()[0] == "ONPATH"
