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
