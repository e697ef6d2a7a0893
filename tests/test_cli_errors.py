"""Errors a command line user meets: one line on stderr, the exit code README documents."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contextflow.adapters.cli import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def deny_inside(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The folder as a mode 000 folder is to its owner when not root: listing it or using anything in it
    fails with EACCES (root ignores modes, so the test makes the calls fail as they would)."""
    inside = str(folder.resolve())

    def denied(path: Any, itself: bool) -> bool:
        if isinstance(path, int | bytes):
            return False
        text = os.path.abspath(os.fspath(path))
        return text.startswith(inside + os.sep) or (itself and text == inside)

    def wrap(call: Callable[..., Any], itself: bool) -> Callable[..., Any]:
        def refused(path: Any, *args: Any, **kwargs: Any) -> Any:
            if denied(path, itself):
                raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
            return call(path, *args, **kwargs)

        return refused

    for name, itself in (("scandir", True), ("listdir", True), ("open", False), ("stat", False), ("lstat", False)):
        monkeypatch.setattr(os, name, wrap(getattr(os, name), itself))


@pytest.mark.parametrize(
    "argv",
    [
        ["note", "hi", "--agent", "me"],
        ["handoff", "done", "--agent", "me"],
        ["timeline", "create", "t"],
        ["compact"],
        ["sessions"],
        ["doctor"],
        ["search", "parser"],
    ],
)
def test_a_store_folder_the_user_cannot_read_is_one_line_and_exit_4(
    argv: list[str], store_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["note", "before", "--agent", "me"]) == 0  # the folder and this writer's log exist
    capsys.readouterr()
    deny_inside(store_dir, monkeypatch)
    code, _, err = run(argv, capsys)
    assert code == 4, err
    assert len(err.strip().splitlines()) == 1, err
    assert "permission denied" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "prog", "said"),
    [
        (["update", "x", "--add-tag", "a"], "contextflow update", "unrecognized arguments: --add-tag a"),
        (["link", "a"], "contextflow link", "required: TO"),
        (["add", "text"], "contextflow add", "required: --type"),
        (["nosuch"], "contextflow", "unknown command 'nosuch'"),
        (["sessions", "--limit", "many"], "contextflow sessions", "invalid int value"),
    ],
)
def test_a_usage_error_is_one_line_naming_the_command_it_is_about(
    argv: list[str], prog: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(argv, capsys)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1, err
    assert err.startswith(f"{prog}: error: ") and said in err and f"`{prog} --help`" in err


def test_link_names_the_end_it_could_not_find(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["add", "--type", "fact", "one", "--format", "json"]) == 0
    node = json.loads(capsys.readouterr().out)["id"]
    code, _, err = run(["link", node, "zzzz"], capsys)
    assert code == 3
    assert "the edge's target: no node id starts with 'zzzz'" in err and "no to id" not in err


def test_cancelling_the_picker_is_not_doctors_problems_found(monkeypatch: pytest.MonkeyPatch) -> None:
    from contextflow.adapters import picker
    from contextflow.app import App

    class Cancelled:
        application = type("Application", (), {"key_bindings": None})()

        def ask(self) -> None:
            return None  # what questionary answers to Esc, q or Ctrl-C

    monkeypatch.setattr("questionary.select", lambda *args, **kwargs: Cancelled())
    app = App.open()
    try:
        assert picker.run_picker(app, None) == 130
    finally:
        app.close()


def test_native_windows_gets_one_line_naming_what_is_supported(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delattr(os, "O_NOFOLLOW")  # as on native Windows
    for argv in (["serve"], ["sessions"], ["hook", "stop"]):
        code, out, err = run(argv, capsys)
        assert (code, out) == (4, "") and err.count("\n") == 1, err
        assert "native Windows is not supported yet" in err and "WSL" in err


def test_doctor_says_which_platforms_are_supported(capsys: pytest.CaptureFixture[str]) -> None:
    main(["doctor", "--quick"])
    assert "supported: Linux (tested), macOS, and Windows through WSL" in capsys.readouterr().out
