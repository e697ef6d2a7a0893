"""`doctor` checks every setting it reads and repairs the permissions of the files contextflow writes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from contextflow.adapters.cli import main
from contextflow.adapters.hooks import log_reason


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("CONTEXTFLOW_TOOLS", "nonsense", "CONTEXTFLOW_TOOLS names an unknown group 'nonsense'"),
        ("CONTEXTFLOW_HOOK_BUDGET", "abc", "CONTEXTFLOW_HOOK_BUDGET='abc' is not a whole number"),
        ("CONTEXTFLOW_HOOK_BUDGET", "10", "uses 2250"),
        ("CONTEXTFLOW_STORE", "store", "CONTEXTFLOW_STORE='store' is a relative path"),
        ("CONTEXTFLOW_CAPTURE", "maybe", "CONTEXTFLOW_CAPTURE='maybe' is not understood"),
    ],
)
def test_doctor_names_a_setting_that_would_break_later(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str, value: str, said: str
) -> None:
    monkeypatch.setenv(name, value)
    assert main(["doctor"]) == 1
    assert said in capsys.readouterr().out


@pytest.mark.parametrize(
    ("name", "value"), [("CONTEXTFLOW_TOOLS", "sessions,graph"), ("CONTEXTFLOW_HOOK_BUDGET", "4000")]
)
def test_good_settings_pass(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    assert main(["doctor"]) == 0, capsys.readouterr().out


def test_the_hooks_log_contextflow_writes_is_private_and_doctor_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.umask(0o022)
    log_reason("nothing to capture")
    path = tmp_path / "state" / "hooks.log"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert main(["doctor"]) == 0, capsys.readouterr().out


def test_doctor_fix_repairs_loose_permissions_of_state_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["note", "x", "--agent", "a", "--session", "s"]) == 0
    loose = tmp_path / "state" / "hooks.log"
    loose.write_text("older line\n")
    loose.chmod(0o644)
    capsys.readouterr()
    assert main(["doctor"]) == 1 and "readable by other users" in capsys.readouterr().out
    assert main(["doctor", "--fix"]) == 0
    assert f"fixed: {loose}: mode 644 -> 600" in capsys.readouterr().out
    assert stat.S_IMODE(loose.stat().st_mode) == 0o600 and loose.read_text() == "older line\n"
    assert main(["doctor"]) == 0


def test_doctor_says_no_logs_yet_instead_of_an_empty_line(capsys: pytest.CaptureFixture[str]) -> None:
    main(["doctor"])
    lines = capsys.readouterr().out.splitlines()
    assert "logs:" not in lines and any(line.startswith("logs:         none yet") for line in lines)
