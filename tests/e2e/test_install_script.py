"""The README's set-up command, run as a new user would: the system's own python3 (Debian's refuses
`pip install --user`, PEP 668), an empty home, no uv or pipx on PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = "/usr/bin/python3"

pytestmark = pytest.mark.slow


@pytest.mark.skipif(not Path(SYSTEM_PYTHON).exists(), reason="no system python3 at /usr/bin/python3 on this machine")
def test_the_setup_command_installs_a_working_contextflow_in_an_empty_home(tmp_path):
    home = tmp_path / "new-user"
    home.mkdir()
    bare_path = "/usr/bin:/bin"
    assert shutil.which("uv", path=bare_path) is None and shutil.which("pipx", path=bare_path) is None
    env = {"HOME": str(home), "PATH": bare_path, "PYTHON": SYSTEM_PYTHON, "LANG": "C.UTF-8"}
    for name in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_CONSTRAINT", "PIP_CERT"):
        if name in os.environ:  # the machine's package mirror, if it has one
            env[name] = os.environ[name]
    done = subprocess.run(["sh", str(ROOT / "scripts/install")], env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    installed = home / ".local/bin/contextflow"
    assert f"installed with a virtual environment: {installed}" in done.stdout
    assert "add " in done.stdout and "to PATH" in done.stdout  # ~/.local/bin is not on this PATH: it says how
    assert done.stderr == ""
    store = tmp_path / "store"
    run_env = {**env, "CONTEXTFLOW_STORE": str(store)}
    note = subprocess.run([str(installed), "note", "installed"], env=run_env, capture_output=True, text=True)
    assert note.returncode == 0, note.stderr
    doctor = subprocess.run([str(installed), "doctor"], env=run_env, capture_output=True, text=True)
    assert doctor.returncode == 0 and "events:       1" in doctor.stdout and "problems:     none" in doctor.stdout
    # the installed package (not this checkout) carries the OpenCode plugin `install opencode` writes
    opencode = subprocess.run([str(installed), "install", "opencode"], env=run_env, capture_output=True, text=True)
    assert opencode.returncode == 0, opencode.stderr
    plugin = home / ".config" / "opencode" / "plugins" / "contextflow.js"
    assert f'"CONTEXTFLOW_STORE": "{store}"' in plugin.read_text()
    launcher = ROOT / "claude-plugin" / "bin" / "contextflow-launch"  # finds it in ~/.local/bin, off PATH
    found = subprocess.run(["sh", str(launcher), "--version"], env=env, capture_output=True, text=True, timeout=60)
    assert found.returncode == 0 and found.stdout.startswith("contextflow "), found.stderr
