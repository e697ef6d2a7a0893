"""Claude Code hooks fed the JSON the client really sends; they never break the client."""

import io
import json
import os
from pathlib import Path

import pytest

from contextflow.adapters.cli import main
from contextflow.adapters.session_start import SESSION_NOTICE
from contextflow.core.text import estimate_tokens
from contextflow.graph import writes
from contextflow.sessions import core as sessions

SESSION = "9f2c1a7e-5b3d-4e0a-8c6f-1d2e3f4a5b6c"


def payload(event, tmp_path, **extra):
    base = {
        "session_id": SESSION,
        "transcript_path": str(tmp_path / "home/.claude/projects/-work-app" / f"{SESSION}.jsonl"),
        "cwd": "/work/app",
        "permission_mode": "default",
        "hook_event_name": event,
    }
    return json.dumps({**base, **extra})


def hook(capsys, monkeypatch, name, stdin):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin.encode() if isinstance(stdin, str) else stdin)))
    code = main(["hook", name])
    out, err = capsys.readouterr()
    return code, out, err


def line(kind, content, uuid, parent=None, **extra):
    entry = {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/work/app",
        "sessionId": SESSION,
        "version": "2.0.14",
        "gitBranch": "main",
        "type": kind,
        "uuid": uuid,
        "timestamp": "2026-01-15T10:30:00.000Z",
    }
    if kind == "assistant":
        entry["message"] = {
            "id": f"msg_{uuid}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": content,
            "stop_reason": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        entry["requestId"] = f"req_{uuid}"
    else:
        entry["message"] = {"role": "user", "content": content}
    return json.dumps({**entry, **extra})


def write_transcript(tmp_path, *lines):
    path = Path(json.loads(payload("Stop", tmp_path))["transcript_path"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


TOOL_USE = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "x"}}
REPLY = """Noted. I'll keep that.
<ctx:remember type="decision" tags="project:shop,tier:reference">
Payments go through Stripe Checkout &amp; we store no card data.
</ctx:remember>
<ctx:recall query="type:fact"/>
Here is the syntax for later: `<ctx:remember type="fact">inline example</ctx:remember>`
```xml
<ctx:remember type="fact">fenced example</ctx:remember>
```
"""


def test_session_start_injects_the_default_view_the_active_handoff_and_open_threads(app, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("MCP_SHARED_CONTEXT_PROJECT", "shared")  # the `app` above writes with no folder: `shared`
    from contextflow.timeline import core as timeline

    writes.add_node(app, type="fact", content="User prefers Go", tags=["tier:reference"])
    writes.add_node(app, type="fact", content="archived detail", tags=["tier:off-context"])
    sessions.set_active_session(app, "feature-x")
    sessions.write_handoff(app, agent="codex", summary="Half-way through the parser", session_id="feature-x")
    timeline.create_thread(app, name="parser rewrite", agent="codex")
    code, out, _ = hook(capsys, monkeypatch, "session-start", payload("SessionStart", tmp_path, source="startup"))
    assert code == 0
    output = json.loads(out)["hookSpecificOutput"]
    assert output["hookEventName"] == "SessionStart"
    context = output["additionalContext"]
    assert "User prefers Go" in context and "archived detail" not in context
    assert "## Latest handoff in project shared (written by the agent)" in context
    assert "> Half-way through the parser" in context
    assert "## Open threads" in context and "parser rewrite" in context


def test_session_start_stays_within_the_hook_budget(app, capsys, monkeypatch, tmp_path):
    for n in range(30):
        writes.add_node(app, type="fact", content=f"fact {n} " + "w" * 300, tags=["tier:reference"])
    sessions.set_active_session(app, "s")
    sessions.write_handoff(app, agent="me", summary="h" * 5000, session_id="s")
    monkeypatch.setenv("CONTEXTFLOW_HOOK_BUDGET", "1000")
    code, out, _ = hook(capsys, monkeypatch, "session-start", payload("SessionStart", tmp_path, source="resume"))
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert code == 0 and estimate_tokens(context) <= 1000 and "did not fit" in context


def test_session_start_uses_a_saved_default_view(app, capsys, monkeypatch, tmp_path):
    writes.add_node(app, type="pattern", content="only patterns here")
    writes.add_node(app, type="fact", content="a fact", tags=["tier:reference"])
    writes.create_view(app, "default", "type:pattern", 2000)
    _, out, _ = hook(capsys, monkeypatch, "session-start", payload("SessionStart", tmp_path, source="startup"))
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "only patterns here" in context and "a fact" not in context


def test_a_missing_store_injects_nothing_and_says_why(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("CONTEXTFLOW_STORE", str(tmp_path / "never-created"))
    code, out, err = hook(capsys, monkeypatch, "session-start", payload("SessionStart", tmp_path, source="startup"))
    assert code == 0 and out == "" and "no store at" in err
    assert not (tmp_path / "never-created").exists()
    log = (tmp_path / "state" / "hooks.log").read_text()
    assert "nothing to inject" in log


@pytest.mark.parametrize("stdin", [b"{not json", b"[1, 2]", b"\xff\xfe", b'"just a string"'])
@pytest.mark.parametrize("event", ["session-start", "prompt-submit", "stop"])
def test_malformed_stdin_exits_zero_prints_nothing_and_logs_the_reason(app, capsys, monkeypatch, stdin, event):
    writes.add_node(app, type="fact", content="x", tags=["tier:pinned"])
    code, out, err = hook(capsys, monkeypatch, event, stdin)
    assert code == 0 and out == "" and "did nothing" in err


def test_an_unknown_hook_event_exits_zero(capsys, monkeypatch):
    code, out, err = hook(capsys, monkeypatch, "pre-tool-use", "{}")
    assert code == 0 and out == "" and "unknown hook event" in err


def test_stop_carries_out_directives_of_the_last_reply_only(app, capsys, monkeypatch, tmp_path):
    writes.add_node(app, type="fact", content="Prices are in cents", tags=["tier:reference"])
    write_transcript(
        tmp_path,
        line("user", "earlier question", "u0"),
        line("assistant", [{"type": "text", "text": '<ctx:remember type="fact">old turn</ctx:remember>'}], "a0", "u0"),
        line("user", "Let's decide how payments work", "u1", "a0"),
        line("assistant", [{"type": "text", "text": "Checking the code."}, TOOL_USE], "a1", "u1"),
        line("user", [{"tool_use_id": "toolu_1", "type": "tool_result", "content": "file text"}], "u2", "a1"),
        line("assistant", [{"type": "text", "text": REPLY}], "a2", "u2"),
    )
    code, out, _ = hook(capsys, monkeypatch, "stop", payload("Stop", tmp_path, stop_hook_active=False))
    assert code == 0 and json.loads(out) == {}
    contents = [writes.graph(app).nodes[i].content for i in writes.graph(app).live]
    assert "Payments go through Stripe Checkout & we store no card data." in contents
    assert not {"old turn", "inline example", "fenced example"} & set(contents)
    remembered = next(i for i in writes.graph(app).live if writes.graph(app).nodes[i].type == "decision")
    assert writes.graph(app).tags_of(remembered) == {"project:shop", "tier:reference"}
    assert writes.graph(app).nodes[remembered].agent == "claude-code"

    # the same reply again (the client re-ran the hook) does nothing twice
    hook(capsys, monkeypatch, "stop", payload("Stop", tmp_path, stop_hook_active=True))
    assert len(writes.graph(app).live) == 2

    code, out, _ = hook(capsys, monkeypatch, "prompt-submit", payload("UserPromptSubmit", tmp_path, prompt="go on"))
    output = json.loads(out)["hookSpecificOutput"]
    assert output["hookEventName"] == "UserPromptSubmit"
    assert "## Recall results for `type:fact`" in output["additionalContext"]
    assert "Prices are in cents" in output["additionalContext"]
    assert "remembered [decision:" in output["additionalContext"]
    assert hook(capsys, monkeypatch, "prompt-submit", payload("UserPromptSubmit", tmp_path, prompt="x"))[1] == ""


def test_stop_prefers_last_assistant_message_when_the_client_sends_it(app, capsys, monkeypatch, tmp_path):
    text = '<ctx:status/><ctx:link from="zzzz" to="yyyy" type="DEPENDS_ON"/><ctx:bogus/>'
    code, _, err = hook(capsys, monkeypatch, "stop", payload("Stop", tmp_path, last_assistant_message=text))
    assert code == 0 and "<ctx:link> failed" in err
    _, out, _ = hook(capsys, monkeypatch, "prompt-submit", payload("UserPromptSubmit", tmp_path, prompt="x"))
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "## ctx status" in context and "Nodes: 0" in context
    assert (
        "<ctx:link> failed: the edge's source: no node id starts with 'zzzz'" in context
        and "unknown directive <ctx:bogus>" in context
    )


def test_summarize_supersede_and_expand_directives(app, capsys, monkeypatch, tmp_path):
    a = writes.add_node(app, type="observation", content="detail one", tags=["tier:working"])
    b = writes.add_node(app, type="observation", content="detail two", tags=["tier:working"])
    text = f'<ctx:summarize nodes="{a.id[:8]},{b.id}" archive="true">both details</ctx:summarize>'
    hook(capsys, monkeypatch, "stop", payload("Stop", tmp_path, last_assistant_message=text))
    state = writes.graph(app)
    summary = next(i for i in state.live if state.nodes[i].type == "summary")
    assert state.tags_of(a.id) == {"tier:off-context"}
    newer = writes.add_node(app, type="summary", content="both details, revised")
    text = f'<ctx:supersede old="{summary}" new="{newer.id}"/><ctx:expand node="{summary}"/>'
    hook(capsys, monkeypatch, "stop", payload("Stop", tmp_path, last_assistant_message=text))
    assert writes.graph(app).superseded_by(summary) == newer.id
    _, out, _ = hook(capsys, monkeypatch, "prompt-submit", payload("UserPromptSubmit", tmp_path, prompt="x"))
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert f"## Sources of [summary:{summary}]" in context and "detail one" in context and "detail two" in context


def test_task_boundaries_tag_working_memory_then_archive_it_and_promote_decisions(app, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("MCP_SHARED_CONTEXT_PROJECT", "shared")  # the `app` above writes with no folder: `shared`

    def say(text):
        hook(capsys, monkeypatch, "stop", payload("Stop", tmp_path, last_assistant_message=text))

    say('<ctx:task name="oauth" action="start"/><ctx:remember type="observation">token endpoint found</ctx:remember>')
    say('<ctx:remember type="decision">refresh tokens stay server-side</ctx:remember>')
    state = writes.graph(app)
    by_content = {state.nodes[i].content: i for i in state.live}
    note, decision = by_content["token endpoint found"], by_content["refresh tokens stay server-side"]
    assert state.tags_of(note) == {"task:oauth", "tier:working"}
    say('<ctx:task name="oauth" action="end" summarize="true"/>')
    state = writes.graph(app)
    assert state.tags_of(note) == {"task:oauth", "tier:off-context"}
    assert state.tags_of(decision) == {"task:oauth", "tier:reference"}
    _, out, _ = hook(capsys, monkeypatch, "prompt-submit", payload("UserPromptSubmit", tmp_path, prompt="x"))
    assert f'<ctx:summarize nodes="{note}">' in json.loads(out)["hookSpecificOutput"]["additionalContext"]


def test_stop_with_a_missing_transcript_exits_zero_and_logs(capsys, monkeypatch, tmp_path):
    code, out, err = hook(capsys, monkeypatch, "stop", payload("Stop", tmp_path, stop_hook_active=False))
    assert code == 0 and out == "" and "FileNotFoundError" in err


def test_stop_without_directives_and_capture_off_writes_nothing_even_to_a_missing_store(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("CONTEXTFLOW_STORE", str(tmp_path / "absent"))
    monkeypatch.setenv("CONTEXTFLOW_CAPTURE", "off")
    write_transcript(tmp_path, line("user", "hi", "u1"), line("assistant", [{"type": "text", "text": "hello"}], "a1"))
    code, out, _ = hook(capsys, monkeypatch, "stop", payload("Stop", tmp_path))
    assert code == 0 and out == "{}\n" and not (tmp_path / "absent").exists()


def test_prompt_submit_with_nothing_pending_injects_nothing(app, capsys, monkeypatch, tmp_path):
    code, out, _ = hook(capsys, monkeypatch, "prompt-submit", payload("UserPromptSubmit", tmp_path, prompt="hi"))
    assert code == 0 and out == ""


def test_prompt_submit_and_a_reply_without_directives_never_read_the_store(app, capsys, monkeypatch, tmp_path):
    hook(capsys, monkeypatch, "stop", payload("Stop", tmp_path, last_assistant_message="<ctx:status/>"))

    def refuse(*args, **kwargs):
        raise AssertionError("the store was opened")

    monkeypatch.setattr("contextflow.app.App.open", refuse)
    _, out, _ = hook(capsys, monkeypatch, "prompt-submit", payload("UserPromptSubmit", tmp_path, prompt="x"))
    assert "## ctx status" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    code, out, err = hook(capsys, monkeypatch, "stop", payload("Stop", tmp_path, last_assistant_message="plain reply"))
    assert code == 0 and out == "{}\n" and err == ""


def test_stop_carries_out_a_remember_written_before_a_tool_call_in_the_same_turn(app, capsys, monkeypatch, tmp_path):
    early = [
        {"type": "text", "text": '<ctx:remember type="fact">written before the tool call</ctx:remember>'},
        TOOL_USE,
    ]
    write_transcript(
        tmp_path,
        line("user", "Look into the parser", "u1"),
        line("assistant", early, "a1", "u1"),
        line("user", [{"tool_use_id": "toolu_1", "type": "tool_result", "content": "file text"}], "u2", "a1"),
        line("assistant", [{"type": "text", "text": "Done looking."}], "a2", "u2"),
    )
    code, _, _ = hook(capsys, monkeypatch, "stop", payload("Stop", tmp_path, last_assistant_message="Done looking."))
    assert code == 0
    contents = [writes.graph(app).nodes[i].content for i in writes.graph(app).live]
    assert contents == ["written before the tool call"]


def test_stop_processes_each_message_once_across_calls_and_reads_new_ones(app, capsys, monkeypatch, tmp_path):
    first = line("assistant", [{"type": "text", "text": '<ctx:remember type="fact">one</ctx:remember>'}], "a1", "u1")
    write_transcript(tmp_path, line("user", "go", "u1"), first)
    hook(capsys, monkeypatch, "stop", payload("Stop", tmp_path))
    writes.delete_node(app, next(iter(writes.graph(app).live)))  # a re-run would bring it back
    second = line("assistant", [{"type": "text", "text": '<ctx:remember type="fact">two</ctx:remember>'}], "a2", "a1")
    write_transcript(tmp_path, line("user", "go", "u1"), first, second)
    hook(capsys, monkeypatch, "stop", payload("Stop", tmp_path, stop_hook_active=True))
    hook(capsys, monkeypatch, "stop", payload("Stop", tmp_path, stop_hook_active=True))
    assert [writes.graph(app).nodes[i].content for i in writes.graph(app).live] == ["two"]


def test_a_final_message_the_transcript_lacks_is_carried_out_once(app, capsys, monkeypatch, tmp_path):
    text = '<ctx:remember type="fact">only in the payload</ctx:remember>'
    write_transcript(tmp_path, line("user", "go", "u1"))
    hook(capsys, monkeypatch, "stop", payload("Stop", tmp_path, last_assistant_message=text))
    node_id = next(iter(writes.graph(app).live))
    writes.delete_node(app, node_id)
    # the transcript catches up: the same message, now with its uuid, is not carried out again
    reply = line("assistant", [{"type": "text", "text": text}], "a1", "u1")
    write_transcript(tmp_path, line("user", "go", "u1"), reply)
    hook(capsys, monkeypatch, "stop", payload("Stop", tmp_path, last_assistant_message=text))
    assert writes.graph(app).live == set()


def test_stop_state_files_are_private_to_the_user(app, capsys, monkeypatch, tmp_path):
    hook(capsys, monkeypatch, "stop", payload("Stop", tmp_path, last_assistant_message="<ctx:status/>"))
    files = list((tmp_path / "state").rglob("pending-*.json"))
    assert files and all(f.stat().st_mode & 0o777 == 0o600 for f in files)


def test_gemini_after_agent_payload_is_carried_out_from_prompt_response(app, capsys, monkeypatch, tmp_path):
    gemini = {
        "session_id": "g1",
        "transcript_path": "",
        "cwd": "/work/app",
        "hook_event_name": "AfterAgent",
        "prompt": "go",
        "prompt_response": '<ctx:remember type="fact">from gemini</ctx:remember>',
        "stop_hook_active": False,
    }
    code, out, _ = hook(capsys, monkeypatch, "stop", json.dumps(gemini))
    assert code == 0 and out == "{}\n"
    assert [writes.graph(app).nodes[i].content for i in writes.graph(app).live] == ["from gemini"]


def test_the_same_remember_in_two_turns_is_one_node_in_the_composed_context(app, capsys, monkeypatch, tmp_path):
    text = '<ctx:remember type="fact" tags="tier:reference">Staging is eu-west-1</ctx:remember>'
    hook(capsys, monkeypatch, "stop", payload("Stop", tmp_path, last_assistant_message=text))
    hook(capsys, monkeypatch, "stop", payload("Stop", tmp_path, last_assistant_message="ok\n" + text))
    assert len(writes.graph(app).live) == 1
    _, out, _ = hook(capsys, monkeypatch, "session-start", payload("SessionStart", tmp_path, source="startup"))
    assert json.loads(out)["hookSpecificOutput"]["additionalContext"].count("Staging is eu-west-1") == 1


def test_a_final_message_split_over_transcript_entries_runs_once(app, capsys, monkeypatch, tmp_path):
    first, second = "Checked.", "<ctx:status/>"
    write_transcript(
        tmp_path,
        line("user", "go", "u1"),
        line("assistant", [{"type": "text", "text": first}], "a1", "u1"),
        line("assistant", [{"type": "text", "text": second}], "a2", "a1"),
    )
    hook(capsys, monkeypatch, "stop", payload("Stop", tmp_path, last_assistant_message=f"{first}\n\n{second}"))
    _, out, _ = hook(capsys, monkeypatch, "prompt-submit", payload("UserPromptSubmit", tmp_path, prompt="x"))
    assert json.loads(out)["hookSpecificOutput"]["additionalContext"].count("## ctx status") == 1


def test_a_lagging_transcript_does_not_rerun_what_the_final_message_already_did(app, capsys, monkeypatch, tmp_path):
    remember = '<ctx:remember type="fact">said once</ctx:remember>'
    write_transcript(tmp_path, line("user", "go", "u1"))
    hook(capsys, monkeypatch, "stop", payload("Stop", tmp_path, last_assistant_message=f"Noted.\n{remember}"))
    writes.delete_node(app, next(iter(writes.graph(app).live)))
    write_transcript(  # the same reply, now in the transcript as two entries
        tmp_path,
        line("user", "go", "u1"),
        line("assistant", [{"type": "text", "text": "Noted."}], "a1", "u1"),
        line("assistant", [{"type": "text", "text": remember}], "a2", "a1"),
    )
    hook(capsys, monkeypatch, "stop", payload("Stop", tmp_path, last_assistant_message=f"Noted.\n{remember}"))
    assert writes.graph(app).live == set()
    # a later turn saying the same thing again is carried out
    write_transcript(
        tmp_path, line("user", "again", "u3"), line("assistant", [{"type": "text", "text": remember}], "a3", "u3")
    )
    hook(capsys, monkeypatch, "stop", payload("Stop", tmp_path, last_assistant_message=remember))
    assert [writes.graph(app).nodes[i].content for i in writes.graph(app).live] == ["said once"]


@pytest.mark.parametrize(
    ("event", "body"),
    [("prompt-submit", {"prompt": "fix the parser"}), ("stop", {"last_assistant_message": "plain reply"})],
)
def test_a_hook_with_nothing_to_do_imports_neither_the_store_nor_heavy_libraries(tmp_path, event, body):
    """Every prompt a user types runs a hook: it pays only for what its event needs."""
    import subprocess
    import sys

    script = (
        "import io, sys\n"
        f"sys.stdin = io.TextIOWrapper(io.BytesIO({json.dumps(body).encode()!r}))\n"
        "from contextflow.adapters.cli import main\n"
        f"code = main(['hook', {event!r}])\n"
        "heavy = sorted(m for m in sys.modules if m.startswith(('contextflow.graph', 'contextflow.search', "
        "'contextflow.core.store', 'mcp', 'orjson', 'platformdirs', 'dataclasses')))\n"
        "print('HEAVY', heavy, code, file=sys.stderr)\n"
    )
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("COVERAGE")},  # coverage's own imports
        "CONTEXTFLOW_STORE": str(tmp_path / "store"),
        "CONTEXTFLOW_STATE": str(tmp_path / "state"),
        "HOME": str(tmp_path),
    }
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert "HEAVY [] 0" in done.stderr, done.stderr


def test_a_session_start_reads_the_tables_without_the_operations_table_or_writers_modules(tmp_path):
    """Every agent start runs this hook: it shows the handoff from the derived tables and imports
    neither the operations table's classes, nor the presenters of tools, nor what only writes need, nor
    orjson (its import, 7 ms, costs more than the few rows it parses save: core/jsonio.py)."""
    import subprocess
    import sys

    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("COVERAGE")},
        "CONTEXTFLOW_STORE": str(tmp_path / "store"),
        "CONTEXTFLOW_STATE": str(tmp_path / "state"),
        "HOME": str(tmp_path),
        "MCP_SHARED_CONTEXT_PROJECT": "shop",
    }
    wrote = [sys.executable, "-m", "contextflow", "handoff", "parser half done", "--session", "s1", "--next", "tests"]
    assert subprocess.run(wrote, env=env, capture_output=True, timeout=60).returncode == 0
    script = (
        "import io, sys\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(b'{}'))\n"
        "from contextflow.adapters.cli import main\n"
        "code = main(['hook', 'session-start'])\n"
        "heavy = sorted(m for m in sys.modules if m.startswith(('contextflow.operations.spec', "
        "'contextflow.sessions.present', 'contextflow.core.staged', 'contextflow.graph.view', "
        "'contextflow.timeline.view', 'contextflow.search.disk', 'tantivy', 'secrets', 'mcp', 'platformdirs', "
        "'contextflow.records.view', 'contextflow.conversations.view', 'contextflow.graph.model', "
        "'orjson', 'dataclasses', 'inspect', 'uuid')))\n"
        "print('HEAVY', heavy, code, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert "parser half done" in done.stdout, done.stderr  # (it did read the handoff)
    assert "HEAVY [] 0" in done.stderr, done.stderr


def test_the_hook_budget_limit_is_the_graphs():
    from contextflow.adapters import hooks
    from contextflow.graph import model

    assert hooks.MAX_BUDGET == model.MAX_BUDGET


def test_a_long_used_store_fits_the_clients_hook_limit_and_keeps_the_handoff_first(app, capsys, monkeypatch, tmp_path):
    """Claude Code and Codex show at most 10,000 characters of a hook's output: the default fits whole,
    and the latest handoff comes first (written without a session id: in the session it started)."""
    monkeypatch.setenv("MCP_SHARED_CONTEXT_PROJECT", "shared")  # the `app` above writes with no folder: `shared`
    from contextflow.adapters.session_start import CLIENT_LIMIT_CHARS

    app.store.append_many(
        [
            ("note", {"agent": "codex", "text": f"progress {n} " + "x" * 200, "session_id": f"s{n % 40}"})
            for n in range(1_700)
        ]
    )
    for n in range(300):
        tier = ("tier:pinned", "tier:reference", "tier:working")[n % 3]
        writes.add_node(app, type="fact", content=f"fact {n} " + "k" * 240, tags=[tier])
    sessions.write_handoff(app, agent="claude", summary="Parser done; next: wire the CLI", next_steps=["wire CLI"])
    assert app.store.event_count >= 2_000
    code, out, _ = hook(capsys, monkeypatch, "session-start", payload("SessionStart", tmp_path, source="startup"))
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert code == 0 and len(context) < CLIENT_LIMIT_CHARS and len(context.encode()) < CLIENT_LIMIT_CHARS
    notice, _, told = context.partition("\n\n")
    assert notice == SESSION_NOTICE and "\n" not in notice  # one line: what follows is remembered data
    assert told.startswith("## Latest handoff") and "> Parser done; next: wire the CLI" in context
    assert "## Recent sessions" in context and "fact " in context
    assert context.index("## Recent sessions") < context.index("fact ")


@pytest.mark.parametrize("event", ["session-start", "stop"])
def test_a_hook_call_locates_the_store_once(app, capsys, monkeypatch, tmp_path, event):
    """Finding the store can read every client's config file: a hook call does it once, and the App it
    opens uses that location."""
    from contextflow.core import locate

    sessions.write_handoff(app, agent="codex", summary="Half-way through the parser", session_id="s")
    transcript = tmp_path / "home/.claude/projects/-work-app" / f"{SESSION}.jsonl"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    transcript.write_text(line("user", "fix the parser", "u1") + "\n" + line("assistant", "done", "a1", "u1") + "\n")
    calls = []
    real = locate.locate_store

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(locate, "locate_store", counted)
    monkeypatch.setattr("contextflow.adapters.hooks.locate_store", counted)
    monkeypatch.setattr("contextflow.core.store.locate_store", counted)
    code, _, _ = hook(capsys, monkeypatch, event, payload("Stop" if event == "stop" else "SessionStart", tmp_path))
    assert code == 0 and len(calls) == 1


def test_the_graph_is_composed_from_its_tables_and_their_rest_while_they_cannot_serve(
    app, capsys, monkeypatch, tmp_path
):
    """The session start composes the graph from its tables on disk, folding nothing in memory; while they
    cannot serve (a build under way, their lock held) from the tables as built and the logs' remaining bytes,
    bounded (core/rest.py), still folding nothing whole."""
    from contextflow.core.store import Store
    from contextflow.core.tables import Tables

    def whole(*_args, **_kw):
        raise AssertionError("every log read")

    text = '<ctx:remember type="fact" tags="tier:pinned">Staging is eu-west-1</ctx:remember>'
    hook(capsys, monkeypatch, "stop", payload("Stop", tmp_path, last_assistant_message=text))
    start = payload("SessionStart", tmp_path, source="startup")
    monkeypatch.setattr(Store, "refresh", whole)
    context = json.loads(hook(capsys, monkeypatch, "session-start", start)[1])["hookSpecificOutput"][
        "additionalContext"
    ]
    assert "Staging is eu-west-1" in context  # composed from the tables
    later = '<ctx:remember type="fact" tags="tier:pinned">Prod is us-east-2</ctx:remember>'
    hook(capsys, monkeypatch, "stop", payload("Stop", tmp_path, last_assistant_message=later))
    monkeypatch.setattr(Tables, "update", lambda *_args, **_kw: -1)  # another process holds their lock
    monkeypatch.setattr(Tables, "serves", lambda *_args, **_kw: False)
    context = json.loads(hook(capsys, monkeypatch, "session-start", start)[1])["hookSpecificOutput"][
        "additionalContext"
    ]
    assert "Staging is eu-west-1" in context and "Prod is us-east-2" in context
