"""Unknown session ids are errors that list the closest ids; session ids and project names with
control characters are refused wherever one is written (sessions, context records, conversations)."""

import json

import pytest
from mcp.shared.exceptions import MCPError

from contextflow.adapters.cli import main
from contextflow.conversations import core as conversations
from contextflow.core.errors import InputError, NotFoundError
from contextflow.records import core as records
from contextflow.sessions import core as sessions
from tests.conftest import text_of
from tests.folding import view_of


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def stored(app, *session_ids):
    for session_id in session_ids:
        sessions.append_note(app, agent="me", text=f"work on {session_id}", session_id=session_id)


def test_resuming_a_mistyped_id_is_an_error_listing_the_closest_ids(app):
    stored(app, "feature-login", "feature-logout", "bugfix-cart")
    with pytest.raises(NotFoundError) as caught:
        sessions.resume_session(app, session_id="feature-logn")
    message = str(caught.value)
    assert "no session 'feature-logn'" in message and "'feature-login'" in message
    assert "bugfix-cart" not in message and "new_session" in message
    assert sessions.active_session(app) is None  # the typo did not become the active session


def test_an_explicitly_started_session_resumes_empty(app):
    stored(app, "old")
    assert sessions.new_session(app, "brand-new") == "brand-new"
    resume = sessions.resume_session(app, session_id="brand-new")
    assert resume.session_id == "brand-new" and resume.entries == []


def test_the_cli_resume_of_an_unknown_id_exits_3_and_names_the_closest(capsys, app, monkeypatch):
    monkeypatch.setenv("MCP_SHARED_CONTEXT_PROJECT", "shared")  # `app` writes with no folder: `shared`
    stored(app, "feature-login")
    code, out, err = run(capsys, "resume", "feature-logn")
    assert code == 3 and out == "" and "closest: 'feature-login'" in err


@pytest.mark.anyio
async def test_resume_session_tool_and_resume_by_id_prompt_refuse_unknown_ids(client, app):
    stored(app, "feature-login")
    result = await client.call_tool("resume_session", {"session_id": "featur-login"})
    assert result.is_error and "closest: 'feature-login'" in text_of(result)
    with pytest.raises(MCPError, match="closest: 'feature-login'"):
        await client.get_prompt("resume_by_id", {"session_id": "featur-login"})
    assert sessions.active_session(app) is None
    ok = await client.call_tool("resume_session", {"session_id": "feature-login"})
    assert not ok.is_error


@pytest.mark.parametrize("bad", ["two\nlines", "tab\there", "esc\x1b[31m", "bell\x07", "bidi\u202eevil", "nul\x00"])
def test_session_ids_and_project_names_with_control_characters_are_refused(app, bad):
    with pytest.raises(InputError, match="control character"):
        sessions.append_note(app, agent="me", text="x", session_id=bad)
    with pytest.raises(InputError, match="control character"):
        sessions.write_handoff(app, agent="me", summary="x", session_id="ok", project=bad)
    with pytest.raises(InputError, match="control character"):
        sessions.new_session(app, bad)
    assert view_of(app.store, "sessions").summaries == {}


def test_a_session_id_with_a_line_break_is_never_made_active(app):
    with pytest.raises(InputError, match="line break"):
        sessions.set_active_session(app, "a\nb")
    assert sessions.active_session(app) is None


def test_the_cli_refuses_a_control_character_in_a_session_id(capsys):
    code, _, err = run(capsys, "note", "hello", "--session", "a\nb")
    assert code == 2 and "control character (U+000A at position 2)" in err


def test_use_refuses_a_new_id_with_control_characters_but_a_stored_one_can_be_resumed(capsys, app):
    code, _, err = run(capsys, "use", "evil\x1b[31m")
    assert code == 2 and "control character (U+001B at position 5)" in err
    legacy = "old\x07id"  # written by an older version that accepted it
    app.store.append("note", {"project": app.settings.default_project, "agent": "a", "text": "t", "session_id": legacy})
    sessions.set_active_session(app, legacy)
    assert sessions.active_session(app) == legacy


CONVERSATION = {
    "topic": "Parser rewrite",
    "conversation_type": "single_topic",
    "summary": "Rewrote the parser.",
    "categories": ["parser"],
    "decisions": [{"decision": "Keep quoted lines", "reasoning": "They are data"}],
}


@pytest.mark.parametrize("bad", ["two\nlines", "esc\x1b[31m", "bidi\u202eevil"])
def test_records_and_conversations_refuse_control_characters_in_names(app, bad):
    with pytest.raises(InputError, match="project contains a control character"):
        records.set_record(app, key="fact:nas", value={"v": 1}, project=bad)
    with pytest.raises(InputError, match="project contains a control character"):
        conversations.save_conversation(app, {**CONVERSATION, "project": bad})
    with pytest.raises(InputError, match="session_id contains a control character"):
        conversations.save_conversation(app, {**CONVERSATION, "session_id": bad})
    assert view_of(app.store, "records").records == {} and view_of(app.store, "conversations").records == {}


@pytest.mark.anyio
async def test_the_tools_refuse_control_characters_in_names_and_store_nothing(client, app):
    result = await client.call_tool("context_set", {"key": "fact:nas", "value": {"v": 1}, "project": "a\nb"})
    assert result.is_error and "project contains a control character (U+000A at position 2)" in text_of(result)
    result = await client.call_tool("save_conversation", {**CONVERSATION, "session_id": "s\x07"})
    assert result.is_error and "session_id contains a control character (U+0007 at position 2)" in text_of(result)
    assert view_of(app.store, "records").records == {} and view_of(app.store, "conversations").records == {}


def test_the_cli_refuses_control_characters_in_record_and_conversation_names(capsys, tmp_path):
    code, out, err = run(capsys, "context", "set", "fact:x", "{}", "--project", "a\nb")
    assert code == 2 and out == "" and "project contains a control character (U+000A at position 2)" in err
    path = tmp_path / "conversation.json"
    path.write_text(json.dumps({**CONVERSATION, "project": "p\x1b[2J"}))
    code, out, err = run(capsys, "conversations", "save", str(path))
    assert code == 2 and out == "" and "project contains a control character (U+001B at position 2)" in err
