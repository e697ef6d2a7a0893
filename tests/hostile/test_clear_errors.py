"""A wrong setting or a planted file gets one line saying what is wrong and how to fix it: no
traceback on the command line, no "internal error" over MCP. `doctor` says what chose the store."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from contextflow.adapters.cli import main
from contextflow.adapters.server.app import ContextflowServer
from contextflow.admin.diagnose import store_info
from contextflow.app import App
from contextflow.core.errors import EXIT_BAD_INPUT, EXIT_STORE, ContextflowError


def one_line_error(capsys, *argv: str) -> str:
    code = main(list(argv))
    err = capsys.readouterr().err
    assert code in (EXIT_BAD_INPUT, EXIT_STORE), err  # a store failure or a bad setting, never a traceback
    assert "Traceback" not in err and err.startswith("contextflow: error: ") and err.count("\n") == 1, err
    return err


def test_a_store_setting_that_names_a_file_says_to_point_at_a_folder(tmp_path, monkeypatch, capsys):
    old = tmp_path / "shared-context.jsonl"
    old.write_text('{"id":"1","ts":"2025-01-01T00:00:00Z","kind":"note","text":"old"}\n')
    monkeypatch.setenv("CONTEXTFLOW_STORE", str(old))
    err = one_line_error(capsys, "read")
    assert "is a file" in err and "folder" in err and "MCP_SHARED_CONTEXT_FILE" in err
    assert old.read_text().count("\n") == 1  # nothing was changed


def test_an_unreadable_store_folder_is_one_clear_line(store_dir, monkeypatch, capsys):
    store_dir.mkdir()
    real_scandir = os.scandir

    def refuse(path):  # what a folder without read permission does (the tests may run as root)
        if Path(path) == store_dir:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", refuse)
    err = one_line_error(capsys, "read")
    assert str(store_dir) in err and "permission" in err.lower()


@pytest.mark.parametrize("kind", ["a file", "a path under a file", "an impossible path"])
def test_a_state_setting_that_cannot_be_a_folder_is_one_clear_line(tmp_path, monkeypatch, capsys, kind):
    afile = tmp_path / "state-file"
    afile.write_text("x")
    value = {"a file": afile, "a path under a file": afile / "sub", "an impossible path": Path("/proc/1/nope/state")}
    monkeypatch.setenv("CONTEXTFLOW_STATE", str(value[kind]))
    err = one_line_error(capsys, "note", "x")
    assert "CONTEXTFLOW_STATE" in err


def test_a_writer_lock_that_is_a_symlink_is_refused_on_the_cli_and_over_mcp(app, tmp_path, capsys):
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    lock = app.store.state_dir / "writer.lock"
    lock.unlink(missing_ok=True)
    lock.symlink_to(target)
    err = one_line_error(capsys, "note", "x")
    assert "writer.lock" in err and "symbolic link" in err
    reply = ContextflowServer(App.open()).call("append_shared_note", {"agent": "me", "text": "x"})
    assert reply.is_error
    text = reply.content[0].text  # type: ignore[union-attr]
    assert "symbolic link" in text and "internal error" not in text.lower()
    assert target.read_text() == "keep me"


def test_opening_with_a_bad_setting_raises_a_contextflow_error_not_an_os_error(tmp_path, monkeypatch):
    afile = tmp_path / "f"
    afile.write_text("")
    monkeypatch.setenv("CONTEXTFLOW_STORE", str(afile))
    with pytest.raises(ContextflowError):
        App.open().store.refresh()


# -- doctor and the info resource --------------------------------------------------------------


def test_doctor_says_the_store_option_chose_the_store(tmp_path, capsys):
    other = tmp_path / "elsewhere"
    assert main(["--store", str(other), "doctor", "--format", "json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["store"] == str(other) and info["chosen_by"] == "--store"


def test_the_info_resource_carries_contextflowmcp_field_names(app, store_dir):
    app.store.append("note", {"text": "x"})
    info = store_info(app)
    assert info["file"] == str(store_dir / "events.writer-a.jsonl")
    assert info["contextFileSource"] == "env"  # ContextFlowMCP's name for a path an environment variable set
    assert isinstance(info["contextFileDiscovery"], dict)
    assert info["contextFileDiscovery"]["store"] == str(store_dir)


def test_doctor_reports_an_unsafe_state_folder_it_could_still_open(tmp_path, capsys):
    root = tmp_path / "state"
    root.mkdir(mode=0o700)
    App.open().close()
    (root / "stray").write_text("x")
    os.chmod(root / "stray", 0o644)
    assert main(["doctor", "--format", "json"]) == 1  # problems found
    info = json.loads(capsys.readouterr().out)
    assert any("stray" in problem and "readable by other users" in problem for problem in info["problems"])


@pytest.mark.parametrize("setting", ["store-is-a-file", "unknown-tool-group"])
def test_serve_with_a_bad_setting_is_one_line_before_any_protocol(tmp_path, monkeypatch, capsys, setting):
    if setting == "store-is-a-file":
        (tmp_path / "file").write_text("")
        monkeypatch.setenv("CONTEXTFLOW_STORE", str(tmp_path / "file"))
    else:
        monkeypatch.setenv("CONTEXTFLOW_TOOLS", "sessions,nope")
    err = one_line_error(capsys, "serve")
    assert ("is a file" in err) if setting == "store-is-a-file" else ("unknown group 'nope'" in err)
    assert capsys.readouterr().out == ""
