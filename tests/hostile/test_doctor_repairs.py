"""doctor's repairs stick: after it says it deleted forged derived state, the next commands show what the
logs say."""

from __future__ import annotations

import pytest

from contextflow.adapters.cli import main
from contextflow.app import App
from contextflow.sessions import core as sessions


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_one_doctor_run_clears_forged_derived_tables_for_good(app: App, capsys: pytest.CaptureFixture[str]) -> None:
    sessions.write_handoff(app, agent="me", summary="the real handoff", session_id="s1")
    app.tables().query(
        "UPDATE sessions_entries SET summary = replace(summary, 'the real handoff', 'FORGED') WHERE kind = 'handoff'"
    )
    app.close()
    assert "FORGED" in run(capsys, "latest", "--session", "s1")[1], "the forged tables are what a reader gets"

    code, out, _ = run(capsys, "doctor")
    assert code == 1 and "do not match the logs" in out
    for _ in range(2):  # and it stays so
        code, out, _ = run(capsys, "latest", "--session", "s1")
        assert code == 0 and "the real handoff" in out and "FORGED" not in out
