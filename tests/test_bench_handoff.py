"""scripts/bench_handoff.py over its recorded sessions: every fact reaches the next session start,
none stale, no secret anywhere, every session start within each client's limit; and its fixtures are
what make_handoff_fixtures.py writes (12 sessions or more, of the three clients)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "handoff"


def run(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path)}
    return subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path
    )


def test_the_handoff_benchmark_meets_its_target_on_the_recorded_sessions(tmp_path: Path) -> None:
    done = run(str(SCRIPTS / "bench_handoff.py"), tmp_path=tmp_path)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-3000:]
    assert "target (every fact carried, none stale, no secret, within every limit): met" in done.stdout
    for kind in ("agent handoff", "decision", "rejected option", "test outcome", "todo", "open question"):
        assert f"\n  {kind} " in done.stdout, kind
    assert "secrets: 3 planted, 0 found" in done.stdout


def test_the_fixtures_cover_three_clients_and_every_case(tmp_path: Path) -> None:
    cases = json.loads((FIXTURES / "cases.json").read_text())
    sessions = [session for case in cases for session in case["sessions"]]
    assert len(sessions) >= 12
    assert {session["client"] for session in sessions} == {"claude-code", "gemini-cli", "codex"}
    names = {case["name"] for case in cases}
    assert {"agent-handoff", "closing-thanks", "fail-then-pass", "early-decision", "todo-and-question"} <= names
    assert {"after-unrelated-sessions", "file-changed-after", "secrets", "stop-before-last-result"} <= names
    for session in sessions:
        assert (FIXTURES / session["transcript"]).is_file()


def test_the_fixtures_are_what_the_generator_writes(tmp_path: Path) -> None:
    done = run(str(SCRIPTS / "make_handoff_fixtures.py"), "--out", str(tmp_path / "made"), tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    made = {path.name: path.read_bytes() for path in (tmp_path / "made").iterdir()}
    assert made == {path.name: path.read_bytes() for path in FIXTURES.iterdir()}, (
        "run scripts/make_handoff_fixtures.py and commit its output"
    )
