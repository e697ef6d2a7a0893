"""Capture from each client's real record (trimmed samples of Claude Code 2.1.330, Codex 0.169,
Gemini CLI 0.61): turns, incremental reading, hostile input, privacy, and the automatic handoff."""

import io
import json
from pathlib import Path

import pytest

from contextflow.adapters.cli import main
from contextflow.capture import claude, codex, gemini, read_position
from contextflow.capture.core import TURN_KIND
from contextflow.sessions import core as sessions
from tests.folding import view_of

FIXTURES = Path(__file__).parent / "fixtures" / "capture"
FINAL = (
    "I decided to coerce inputs with int(). calc.add now returns int(a) + int(b); tests pass. "
    "Next step: add a CLI entry point."
)
TOKEN = "sk-test-AAAABBBBCCCCDDDD1234"


def lines(name):
    return [line for line in (FIXTURES / name).read_bytes().split(b"\n") if line.strip()]


@pytest.mark.parametrize(
    ("parser", "name"),
    [
        (claude, "claude-transcript.jsonl"),
        (claude, "claude-todowrite.jsonl"),
        (codex, "codex-rollout.jsonl"),
        (gemini, "gemini-chat.jsonl"),
    ],
)
def test_each_clients_sample_is_one_turn_with_files_commands_tests_and_todos(parser, name):
    counts = {}
    turns = parser.parse(lines(name), counts)
    assert counts == {}
    assert len(turns) == 1
    data = turns[0].data("/work/research/capture/runs/" + name.split("-")[0] + "-full/work")
    assert data["request"].startswith("Create calc.py with an add function")
    assert "secret-launch-code" not in json.dumps(data)
    assert any(path.endswith("calc.py") for path in data["files"]["created"])
    assert any(path.endswith("calc.py") for path in data["files"]["edited"])
    assert any(path.endswith("README.md") for path in data["files"]["read"])
    exits = {c["command"]: c["exit"] for c in data["commands"]}
    assert exits["ls -1 && git status --short"] == 0
    assert [code for cmd, code in exits.items() if "sys.exit(3)" in cmd] == [3]
    assert data["tests"] == [{"command": "python3 -m unittest -v", "exit": 0, "passed": True}]
    assert [error for error in data["errors"] if "exited 3" in error] == [
        """`python3 -c 'import sys; print("boom", file=sys.stderr); sys.exit(3)'` exited 3: boom"""
    ]  # the command's own output, not the client's "Exit code 3" wrapper
    assert data["final"] == FINAL
    assert {"text": "Add a CLI entry point", "status": "pending"} in data["todos"]


@pytest.mark.parametrize(
    ("parser", "name"),
    [
        (claude, "claude-resume-compact.jsonl"),
        (codex, "codex-rollout-resumed.jsonl"),
        (gemini, "gemini-chat-resumed.jsonl"),
    ],
)
def test_a_resumed_session_is_two_turns_and_compaction_noise_is_no_turn(parser, name):
    turns = parser.parse(lines(name), {})
    assert [turn.prompt for turn in turns][1:] == ["Run the tests again."]
    assert len(turns) == 2


def test_a_failed_command_without_output_is_reported_by_its_exit_code_alone():
    """Seen live: Claude Code answers a silent failure with `Exit code 3`, Gemini CLI with
    `Output: (empty)`; neither is the command's output."""
    command = "python3 -c 'import sys; sys.exit(3)'"
    use = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": command}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "Exit code 3", "is_error": True}
    transcript = [
        {"type": "user", "message": {"content": "run it"}},
        {"type": "assistant", "message": {"content": [use]}},
        {"type": "user", "message": {"content": [result]}},
    ]
    shell = {
        "name": "run_shell_command",
        "args": {"command": command},
        "status": "success",
        "result": [
            {
                "functionResponse": {
                    "response": {
                        "output": "<untrusted_context>\nOutput: (empty)\nExit Code: 3\n"
                        "Process Group PGID: 7\n</untrusted_context>"
                    }
                }
            }
        ],
    }
    chat = [
        {"id": "u1", "type": "user", "content": [{"text": "run it"}]},
        {"id": "g1", "type": "gemini", "content": "", "toolCalls": [shell]},
    ]
    for parser, records in ((claude, transcript), (gemini, chat)):
        turns = parser.parse([json.dumps(record).encode() for record in records], {})
        assert turns[0].data(None)["errors"] == [f"`{command}` exited 3"], parser


def test_gemini_drops_the_injected_session_start_context_from_the_prompt():
    record = {
        "id": "u1",
        "type": "user",
        "content": [{"text": "<hook_context>memory here</hook_context>\n\nfix the bug"}],
    }
    turns = gemini.parse([json.dumps(record).encode()], {})
    assert turns[0].prompt == "fix the bug"


def test_hostile_lines_are_skipped_and_counted(tmp_path):
    path = tmp_path / "t.jsonl"
    good = lines("claude-transcript.jsonl")
    path.write_bytes(
        b"\n".join([b"{not json", b"[1,2]", b'{"type":"user","message":7}', b"x" * (read_position.MAX_LINE + 5), *good])
        + b"\n"
    )
    chunk = read_position.read_new(str(path), None)
    assert chunk.skipped == 1
    counts = {}
    turns = claude.parse(chunk.lines, counts)
    assert counts["bad"] == 2
    assert len(turns) == 1


def test_a_line_longer_than_a_whole_read_is_skipped_across_reads(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"y" * 100 + b"\n{}\n")
    first = read_position.read_new(str(path), None, max_read=50)
    assert first.lines == [] and first.skipped == 1
    second = read_position.read_new(str(path), first.position, max_read=50)  # still inside the long line
    assert second.lines == [] and second.skipped == 0
    third = read_position.read_new(str(path), second.position, max_read=50)
    assert third.lines == [b"{}"] and third.skipped == 0


# -- through the hook -----------------------------------------------------------------------------


def run_hook(monkeypatch, capsys, event, payload):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode())))
    assert main(["hook", event]) == 0
    out, err = capsys.readouterr()
    assert "did nothing" not in err, err
    return out


@pytest.fixture
def repo(tmp_path):
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    (work / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:Example-Owner/calc-demo.git\n')
    return work


def client_payload(tmp_path, repo, fixture, hook, transcript_name, sample_root):
    """The real hook payload, with its paths moved into tmp_path, and the transcript copied there."""
    payload = json.loads((FIXTURES / hook).read_text())
    transcript = tmp_path / "home" / transcript_name
    transcript.parent.mkdir(parents=True, exist_ok=True)
    text = (FIXTURES / fixture).read_text().replace(sample_root, str(repo))
    transcript.write_text(text)
    return {**payload, "transcript_path": str(transcript), "cwd": str(repo)}, transcript


CLAUDE = (
    "claude-transcript.jsonl",
    "claude-Stop.json",
    ".claude/projects/x/s.jsonl",
    "/work/research/capture/runs/claude-full/work",
)
CODEX = (
    "codex-rollout.jsonl",
    "codex-Stop.json",
    ".codex/sessions/rollout-x.jsonl",
    "/work/research/capture/runs/codex-full/work",
)
GEMINI = (
    "gemini-chat.jsonl",
    "gemini-AfterAgent.json",
    ".gemini/tmp/w/chats/session-x.jsonl",
    "/work/research/capture/runs/gemini-full/work",
)


def _all(app):
    app.store.refresh()
    return list(view_of(app.store, "activity").all_events())


@pytest.mark.parametrize("client", [CLAUDE, CODEX, GEMINI], ids=["claude", "codex", "gemini"])
def test_a_turn_is_stored_once_with_an_automatic_handoff_in_the_repositorys_project(
    app, tmp_path, monkeypatch, capsys, repo, client
):
    payload, _ = client_payload(tmp_path, repo, *client)
    run_hook(monkeypatch, capsys, "stop", payload)
    run_hook(monkeypatch, capsys, "stop", payload)  # nothing new: nothing stored twice
    turns = _all(app)
    assert len(turns) == 1
    assert turns[0].data["session_id"] == payload["session_id"]
    assert turns[0].data["project"] == "example-owner/calc-demo"
    assert turns[0].data["turn"]["files"]["created"] == ["calc.py"]
    handoff = sessions.latest_handoff(
        app, sessions.EntryFilter("example-owner/calc-demo", session_id=payload["session_id"])
    )
    assert handoff is not None and handoff.data["auto"] is True
    assert handoff.data["summary"].startswith("[automatic handoff] " + FINAL)
    assert "python3 -m unittest -v -> ok" in handoff.data["summary"]
    assert "calc.py" in handoff.data["files"]
    assert handoff.data["next_steps"][0] == "add a CLI entry point."
    assert handoff.data["provenance"]["transcript"] == payload["transcript_path"]
    listed = sessions.list_sessions(app, sessions.session_query(app, project="example-owner/calc-demo"))
    assert [s.session_id for s in listed] == [payload["session_id"]]


def test_claudes_lagging_final_line_and_a_new_turn_are_read_incrementally(app, tmp_path, monkeypatch, capsys, repo):
    payload, transcript = client_payload(tmp_path, repo, *CLAUDE)
    full = transcript.read_bytes()
    final_at = full.rindex(b'"stop_reason":"end_turn"')
    cut = full.rindex(b"\n", 0, final_at) + 1
    transcript.write_bytes(full[:cut])  # at Stop the final text line is not written yet
    run_hook(monkeypatch, capsys, "stop", payload)
    prompt = {
        "parentUuid": None,
        "isSidechain": False,
        "type": "user",
        "message": {"role": "user", "content": "Now add a CLI"},
        "uuid": "u-2",
    }
    reply = {
        "parentUuid": "u-2",
        "isSidechain": False,
        "type": "assistant",
        "uuid": "a-2",
        "message": {
            "id": "m2",
            "role": "assistant",
            "content": [{"type": "text", "text": "CLI added."}],
            "stop_reason": "end_turn",
        },
    }
    with open(transcript, "ab") as handle:
        handle.write(full[cut:] + (json.dumps(prompt) + "\n" + json.dumps(reply) + "\n").encode())
    run_hook(monkeypatch, capsys, "stop", {**payload, "last_assistant_message": "CLI added."})
    turns = [e.data["turn"] for e in _all(app)]
    assert [t["request"] for t in turns] == [turns[0]["request"], "Now add a CLI"]
    assert turns[0]["final"] == FINAL and turns[1]["final"] == "CLI added."
    from contextflow.capture import recall

    latest = recall.latest_handoff(app, "example-owner/calc-demo")
    assert latest is not None and latest.session_id == payload["session_id"] and latest.digest["turns"] == 2
    assert latest.digest["finals"][-1] == FINAL  # a turn that only talks does not replace the work's summary


def test_a_rewritten_transcript_is_read_again_without_storing_a_turn_twice(app, tmp_path, monkeypatch, capsys, repo):
    payload, transcript = client_payload(tmp_path, repo, "codex-rollout-resumed.jsonl", *CODEX[1:])
    run_hook(monkeypatch, capsys, "stop", {**payload, "last_assistant_message": "Second turn done."})
    text = transcript.read_bytes()
    transcript.unlink()
    transcript.write_bytes(text)  # a new file (new inode) with the same turns
    run_hook(monkeypatch, capsys, "stop", {**payload, "last_assistant_message": "Second turn done."})
    second = text.rindex(b"\n", 0, text.index(b"Run the tests again.")) + 1
    transcript.write_bytes(text[:second])  # truncated to the first turn
    run_hook(monkeypatch, capsys, "session-end", {**payload, "hook_event_name": "SessionEnd"})
    assert [e.data["turn"]["request"][:6] for e in _all(app)] == ["Create", "Run th"]


def test_private_text_and_a_token_in_a_command_are_nowhere_on_disk(app, tmp_path, monkeypatch, capsys, repo):
    for client in (CLAUDE, CODEX, GEMINI):
        payload, transcript = client_payload(tmp_path, repo, *client)
        run_hook(monkeypatch, capsys, "stop", payload)
        transcript.unlink()  # the client's own file holds them verbatim; ours must not
    assert len(_all(app)) == 3
    found = []
    for folder in (tmp_path / "store", tmp_path / "state"):
        for path in folder.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                found += [(path, word) for word in (TOKEN.encode(), b"secret-launch-code") if word in data]
    assert found == []
    assert (tmp_path / "state").exists()


def test_an_agents_written_handoff_stands_until_later_work(app, tmp_path, monkeypatch, capsys, repo):
    """The agent writes its handoff with no session id (as a tool call does; it starts a session of its
    own, as every write without one does); the turn that called the tool links it to the captured
    session; turns that only talk leave it standing, a turn with work makes the automatic handoff,
    derived from the turns, the latest again."""
    from contextflow.capture import recall

    project = "example-owner/calc-demo"
    payload, transcript = client_payload(tmp_path, repo, *GEMINI)
    run_hook(monkeypatch, capsys, "stop", payload)
    assert recall.latest_handoff(app, project).event is None  # the automatic one, from the turns
    written = sessions.write_handoff(app, agent="gemini-cli", summary="My own words", project=project)
    assert written.data["session_id"] != payload["session_id"]  # no session named: it started its own
    call = {
        "name": "write_shared_handoff",
        "args": {"agent": "gemini-cli", "summary": "My own words"},
        "status": "success",
        "result": [{"functionResponse": {"response": {"output": "ok"}}}],
    }
    with open(transcript, "ab") as handle:  # the turn that called the tool
        handle.write(b'{"id":"u9","type":"user","content":[{"text":"hand off"}]}\n')
        handle.write(json.dumps({"id": "g9", "type": "gemini", "content": "Handed off.", "toolCalls": [call]}).encode())
        handle.write(b"\n")
    run_hook(monkeypatch, capsys, "stop", {**payload, "prompt": "hand off", "prompt_response": "Handed off."})
    latest = recall.latest_handoff(app, project)
    assert latest.event is not None and latest.event.id == written.id
    assert latest.session_id == payload["session_id"]  # linked by the turn that called the tool
    with open(transcript, "ab") as handle:  # a turn that only talks: the agent's word stands
        handle.write(b'{"id":"u10","type":"user","content":[{"text":"thanks"}]}\n')
        handle.write(b'{"id":"g10","type":"gemini","content":"Glad to help!"}\n')
    run_hook(monkeypatch, capsys, "stop", {**payload, "prompt": "thanks", "prompt_response": "Glad to help!"})
    assert recall.latest_handoff(app, project).event.id == written.id
    shell = {
        "name": "run_shell_command",
        "args": {"command": "pytest -q"},
        "status": "success",
        "result": [{"functionResponse": {"response": {"output": "Output: 3 passed\nExit Code: 0"}}}],
    }
    with open(transcript, "ab") as handle:  # later work: the automatic handoff is the latest again
        handle.write(b'{"id":"u11","type":"user","content":[{"text":"run the tests"}]}\n')
        entry = {"id": "g11", "type": "gemini", "content": "Tests pass.", "toolCalls": [shell]}
        handle.write(json.dumps(entry).encode())
        handle.write(b"\n")
    run_hook(monkeypatch, capsys, "stop", {**payload, "prompt": "run the tests", "prompt_response": "Tests pass."})
    latest = recall.latest_handoff(app, project)
    assert latest.event is None and latest.earlier is not None and latest.earlier.id == written.id
    assert "Tests pass." in latest.digest["finals"]


def test_an_unchanged_automatic_handoff_is_not_appended_again(app, tmp_path, monkeypatch, capsys, repo):
    payload, _ = client_payload(tmp_path, repo, *CLAUDE)
    run_hook(monkeypatch, capsys, "stop", payload)
    run_hook(monkeypatch, capsys, "session-end", {**payload, "hook_event_name": "SessionEnd"})
    app.store.refresh()
    handoffs = [e for e in view_of(app.store, "sessions").by_project["example-owner/calc-demo"] if e.kind == "handoff"]
    assert len(handoffs) == 1


@pytest.mark.parametrize("switch", ["env", "file"])
def test_capture_off_stores_nothing(app, tmp_path, monkeypatch, capsys, repo, switch):
    if switch == "env":
        monkeypatch.setenv("CONTEXTFLOW_CAPTURE", "off")
    else:
        (repo / ".contextflow-capture-off").touch()
    payload, _ = client_payload(tmp_path, repo, *CODEX)
    run_hook(monkeypatch, capsys, "stop", payload)
    assert _all(app) == []


def test_captured_activity_is_searchable(app, tmp_path, monkeypatch, capsys, repo):
    from contextflow.search.extractors import extractors

    payload, _ = client_payload(tmp_path, repo, *CODEX)
    run_hook(monkeypatch, capsys, "stop", payload)
    (put,) = extractors()[TURN_KIND][1](_all(app)[0])
    assert "calc.py" in put.fields["files"] and "coerce" in put.fields["text"]


def test_a_session_that_only_talks_stores_its_turn_but_hands_nothing_over(app, tmp_path, monkeypatch, capsys, repo):
    payload, _ = client_payload(tmp_path, repo, *CLAUDE)
    run_hook(monkeypatch, capsys, "stop", payload)  # real work: the automatic handoff names calc.py
    chat = tmp_path / "home" / "chat.jsonl"
    chat.write_text(
        json.dumps({"type": "user", "isSidechain": False, "message": {"role": "user", "content": "Thanks!"}}) + "\n"
    )
    talk = {**payload, "session_id": "just-talk", "transcript_path": str(chat), "last_assistant_message": "Noted."}
    run_hook(monkeypatch, capsys, "stop", talk)
    assert {turn.data["session_id"] for turn in _all(app)} == {payload["session_id"], "just-talk"}
    latest = sessions.latest_handoff(app, sessions.EntryFilter("example-owner/calc-demo"))
    assert latest is not None and latest.data["session_id"] == payload["session_id"]
    assert "calc.py" in latest.data["files"]


def test_a_turn_is_captured_while_sessions_cannot_be_read(app, tmp_path, monkeypatch, capsys, repo):
    """Tables that do not open (a full or read-only state folder): a turn that wrote a handoff is still
    stored (unlinked), the Stop hook does not fail."""
    from contextflow.core.tables import Tables
    from contextflow.sessions import stored

    payload, transcript = client_payload(tmp_path, repo, *GEMINI)
    run_hook(monkeypatch, capsys, "stop", payload)
    sessions.write_handoff(app, agent="gemini-cli", summary="My own words", project="example-owner/calc-demo")
    monkeypatch.setattr(Tables, "usable", lambda self: False)
    assert not stored.current(app)
    call = {"name": "write_shared_handoff", "args": {"summary": "My own words"}, "status": "success"}
    with open(transcript, "ab") as handle:
        handle.write(b'{"id":"u9","type":"user","content":[{"text":"hand off"}]}\n')
        handle.write(json.dumps({"id": "g9", "type": "gemini", "content": "Handed off.", "toolCalls": [call]}).encode())
        handle.write(b"\n")
    run_hook(monkeypatch, capsys, "stop", {**payload, "prompt": "hand off", "prompt_response": "Handed off."})
    assert len(_all(app)) == 2
