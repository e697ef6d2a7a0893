"""doctor's repairs stick: after it says it deleted forged derived state, the next command shows what the
logs say (its own close must not write the forged views back)."""

from __future__ import annotations

import pytest

from contextflow.adapters.cli import main
from contextflow.app import App
from contextflow.core.events import Event
from contextflow.sessions import core as sessions


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _forge_snapshot() -> None:
    forger = App.open()  # loads the snapshot, slips in a handoff no log holds, saves it again
    state = forger.store.view("sessions")
    real = state.by_project["shared"][-1]
    fake = Event(
        "forged0000000000", real.writer, real.seq + 1, real.hlc + 1, "handoff", {**real.data, "summary": "FORGED"}
    )
    state.by_project["shared"].append(fake)
    state.by_session[("shared", "s1")].append(fake)
    assert forger.store.save_snapshot(force=True)
    forger.store.close()


def test_one_doctor_run_clears_a_forged_snapshot_for_good(app, capsys):
    sessions.write_handoff(app, agent="me", summary="the real handoff", session_id="s1")
    assert app.store.save_snapshot(force=True)
    app.close()
    _forge_snapshot()
    assert "FORGED" not in run(capsys, "latest", "--session", "s1")[1], "readers ask the derived tables"

    code, out, _ = run(capsys, "doctor")
    assert code == 1 and "do not match the logs" in out
    for _ in range(2):  # and it stays so (a reader's own close writes nothing forged back)
        code, out, _ = run(capsys, "latest", "--session", "s1")
        assert code == 0 and "the real handoff" in out and "FORGED" not in out
