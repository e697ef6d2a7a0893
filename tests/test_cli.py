"""The session commands from a shell: good input, bad input, help."""

import json

import pytest

from contextflow.adapters.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_note_handoff_read_and_resume_work_together(capsys):
    assert run(capsys, "note", "first note", "--session", "s", "--agent", "me", "--tag", "x")[0] == 0
    assert run(capsys, "handoff", "stopped", "--session", "s", "--next", "do it", "--file", "a.py")[0] == 0
    code, out, _ = run(capsys, "read", "--session", "s", "--format", "json")
    assert code == 0 and [e["kind"] for e in json.loads(out)["entries"]] == ["note", "handoff"]
    code, out, _ = run(capsys, "resume", "s")
    assert code == 0 and "> stopped" in out and "> 1. do it" in out


def test_sessions_and_use_pick_the_active_session(capsys):
    run(capsys, "note", "n", "--session", "alpha")
    code, out, _ = run(capsys, "sessions", "--format", "json")
    assert code == 0 and [s["session_id"] for s in json.loads(out)["sessions"]] == ["alpha"]
    assert run(capsys, "use", "alpha")[0] == 0
    code, out, _ = run(capsys, "resume")
    assert code == 0 and "Resume session alpha" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("note", "   "), "TEXT is required"),
        (("read", "--limit", "0"), "limit must be from 1 to 200"),
        (("read", "--since", "soon"), "not an ISO-8601 time"),
        (("sessions", "--limit", "999"), "limit must be from 1 to 200"),
        (("resume",), "no active session is set"),
        (("handoff", ""), "SUMMARY is empty"),
    ],
)
def test_bad_input_exits_non_zero_with_the_reason_on_stderr(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and message in err and out == ""


def test_unknown_arguments_are_usage_errors(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["read", "--bogus"])
    assert exc.value.code == 2
    assert "unrecognized arguments" in capsys.readouterr().err


def test_doctor_reports_the_store_and_the_rule_that_chose_it(capsys, store_dir):
    run(capsys, "note", "x")
    code, out, _ = run(capsys, "doctor")
    assert code == 0 and f"store:        {store_dir}" in out and "chosen by:    CONTEXTFLOW_STORE" in out
    code, out, _ = run(capsys, "doctor", "--format", "json")
    info = json.loads(out)
    assert info["events"] == 1 and info["problems"] == []


def test_doctor_quick_skips_only_the_check_against_a_fresh_fold(capsys, store_dir):
    run(capsys, "note", "x")
    full = json.loads(run(capsys, "doctor", "--format", "json")[1])
    quick = json.loads(run(capsys, "doctor", "--quick", "--format", "json")[1])
    assert full["verified"]["checked"] is True and quick["verified"]["checked"] is False
    assert quick["events"] == full["events"] == 1 and quick["problems"] == []
    with pytest.raises(SystemExit) as refused:  # a flag takes no value: argparse says so
        main(["doctor", "--quick=yes"])
    assert refused.value.code == 2 and "--quick: ignored explicit argument 'yes'" in capsys.readouterr().err


def test_doctor_reports_bad_lines(capsys, store_dir):
    run(capsys, "note", "x")
    with open(store_dir / "events.writer-a.jsonl", "ab") as handle:
        handle.write(b"garbage\n")
    info = json.loads(run(capsys, "doctor", "--format", "json")[1])
    assert info["bad_lines"] == 1 and "malformed" in info["problems"][0]


def test_the_store_option_points_at_another_folder(capsys, tmp_path):
    import os

    before = dict(os.environ)
    other = tmp_path / "elsewhere"
    assert run(capsys, "--store", str(other), "note", "over there")[0] == 0
    assert (other / "events.writer-a.jsonl").exists()
    assert dict(os.environ) == before  # the option chose this command's store; the process's environment is untouched


def test_a_bad_environment_setting_is_reported_not_raised(capsys, monkeypatch):
    monkeypatch.setenv("CONTEXTFLOW_FSYNC", "sometimes")
    code, _, err = run(capsys, "read")
    assert code == 2 and "CONTEXTFLOW_FSYNC" in err


def test_pick_session_without_a_terminal_says_so_and_fails(capsys):
    code, _, err = run(capsys, "pick-session")
    assert code == 2 and "interactive terminal" in err


def test_python_dash_m_runs_the_cli():
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "contextflow", "--version"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0 and result.stdout.startswith("contextflow ")


def test_every_command_appears_in_the_readme_or_the_docs():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    docs = (root / "README.md").read_text() + "".join(p.read_text() for p in (root / "docs").glob("*.md"))
    from contextflow.operations.spec import operations

    words = {op.command[0] for op in operations() if op.command}
    missing = [name for name in sorted(words) if f"contextflow {name}" not in docs]
    assert missing == []


@pytest.mark.parametrize(
    ("argv", "exit_code", "says", "never"),
    [
        (("context", "get", "pr:nope"), 3, "run `contextflow context list` with --prefix='pr:'", "context_list"),
        (("context", "list", "--since-days", "-1"), 2, "--since-days must be from 0", "since_days"),
        (
            ("context", "set", "fact:x", "{}", "--expires", "soon"),
            2,
            "--expires='soon' is not understood",
            "expires_at",
        ),
        (("timeline", "add", "zzzz", "x"), 3, "run `contextflow timeline threads`", "timeline_list_threads"),
        (("choose", "3"), 3, "no session at index 3: `contextflow sessions` shows 0", "list_sessions"),
        (("note",), 2, "TEXT is required: pass the note as TEXT", "as text"),
        (("search", "ok", "--budget", "1"), 2, "--budget must be from 200", "budget_tokens"),
        (("read", "--limit", "0"), 2, "--limit must be from 1 to 200", "error: limit"),
    ],
)
def test_cli_errors_name_commands_and_flags_not_tool_arguments(capsys, argv, exit_code, says, never):
    code, out, err = run(capsys, *argv)
    assert code == exit_code and out == "" and says in err and never not in err, err


def test_an_input_error_names_its_argument_and_each_adapter_words_it():
    from contextflow.adapters.cli import in_cli_words
    from contextflow.core.errors import InputError, arg, call
    from contextflow.operations.spec import operations

    error = InputError(f"{arg('since_days')} must be from 0; {call('context_list')} with {arg('prefix')}='pr:'")
    assert error.argument == "since_days"
    assert str(error) == "since_days must be from 0; call context_list with prefix='pr:'"
    context_list = next(op for op in operations() if op.name == "context_list")
    worded = in_cli_words(error, context_list)
    assert worded == "--since-days must be from 0; run `contextflow context list` with --prefix='pr:'"
    plain = InputError('since_days in a message without marks stays as written {"a": 1}')
    assert in_cli_words(plain, context_list) == str(plain) and plain.argument is None


def test_the_cli_and_the_tool_print_the_same_json(capsys, app):
    import anyio
    from mcp import Client

    from contextflow.adapters.server.app import ContextflowServer

    assert run(capsys, "note", "shared payload", "--session", "s")[0] == 0
    code, out, _ = run(capsys, "read", "--session", "s", "--format", "json")

    async def tool() -> object:
        async with Client(ContextflowServer(app).server, mode="legacy") as client:
            result = await client.call_tool("read_shared_context", {"session_id": "s", "format": "json"})
            return result.structured_content

    assert code == 0 and json.loads(out) == anyio.run(tool)


def test_doctor_on_a_store_not_written_yet_reports_no_problem(capsys, store_dir):
    code, out, _ = run(capsys, "doctor")
    assert code == 0 and "(created on the first write)" in out and "problems:     none" in out
    assert "empty (the store has no logs yet)" in out and "behind the logs" not in out  # views on disk
    run(capsys, "note", "x")
    code, out, _ = run(capsys, "doctor")
    assert code == 0 and "empty (" not in out.split("views on disk:")[1].split("rebuild:")[0]  # (logs now)


def test_exit_codes_tell_bad_input_from_not_found_from_a_store_failure(capsys, store_dir):
    assert run(capsys, "context", "set", "k", "not json")[0] == 2
    code, _, err = run(capsys, "context", "get", "no:such-key")
    assert code == 3 and "no:such-key" in err
    store_dir.mkdir(parents=True, exist_ok=True)
    (store_dir / "events.writer-a.jsonl").mkdir()  # this writer's log cannot be opened for appending
    code, _, err = run(capsys, "note", "x")
    assert code == 4 and "contextflow: error:" in err


def test_empty_session_listings_and_choose_speak_to_a_shell_user_too(capsys, store_dir):
    assert "`contextflow use NAME`" in run(capsys, "sessions")[1]
    run(capsys, "note", "x", "--session", "auth-fix")
    out = run(capsys, "choose", "1")[1]
    assert "`contextflow resume auth-fix`" in out


def test_doctor_says_the_search_index_is_behind_until_a_search_catches_up(capsys):
    """After a write the index is behind the logs until the next search commits the new events."""
    run(capsys, "note", "zebra migration plan")
    assert run(capsys, "search", "zebra")[0] == 0
    run(capsys, "note", "unicorn rollout")
    out = run(capsys, "doctor")[1]
    assert "search index:" in out and "behind the logs (the next search catches up)" in out
    assert run(capsys, "search", "unicorn")[0] == 0
    out = run(capsys, "doctor")[1]
    assert "behind the logs" not in out
