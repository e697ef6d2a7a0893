"""The one hook path under a racing client, hostile transcripts and secrets: tool results that
arrive after the Stop hook are still captured, no line stops capture, no transcript path blocks a
hook, and no secret reaches the store, the state folder or hooks.log."""

import io
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from contextflow.adapters.cli import main
from contextflow.capture import claude, read_position, transcript, turns
from contextflow.capture.health import capture_health, health_lines
from contextflow.capture.payload import Hook
from contextflow.capture.turns import TURN_KIND
from contextflow.core.log import read_whole
from tests.folding import view_of

FIXTURES = Path(__file__).parent / "fixtures" / "capture"
SAMPLE_ROOT = "/work/research/capture/runs/claude-full/work"
SESSION = "8e4d1d6f-482d-4907-98e3-070538e16aa1"
FINAL = (
    "I decided to coerce inputs with int(). calc.add now returns int(a) + int(b); tests pass. "
    "Next step: add a CLI entry point."
)


@pytest.fixture
def repo(tmp_path):
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    return work


def sample(repo):
    return (FIXTURES / "claude-transcript.jsonl").read_text().replace(SAMPLE_ROOT, str(repo)).encode()


def stop_payload(transcript, repo, **extra):
    return {
        "session_id": SESSION,
        "transcript_path": str(transcript),
        "cwd": str(repo),
        "permission_mode": "default",
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": FINAL,
        **extra,
    }


def run_hook(monkeypatch, capsys, event, payload):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode())))
    assert main(["hook", event]) == 0
    return capsys.readouterr()


def stored(app):
    app.store.refresh()
    return [event.data["turn"] for event in view_of(app.store, "activity").all_events()]


def commands_of(records):
    return [(c["command"], c["exit"]) for record in records for c in record.get("commands", [])]


def test_a_tool_result_written_after_the_stop_hook_is_captured_on_the_next_read(
    app, tmp_path, monkeypatch, capsys, repo
):
    """Claude Code fires Stop before it writes the last tool result: a replay of the real hook on
    the real transcript cut after a Bash tool_use, then the rest appended (read at SessionEnd)."""
    full = sample(repo)
    at = full.index(b"sys.exit(3)")
    cut = full.index(b"\n", at) + 1  # just after the failing command's tool_use line
    path = tmp_path / "home" / ".claude" / "projects" / "w" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(full[:cut])
    run_hook(monkeypatch, capsys, "stop", stop_payload(path, repo))
    assert not any(command.startswith("python3 -c") for command, _ in commands_of(stored(app)))  # not yet
    with open(path, "ab") as handle:
        handle.write(full[cut:])
    run_hook(monkeypatch, capsys, "session-end", {**stop_payload(path, repo), "hook_event_name": "SessionEnd"})

    records = stored(app)
    failing = [(command, code) for command, code in commands_of(records) if "sys.exit(3)" in command]
    assert failing and failing[0][1] == 3
    assert any("exited 3: boom" in error for record in records for error in record.get("errors", []))
    whole = claude.parse([line for line in full.split(b"\n") if line.strip()], {})
    expected = [(c["command"], c["exit"]) for t in whole for c in transcript.redacted(t.data(str(repo)))["commands"]]
    assert sorted(commands_of(records)) == sorted(expected)  # nothing lost, nothing twice


def test_pending_calls_restart_with_a_rewritten_transcript(tmp_path):
    path = tmp_path / "t.jsonl"
    use = {"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]}}
    path.write_text(json.dumps({"type": "user", "message": {"content": "go"}}) + "\n" + json.dumps(use) + "\n")
    hook = Hook("Stop", "s", str(path), None, None, None, "claude-code")
    state = {}
    transcript.read(hook, state, "claude")
    assert list(state["pending"]["calls"]) == ["t1"]
    path.unlink()
    path.write_text(json.dumps({"type": "user", "message": {"content": "other"}}) + "\n")  # a new file
    transcript.read(hook, state, "claude")
    assert state["pending"]["calls"] == {}


# -- nothing stops capture, nothing blocks a hook ------------------------------------------------


def hook_process(event, payload, env):
    """`contextflow hook <event>` as a client runs it: its CPU seconds (bounded: a blocked hook
    fails the test by its timeout, an unbounded read by its CPU time)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-m", "contextflow", "hook", event],
        input=json.dumps(payload).encode(),
        env=env,
        capture_output=True,
        timeout=20,
        check=False,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, done.stderr.decode()
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done


@pytest.fixture
def hook_env(tmp_path):
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("COVERAGE")},
        "HOME": str(tmp_path / "home"),
        "CONTEXTFLOW_STORE": str(tmp_path / "store"),
        "CONTEXTFLOW_STATE": str(tmp_path / "state"),
        "CONTEXTFLOW_WRITER": "writer-a",
    }


def entry(kind, content, **extra):
    return json.dumps({"type": kind, "message": {"role": kind, "content": content}, **extra})


def bash(call_id, command, result, failed):
    use = entry("assistant", [{"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": command}}])
    done = entry("user", [{"type": "tool_result", "tool_use_id": call_id, "content": result, "is_error": failed}])
    return [use, done]


def wedge_lines():
    deep = '{"type":"user","message":{"content":' + "[" * 1500 + "]" * 1500 + "}}"
    lines = [deep, *bash("b1", "make check", "Exit code " + "9" * 200 + "\nfailed", True)]
    for n in range(3):
        huge = "/src/" + "d" * (1_900_000) + f"/{n}.py"
        write = {"type": "tool_use", "id": f"w{n}", "name": "Write", "input": {"file_path": huge, "content": "x"}}
        lines.append(entry("assistant", [write]))
        lines.append(entry("user", [{"type": "tool_result", "tool_use_id": f"w{n}", "content": "File created"}]))
    return lines


def test_wedge_lines_are_skipped_and_counted_and_the_next_turn_is_still_captured(tmp_path, hook_env, repo):
    path = tmp_path / "home" / ".claude" / "projects" / "w" / "s.jsonl"
    path.parent.mkdir(parents=True)
    first = [entry("user", "Run the checks"), *wedge_lines(), entry("assistant", [{"type": "text", "text": "Ran."}])]
    path.write_text("\n".join(first) + "\n")
    payload = {**stop_payload(path, repo), "last_assistant_message": "Ran."}
    costs = [hook_process("stop", payload, hook_env)[0]]
    for n in range(3):  # the next turns
        with open(path, "a") as handle:
            handle.write(
                "\n".join(
                    [
                        entry("user", f"Next turn {n}"),
                        *bash(f"n{n}", f"pytest -q tests/test_{n}.py", "1 passed", False),
                        entry("assistant", [{"type": "text", "text": f"Turn {n} done."}]),
                    ]
                )
                + "\n"
            )
        costs.append(hook_process("stop", {**payload, "last_assistant_message": f"Turn {n} done."}, hook_env)[0])
    assert max(costs) < 1.0, costs  # CPU seconds of each hook call
    logs = (tmp_path / "store").glob("events.*.jsonl")
    lines = [line for log in logs for _, line in read_whole(log)[1]]  # the log reader's lines: no batch markers
    records = [json.loads(line)["data"] for line in lines if json.loads(line)["kind"] == TURN_KIND]
    assert [r["turn"]["request"] for r in records] == ["Run the checks", "Next turn 0", "Next turn 1", "Next turn 2"]
    assert all(len(json.dumps(r["turn"], ensure_ascii=False).encode()) <= turns.MAX_TURN_BYTES for r in records)
    assert max(len(line) for line in lines) < 8_000
    wedged = records[0]["turn"]
    assert [(c["command"], c["exit"]) for c in wedged["commands"]] == [("make check", None)]  # 200 digits: unknown
    assert wedged["errors"] == ["`make check` failed (exit code unknown): failed"]
    assert "files" not in wedged  # a 1.9 MB "path" is no path
    rows = capture_health(_state_of(tmp_path))
    assert rows[0]["client"] == "claude-code" and rows[0]["turns"] == 4 and rows[0]["bad"] >= 1
    assert "lines skipped" in health_lines(rows)[1]


def _state_of(tmp_path):
    return next(path.parent.parent for path in (tmp_path / "state").rglob("capture/*.json"))


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "link-to-dev-zero", "folder", "oversized-path"])
def test_a_transcript_path_that_is_no_regular_file_is_refused_at_once(tmp_path, hook_env, repo, kind):
    path = tmp_path / "home" / "t.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link-to-dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "folder":
        path.mkdir()
    given = {"dev-zero": "/dev/zero", "oversized-path": "/tmp/" + "p" * 200_000}.get(kind, str(path))
    for event in ("stop", "session-end", "pre-compact"):
        cpu, done = hook_process(event, stop_payload(given, repo, hook_event_name="Stop"), hook_env)
        assert cpu < 1.0
        assert b"not read" in done.stderr or b"did nothing" not in done.stderr, done.stderr
    # the next turn, in a regular transcript, is captured as ever
    good = tmp_path / "home" / "good.jsonl"
    good.write_text(entry("user", "after the refusal") + "\n" + entry("assistant", [{"type": "text", "text": "ok"}]))
    good.write_text(good.read_text() + "\n" + "\n".join(bash("x", "ls", "a", False)) + "\n")
    hook_process("stop", stop_payload(good, repo, last_assistant_message="ok"), hook_env)
    text = b"".join(p.read_bytes() for p in (tmp_path / "store").glob("events.*.jsonl"))
    assert b"after the refusal" in text


def test_read_position_refuses_a_fifo_without_waiting(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(read_position.NotRegular, match="FIFO"):
        read_position.read_new(str(fifo), None)
    with pytest.raises(read_position.NotRegular, match="device"):
        read_position.read_new("/dev/zero", None)


# -- no secret anywhere ----------------------------------------------------------------------------

PASSWORD = "Hunter2-Stag1ng-Pw"
GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2  # 40 characters after the prefix
API_KEY = "AKIAIOSFODNN7EXAMPLE"
PRIVATE = "launch-code-0451"


def secrets_on_disk(tmp_path):
    files = [p for folder in (tmp_path / "store", tmp_path / "state") for p in folder.rglob("*") if p.is_file()]
    words = (PASSWORD, GITHUB, API_KEY, PRIVATE)
    return files, [(str(p), word) for p in files for word in words if word.encode() in p.read_bytes()]


def test_secrets_in_prompt_reply_command_and_directives_reach_no_file(app, tmp_path, monkeypatch, capsys, repo):
    path = tmp_path / "home" / ".claude" / "projects" / "w" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True)
    reply = (
        f"Deployed with {GITHUB}. <private>{PRIVATE}</private>\n"
        f'<ctx:recall query="{GITHUB}"/>\n<ctx:link from="{GITHUB}" to="yyyy" type="DEPENDS_ON"/>\n'
        f'<ctx:task name="t-{GITHUB}" action="start"/>'
    )
    command = f"curl -u x:{PASSWORD} h <private>{PRIVATE}</private>"
    pending_call = {"type": "tool_use", "id": "c2", "name": "Bash", "input": {"command": command}}
    lines = [
        entry("user", f"Deploy staging; my password is {PASSWORD} <private>{PRIVATE}</private>"),
        *bash("c1", f"AWS_ACCESS_KEY_ID={API_KEY} deploy --token {GITHUB}", f"denied for {GITHUB}", True),
        entry("assistant", [pending_call]),
    ]
    path.write_text("\n".join(lines) + "\n")  # the hook fires before c2's result and the final line
    run_hook(monkeypatch, capsys, "stop", stop_payload(path, repo, last_assistant_message=reply))
    files, found = secrets_on_disk(tmp_path)
    assert found == []
    names = {p.name for p in files}
    assert "hooks.log" in names and "current-task.txt" in names  # the directives ran, their traces redacted
    pending = [json.loads(p.read_bytes()) for p in files if p.name.startswith("pending-")]
    assert pending and "## Recall results for" in pending[0]["items"][0]
    states = [json.loads(p.read_bytes()) for p in files if p.parent.name == "capture"]
    assert "c2" in states[0]["pending"]["calls"]  # the waiting call is kept, redacted
    with open(path, "a") as handle:
        handle.write(entry("user", [{"type": "tool_result", "tool_use_id": "c2", "content": f"ok {GITHUB}"}]) + "\n")
        handle.write(entry("assistant", [{"type": "text", "text": reply}]) + "\n")
    run_hook(monkeypatch, capsys, "session-end", {**stop_payload(path, repo), "hook_event_name": "SessionEnd"})
    run_hook(monkeypatch, capsys, "prompt-submit", {"session_id": SESSION, "prompt": "go on", "cwd": str(repo)})
    assert any("curl -u" in command for command, _ in commands_of(stored(app)))
    path.unlink()  # the client's own file holds them verbatim; ours must not
    assert secrets_on_disk(tmp_path)[1] == []


def test_a_hook_log_line_is_redacted(tmp_path):
    from contextflow.adapters.hooks import log_reason

    log_reason(f"stop did nothing: ValueError: bad {GITHUB}\nsecond line")
    text = next(tmp_path.rglob("hooks.log")).read_text()
    assert GITHUB not in text and "[REDACTED" in text and text.count("\n") == 1


def test_doctor_shows_capture_health_per_client(app, tmp_path, monkeypatch, capsys, repo):
    path = tmp_path / "home" / ".claude" / "projects" / "w" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join([entry("user", "Run ls"), *bash("l", "ls", "a", False), "{broken"]) + "\n")
    run_hook(monkeypatch, capsys, "stop", stop_payload(path, repo, last_assistant_message="Listed."))
    main(["doctor"])
    out = capsys.readouterr().out
    assert "claude-code: 1 turns stored from 1 transcript(s), 0 lines skipped, 1 unreadable" in out
    assert "last error" in out


def test_a_fifo_planted_as_hooks_log_or_hook_state_blocks_no_hook(tmp_path, hook_env, repo):
    from contextflow.capture.turn_directives import _pending_path

    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    os.mkfifo(state / "hooks.log", 0o600)
    hook_process("stop", {"session_id": "s", "transcript_path": "/dev/zero", "cwd": str(repo)}, hook_env)
    hooks = next(state.rglob("hooks"))
    os.mkfifo(_pending_path(hooks, "s"), 0o600)
    os.mkfifo(hooks / "current-task.txt", 0o600)
    os.mkfifo(next(state.rglob("capture")) / "planted.json", 0o600)
    hook_process("prompt-submit", {"session_id": "s", "prompt": "go", "cwd": str(repo)}, hook_env)
    hook_process("stop", {"session_id": "s", "last_assistant_message": "<ctx:status/>", "cwd": str(repo)}, hook_env)
    hook_process("session-start", {"session_id": "s", "cwd": str(repo)}, hook_env)
    assert capture_health(hooks.parent)[0]["last_error"].startswith("transcript not read")


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("my password is Tr0ub4dor&3xyz, use it", "my password is [REDACTED:credential], use it"),
        ("The secret is 'blue moon 42'", "The secret is '[REDACTED:credential]'"),
        ("the password is wrong", None),
        ("the token was rotated in 2024", None),
        ("password is required", None),
    ],
)
def test_a_secret_typed_in_prose_is_redacted_and_plain_words_are_not(text, kept):
    from contextflow.core.secrets import redact_text

    assert redact_text(text)[0] == (kept or text)


def test_a_stop_payload_with_neither_transcript_nor_reply_says_so(app, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b'{"session_id": "s", "hook_event_name": "Stop"}')))
    assert main(["hook", "stop"]) == 0
    out, err = capsys.readouterr()
    assert out == "" and "the payload names no transcript_path and no final reply" in err


def test_a_turn_with_many_long_file_paths_and_their_states_keeps_its_byte_bound(
    app, tmp_path, monkeypatch, capsys, repo
):
    path = tmp_path / "home" / ".claude" / "projects" / "w" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True)
    lines = [entry("user", "Write many files")]
    for n in range(30):
        name = str(repo / ("src/" + "n" * 150 + f"{n}.py"))
        write = {"type": "tool_use", "id": f"w{n}", "name": "Write", "input": {"file_path": name, "content": "x"}}
        lines += [entry("assistant", [write]), entry("user", [{"type": "tool_result", "tool_use_id": f"w{n}"}])]
    path.write_text("\n".join(lines) + "\n")
    run_hook(monkeypatch, capsys, "stop", stop_payload(path, repo, last_assistant_message="Wrote them. " * 300))
    (record,) = stored(app)
    assert len(json.dumps(record, ensure_ascii=False).encode()) <= turns.MAX_TURN_BYTES
    assert record["files"]["created"] and record.get("state", {}).get("files")


def test_a_directive_the_transcript_holds_only_after_the_stop_is_carried_out_at_session_end(
    app, tmp_path, monkeypatch, capsys, repo
):
    from contextflow.graph import writes

    path = tmp_path / "home" / ".claude" / "projects" / "w" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True)
    said = '<ctx:remember type="fact">kept after the stop</ctx:remember>'
    path.write_text(entry("user", "go") + "\n" + entry("assistant", [{"type": "text", "text": "Working."}]) + "\n")
    run_hook(monkeypatch, capsys, "stop", {**stop_payload(path, repo), "last_assistant_message": "Working."})
    assert writes.graph(app).live == set()
    with open(path, "a") as handle:  # a later message, then the session ends before any Stop reads it
        handle.write(entry("assistant", [{"type": "text", "text": said}]) + "\n")
    end = {**stop_payload(path, repo), "hook_event_name": "SessionEnd"}
    run_hook(monkeypatch, capsys, "session-end", end)
    run_hook(monkeypatch, capsys, "session-end", end)  # once only
    assert [writes.graph(app).nodes[i].content for i in writes.graph(app).live] == ["kept after the stop"]


def test_a_store_that_fails_keeps_the_turns_for_two_more_calls_then_capture_moves_on(tmp_path, repo):
    from contextflow.capture import core

    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([entry("user", "go"), *bash("b", "ls", "a", False)]) + "\n")
    hook = Hook("Stop", "s", str(path), str(repo), "done", None, "claude-code")
    attempts = []

    def broken_store():
        attempts.append(1)
        raise OSError("disk full")

    where = transcript.state_path(tmp_path / "state", str(path))
    for call in range(3):
        with pytest.raises(OSError):
            core.handle(hook, "claude-code", tmp_path / "state", broken_store, {})
        state = transcript.load_state(where)
        assert state["last_error"] == "storing the turns failed: OSError"
        if call < 2:
            assert state["retries"] == call + 1 and "cursor" not in state  # read again next call
    assert state["cursor"]["offset"] == path.stat().st_size and "retries" not in state  # moved on
    assert core.handle(hook, "claude-code", tmp_path / "state", broken_store, {}) == []  # nothing new
    assert attempts == [1, 1, 1]


def test_a_stop_with_nothing_new_in_the_transcript_imports_nothing_heavy(tmp_path, hook_env, repo):
    """Every turn runs the Stop hook: one with nothing new pays for no redaction, store or digest."""
    path = tmp_path / "t.jsonl"
    path.write_text(entry("user", "go") + "\n")
    payload = {**stop_payload(path, repo), "last_assistant_message": "done"}
    script = (
        "import io, sys\n"
        f"sys.stdin = io.TextIOWrapper(io.BytesIO({json.dumps(payload).encode()!r}))\n"
        "from contextflow.adapters.cli import main\n"
        "code = main(['hook', 'stop'])\n"
        "heavy = sorted(m for m in sys.modules if m.startswith(('detect_secrets', 'contextflow.core.secrets', "
        "'contextflow.core.store', 'contextflow.graph', 'contextflow.capture.digest', "
        "'contextflow.capture.filestate')))\n"
        "print('HEAVY', heavy, code, file=sys.stderr)\n"
    )
    hook_process("stop", payload, hook_env)  # the first call stores the turn
    done = subprocess.run([sys.executable, "-c", script], env=hook_env, capture_output=True, text=True, timeout=60)
    assert "HEAVY [] 0" in done.stderr, done.stderr


def test_a_codex_message_before_the_last_one_carries_its_directive(app, tmp_path, monkeypatch, capsys, repo):
    """One transcript reader for every client: Codex's earlier messages are read, not only its last."""
    from contextflow.graph import writes

    text = (FIXTURES / "codex-rollout.jsonl").read_text()
    said = 'Noted. <ctx:remember type="fact">rollouts carry directives</ctx:remember>'
    earlier = {
        "type": "event_msg",
        "payload": {
            "type": "item_completed",
            "item": {"type": "AgentMessage", "id": "msg_early", "content": [{"type": "Text", "text": said}]},
        },
    }
    lines = text.splitlines()
    at = next(n for n, line in enumerate(lines) if '"AgentMessage"' in line)
    lines.insert(at, json.dumps(earlier))
    path = tmp_path / "home" / ".codex" / "sessions" / "rollout-x.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n")
    payload = {**json.loads((FIXTURES / "codex-Stop.json").read_text()), "transcript_path": str(path), "cwd": str(repo)}
    run_hook(monkeypatch, capsys, "stop", payload)
    run_hook(monkeypatch, capsys, "stop", payload)
    assert [writes.graph(app).nodes[i].content for i in writes.graph(app).live] == ["rollouts carry directives"]
    assert writes.graph(app).nodes[next(iter(writes.graph(app).live))].agent == "codex"


@pytest.mark.parametrize(
    ("payload", "env", "client"),
    [
        ({"transcript_path": "/h/.claude/projects/x/s.jsonl"}, {"CONTEXTFLOW_CLIENT": "codex"}, "codex"),
        ({"hook_event_name": "AfterAgent", "prompt_response": "x"}, {}, "gemini-cli"),
        ({"transcript_path": "/h/.gemini/tmp/w/chats/session-1.jsonl"}, {}, "gemini-cli"),
        ({"transcript_path": "/h/.codex/sessions/2026/rollout-1.jsonl"}, {}, "codex"),
        ({"turn_id": "t"}, {}, "codex"),
        ({"transcript_path": "/h/.claude/projects/x/s.jsonl"}, {}, "claude-code"),
        ({"transcript_path": "/tmp/t.jsonl"}, {"CONTEXTFLOW_CLIENT": "bad name!"}, "unknown"),
    ],
)
def test_one_client_of_for_every_hook(payload, env, client):
    from contextflow.capture.payload import client_of

    assert client_of(payload, env) == client


def test_the_payload_reader_refuses_a_path_it_must_not_open():
    from contextflow.capture.payload import read

    assert read({"transcript_path": "/tmp/a\0b"}, {}).refused == "transcript_path holds a NUL byte"
    long = read({"transcript_path": "/" + "a" * 5_000, "session_id": " s ", "cwd": 7}, {})
    assert long.transcript is None and "at most 4,096" in long.refused and long.session_id == "s" and long.cwd is None
    assert read({"transcript_path": 7, "session_id": "x" * 300}, {})[1:3] == (None, None)


@pytest.mark.parametrize("event", ["stop", "session-start"])
def test_the_hooks_load_no_openssl(tmp_path, hook_env, repo, event):
    """Every hook call would pay about 2 ms loading OpenSSL through `hashlib`: a turn is captured, stored
    and its handoff read with the interpreter's own hash functions (`core/hashing.py`)."""
    path = tmp_path / "t.jsonl"
    turn = [entry("user", "fix the parser"), *bash("b", "pytest -q", "1 failed", True), entry("assistant", "fixed")]
    path.write_text("\n".join(turn) + "\n")
    payload = {**stop_payload(path, repo), "last_assistant_message": "fixed", "hook_event_name": "Stop"}
    hook_process("stop", payload, hook_env)  # (the first call reads the secret scanner's patterns once)
    if event == "stop":  # the next turn: captured, redacted and stored
        with path.open("a") as handle:
            handle.write("\n".join([entry("user", "run it again"), *bash("c", "pytest -q", "3 passed", False)]) + "\n")
    else:  # the next session starts: the stored turn and handoff read
        payload = {"session_id": "next", "cwd": str(repo), "hook_event_name": "SessionStart"}
    script = (
        "import io, sys\n"
        f"sys.stdin = io.TextIOWrapper(io.BytesIO({json.dumps(payload).encode()!r}))\n"
        "from contextflow.adapters.cli import main\n"
        f"code = main(['hook', {event!r}])\n"
        "print('LOADED', sorted({'_hashlib', 'hashlib', 'ssl'} & set(sys.modules)), code, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], env=hook_env, capture_output=True, text=True, timeout=60)
    assert "LOADED [] 0" in done.stderr, done.stderr
    stored = b"".join(log.read_bytes() for log in (tmp_path / "store").glob("*.jsonl"))
    assert b"run it again" in stored if event == "stop" else b"fix the parser" in stored  # (the check proved something)
