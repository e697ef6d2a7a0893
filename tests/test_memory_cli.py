"""`contextflow context ...`, `contextflow timeline ...`, `whereami`, `wherewasi` from a shell."""

from __future__ import annotations

import io
import json

import pytest

from contextflow.adapters.cli import main
from contextflow.core.errors import EXIT_BAD_INPUT, EXIT_NOT_FOUND
from contextflow.timeline import core as timeline


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def ok_json(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    code, out, err = run(capsys, *argv, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_context_set_get_list_and_delete(capsys):
    saved = ok_json(capsys, "context", "set", "machine:chisel", '{"ip": "10.0.0.2"}', "--pinned", "--label", "chisel")
    assert saved["pinned"] is True and saved["agent"] == "human" and saved["id"]
    code, out, _ = run(capsys, "context", "get", "machine:chisel")
    assert code == 0 and '"ip": "10.0.0.2"' in out and "[machine] machine:chisel (chisel)" in out
    listed = ok_json(capsys, "context", "list", "--pinned-only", "--prefix", "machine:")
    assert [r["key"] for r in listed["records"]] == ["machine:chisel"]
    assert ok_json(capsys, "context", "delete", "machine:chisel")["key"] == "machine:chisel"
    code, _, err = run(capsys, "context", "get", "machine:chisel")
    assert code == 3 and "was deleted" in err


def test_context_set_reads_the_value_from_stdin(capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO('{"pubkey": "ssh-ed25519 AAAA"}'))
    assert ok_json(capsys, "context", "set", "clipboard:key", "-")["expires_at"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("context", "set", "nocolon", "{}"), "not a namespaced key"),
        (("context", "set", "fact:x", "not json"), "VALUE is not valid JSON"),
        (("context", "set", "fact:x", "[1, 2]"), "VALUE must be a JSON object"),
        (("context", "set", "fact:x", "{}", "--expires", "whenever"), "--expires='whenever' is not understood"),
        (("context", "set", "fact:x", json.dumps({"b": "x" * 70_000})), "64 KB"),
        (("context", "get", "fact:none"), "no context record"),
        (("context", "delete", "fact:none"), "no context record"),
        (("context", "list", "--since-days", "-1"), "--since-days must be from 0"),
    ],
)
def test_context_commands_report_bad_input_on_stderr_with_a_non_zero_exit(capsys, app, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == (EXIT_NOT_FOUND if message.startswith("no ") else EXIT_BAD_INPUT) and message in err and out == ""
    assert app.store.event_count == 0


def test_timeline_commands_work_together_by_id_prefix(capsys):
    thread = ok_json(capsys, "timeline", "create", "UDM Pro", "--description", "track devices")["id"]
    thought = ok_json(
        capsys,
        "timeline",
        "add",
        thread[:5],
        "working on credentials",
        "--type",
        "blocker",
        "--metadata",
        '{"files": ["api.py"]}',
    )["id"]
    assert ok_json(capsys, "timeline", "update", thought[:6], "--status", "resolved")["thought_id"] == thought
    tangent = ok_json(capsys, "timeline", "tangent", thread[:5], "NAS check")["id"]
    where = ok_json(capsys, "timeline", "where")
    assert {w["id"] for w in where["threads"]} == {thread, tangent}
    back = ok_json(capsys, "timeline", "return", tangent[:6], "--status", "paused")
    assert back["parent_thread_id"] == thread
    code, out, _ = run(capsys, "timeline", "show", thread[:5])
    assert code == 0 and "> working on credentials" in out and "status=resolved" in out and "tangents:" in out
    assert [t["id"] for t in ok_json(capsys, "timeline", "threads", "--status", "paused")["threads"]] == [tangent]
    ok_json(capsys, "timeline", "set-thread", thread, "--status", "paused")
    code, out, _ = run(capsys, "wherewasi")
    assert code == 0 and "UDM Pro" in out and "NAS check" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("timeline", "add", "zzzz", "text"), "no thread id starts with 'zzzz'"),
        (("timeline", "show", "zzzz"), "no thread id starts with"),
        (("timeline", "update", "zzzz", "--status", "resolved"), "no thought id starts with"),
        (("timeline", "return", "zzzz"), "no thread id starts with"),
        (("timeline", "create", " "), "NAME is empty"),
    ],
)
def test_timeline_commands_report_unknown_ids_and_bad_input(capsys, argv, message):
    code, _, err = run(capsys, *argv)
    assert code == (EXIT_NOT_FOUND if message.startswith("no ") else EXIT_BAD_INPUT) and message in err


def test_returning_from_a_root_thread_fails_and_an_ambiguous_prefix_asks_for_more(capsys, app):
    ids = [timeline.create_thread(app, name=f"t{n}").id for n in range(33)]  # 33 ids: two share a first character
    code, _, err = run(capsys, "timeline", "return", ids[0])
    assert code == 2 and "root thread, not a tangent" in err
    shared = next(a[0] for a in ids for b in ids if a != b and a[0] == b[0])
    code, _, err = run(capsys, "timeline", "show", shared)
    assert code == 2 and "ambiguous" in err


def test_a_bad_choice_is_refused_by_the_parser(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["timeline", "add", "abc", "text", "--type", "musing"])
    assert exited.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_whereami_shows_pinned_context_in_text_and_json(capsys):
    run(capsys, "context", "set", "waiting:pr-1777", '{"description": "PR #1777"}', "--pinned")
    code, out, _ = run(capsys, "whereami")
    assert code == 0 and "## Waiting on" in out and "waiting:pr-1777" in out
    data = ok_json(capsys, "whereami")
    assert [r["key"] for r in data["waiting"]] == ["waiting:pr-1777"]


def test_every_memory_command_and_tool_appears_in_the_docs():
    from pathlib import Path

    from contextflow.records import operations as context
    from contextflow.timeline import operations as timeline

    docs = (Path(__file__).resolve().parent.parent / "docs" / "context-and-timeline.md").read_text()
    for op in (*context.OPERATIONS, *timeline.OPERATIONS):
        if op.command and len(op.command) == 2:
            group, name = op.command
            assert f"contextflow {group} {name}" in docs, f"{group} {name} is not in docs/context-and-timeline.md"
    assert "contextflow whereami" in docs and "contextflow wherewasi" in docs
    tools = [op for op in (*context.OPERATIONS, *timeline.OPERATIONS) if op.tool]
    for spec in [*tools, *context.TABLE.prompts]:
        assert f"`{spec.name}`" in docs, f"{spec.name} is not in docs/context-and-timeline.md"
