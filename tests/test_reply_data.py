"""A reply's JSON data is made only when someone asks for it: a model reads a read's text, so a listing
never builds the dicts it would drop. Asked for (format=json, the CLI's --json, the page), it is the same."""

from __future__ import annotations

import orjson
import pytest

from contextflow.adapters.server.app import ContextflowServer
from contextflow.core.rest import Progress
from contextflow.operations.spec import Reply, partial
from contextflow.records import core as records
from contextflow.sessions.view import SessionSummary
from contextflow.timeline import present as timeline_present

# each listing with the function that makes its data's items
LISTINGS = {
    "list_sessions": (SessionSummary, "as_dict", {}),
    "context_list": (records, "record_dict", {}),
    "timeline_where_am_i": (timeline_present, "whereabouts_dict", {}),
    "timeline_list_threads": (timeline_present, "whereabouts_dict", {}),
}


def test_data_given_as_a_function_is_made_once_when_asked_and_equals_it_given_whole():
    made = []

    def payload():
        made.append(1)
        return {"count": 1}

    lazy = Reply("one", payload)
    assert not made
    assert lazy == Reply("one", {"count": 1}) and lazy.data == {"count": 1}
    assert made == [1]  # (kept once made)
    assert lazy != Reply("one", {"count": 2})


def test_a_partial_reply_keeps_its_data_unmade_and_says_partial_in_it_when_asked():
    made = []
    reply = partial(Reply("x", lambda: made.append(1) or {"count": 0}), Progress(10, 100), "older entries")
    assert reply.text.startswith("PARTIAL") and not made
    assert reply.data["partial"] == Progress(10, 100)._asdict() and made == [1]


@pytest.fixture
def server(app_with_tools):
    app = app_with_tools("all")
    app.store.append("note", {"text": "one", "project": "shared", "session_id": "s1", "agent": "a"})
    app.store.append("context.set", {"key": "fact:one", "value": 1, "category": "fact", "project": "shared"})
    app.store.append("timeline.thread", {"name": "work", "status": "active", "project": "shared"})
    return ContextflowServer(app)


@pytest.mark.parametrize("tool", LISTINGS)
def test_a_text_reply_never_makes_its_data(server, monkeypatch, tool):
    owner, name, args = LISTINGS[tool]
    whole = server.call(tool, {**args, "format": "json"})
    assert not whole.is_error and whole.structured_content  # (the data, with items made)

    def refuse(*_args, **_kwargs):
        raise AssertionError(f"{tool} made its JSON data for a text reply")

    monkeypatch.setattr(owner, name, refuse)
    text = server.call(tool, dict(args))
    assert not text.is_error, text.content[0].text
    assert text.structured_content is None and text.content[0].text.strip()
    monkeypatch.undo()
    assert orjson.loads(server.call(tool, {**args, "format": "json"}).content[0].text) == whole.structured_content
