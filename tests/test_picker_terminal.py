"""The picker in a real terminal (tmux): arrow keys and Enter choose the active session."""

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from contextflow.sessions.core import append_note

pytestmark = [
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (scripts/test installs it)"),
    pytest.mark.usefixtures("shared_project"),  # `app` stores in `shared`; the picker runs in the plain tmp folder
]


SOCKET = f"cf-test-{os.getpid()}"  # a tmux server of this run's own: another run's never answers for it


@pytest.fixture(scope="module", autouse=True)
def own_tmux_server():
    yield
    subprocess.run(["tmux", "-L", SOCKET, "kill-server"], capture_output=True, timeout=10, check=False)


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", "-L", SOCKET, *args], capture_output=True, text=True, check=True, timeout=10).stdout


def wait_for(session: str, needle: str, timeout: float = 20.0) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = tmux("capture-pane", "-p", "-t", session)
        if needle in screen:
            return screen
        time.sleep(0.1)
    raise AssertionError(f"{needle!r} never appeared; the screen was:\n{screen}")


def test_arrow_down_and_enter_make_the_second_entry_the_active_session(app, tmp_path: Path):
    append_note(app, agent="claude", text="x", session_id="only-session")
    session = f"cf-{uuid.uuid4().hex[:8]}"
    wanted = ("CONTEXTFLOW_", "HOME", "XDG_", "MCP_SHARED_CONTEXT_")
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in os.environ.items() if k.startswith(wanted))
    command = f"cd {shlex.quote(str(tmp_path))} && env {env} {shlex.quote(sys.executable)} -m contextflow pick-session"
    tmux("new-session", "-d", "-s", session, "-x", "160", "-y", "30", command + "; sleep 5")
    try:
        screen = wait_for(session, "only-session")
        assert screen.index("New session") < screen.index("only-session")
        tmux("send-keys", "-t", session, "Down")
        tmux("send-keys", "-t", session, "Enter")
        wait_for(session, "Active session: only-session")
    finally:
        subprocess.run(
            ["tmux", "-L", SOCKET, "kill-session", "-t", session], capture_output=True, timeout=10, check=False
        )
    assert app.settings.active_session_file.read_text().strip() == "only-session"


@pytest.mark.parametrize("key", ["Escape", "q"])
def test_escape_and_q_cancel_and_leave_the_active_session_unchanged(app, tmp_path: Path, key):
    append_note(app, agent="claude", text="x", session_id="only-session")
    session = f"cf-{uuid.uuid4().hex[:8]}"
    wanted = ("CONTEXTFLOW_", "HOME", "XDG_", "MCP_SHARED_CONTEXT_")
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in os.environ.items() if k.startswith(wanted))
    command = f"cd {shlex.quote(str(tmp_path))} && env {env} {shlex.quote(sys.executable)} -m contextflow pick-session"
    tmux("new-session", "-d", "-s", session, "-x", "160", "-y", "30", command + "; echo picker-exit=$?; sleep 5")
    try:
        wait_for(session, "only-session")
        screen = ""
        for _ in range(10):  # on a loaded machine the menu may draw before it reads keys: press again
            tmux("send-keys", "-t", session, key)
            try:
                screen = wait_for(session, "picker-exit=", timeout=3.0)
                break
            except AssertionError:
                continue
    finally:
        subprocess.run(
            ["tmux", "-L", SOCKET, "kill-session", "-t", session], capture_output=True, timeout=10, check=False
        )
    assert "No session chosen; the active session is unchanged." in screen and "picker-exit=130" in screen
    assert not app.settings.active_session_file.exists()
