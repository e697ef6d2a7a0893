from contextflow.adapters.picker import NEW, choices
from contextflow.sessions.core import append_note, write_handoff


def test_the_picker_offers_a_new_session_first_then_recent_sessions_with_details(app, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    append_note(app, agent="codex", text="x", session_id="older")
    write_handoff(app, agent="claude", summary="ready for review", session_id="newer")
    items = choices(app, None)
    assert items[0].value[0] == NEW and "New session" in items[0].title
    assert [item.value[0] for item in items[1:]] == ["newer", "older"]
    assert "claude" in items[1].title and "ready for review" in items[1].title
    assert "no handoff yet" in items[2].title


def test_new_session_never_offers_the_name_of_a_listed_session(app, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("contextflow.sessions.core.suggest_session_id", lambda app: "feature/login")
    append_note(app, agent="codex", text="x", session_id="feature/login")
    append_note(app, agent="codex", text="y", session_id="feature/login-2")
    items = choices(app, None)
    assert items[0].value == (NEW, "feature/login-3") and "feature/login-3" in items[0].title
    assert {item.value[1] for item in items[1:]} == {"feature/login", "feature/login-2"}
