"""Project scopes hold under attack: a token that may write one project never changes another's
records or conversations, compaction keeps what scoping needs, and a refused save leaves
nothing behind in the synced folder.

Each grant's App is built as the HTTP bridge builds it (`grant_app`), over the test's store.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from contextflow.adapters.server.auth import Grant, parse_grants
from contextflow.adapters.server.http import grant_app
from contextflow.app import App
from contextflow.conversations import core as conversations
from contextflow.core.compact import compact
from contextflow.core.errors import InputError, NotFoundError
from contextflow.records import core as records

GRANTS = {
    "tokens": [
        {"name": "secret", "token": "secret-0123456789abcdef", "read": ["secret"], "write": ["secret"]},
        {"name": "web", "token": "web-0123456789abcdef-tok", "read": ["web"], "write": ["web"]},
        {"name": "shared", "token": "shared-0123456789abcdef", "read": ["shared"], "write": ["shared"]},
    ]
}


def _grant(name: str) -> Grant:
    return next(g for g in parse_grants(json.dumps(GRANTS), "test") if g.name == name)


@pytest.fixture
def scoped(app: App) -> Iterator[dict[str, App]]:
    opened = {name: grant_app(app, _grant(name)) for name in ("secret", "web", "shared")}
    yield opened
    for each in opened.values():
        each.close()


def _conversation(cid: str, summary: str, **extra: object) -> dict[str, object]:
    return {"conversation_id": cid, "topic": "deploy plan", "summary": summary, **extra}


# -- records and conversations are per project ---------------------------------------------


def test_a_web_token_writing_a_key_secret_also_uses_leaves_secrets_record_as_it_was(
    app: App, scoped: dict[str, App]
) -> None:
    records.set_record(scoped["secret"], key="pr:foo", value={"v": "secret's"})
    records.set_record(scoped["web"], key="pr:foo", value={"v": "web's"})
    assert records.get_record(scoped["secret"], key="pr:foo").data["value"] == {"v": "secret's"}
    # the unscoped view (a local stdio server) agrees with each scoped one, record by record
    assert records.get_record(app, key="pr:foo", project="secret").data["value"] == {"v": "secret's"}
    assert records.get_record(app, key="pr:foo", project="web").data["value"] == {"v": "web's"}
    listed = {(r.project, r.key): r.data["value"] for r in records.list_records(app, prefix="pr:")}
    assert listed == {("secret", "pr:foo"): {"v": "secret's"}, ("web", "pr:foo"): {"v": "web's"}}


def test_a_web_token_deleting_a_key_only_secret_holds_is_refused_and_changes_nothing(
    app: App, scoped: dict[str, App]
) -> None:
    records.set_record(scoped["secret"], key="pr:foo", value={"v": "secret's"})
    with pytest.raises(NotFoundError):
        records.delete_record(scoped["web"], key="pr:foo")
    assert records.get_record(app, key="pr:foo", project="secret").data["value"] == {"v": "secret's"}


def test_an_unscoped_reader_asked_for_a_key_two_projects_hold_names_both_projects(
    app: App, scoped: dict[str, App]
) -> None:
    records.set_record(scoped["secret"], key="pr:foo", value={"v": 1})
    records.set_record(scoped["web"], key="pr:foo", value={"v": 2})
    with pytest.raises(InputError, match=r"secret, web.*project="):
        records.get_record(app, key="pr:foo")


def test_records_written_before_projects_counted_stay_readable_as_project_shared(app: App) -> None:
    app.store.append("context.set", {"key": "fact:nas", "value": {"ip": "10.0.0.2"}, "category": "fact"})
    record = records.get_record(app, key="fact:nas")
    assert (record.project, record.data["value"]) == ("shared", {"ip": "10.0.0.2"})
    records.set_record(app, key="fact:nas", value={"ip": "10.0.0.3"})  # the same record, updated
    assert [r.data["value"] for r in records.list_records(app, prefix="fact:")] == [{"ip": "10.0.0.3"}]


def test_a_web_token_saving_a_conversation_id_secret_uses_leaves_secrets_conversation(
    app: App, scoped: dict[str, App]
) -> None:
    conversations.save_conversation(scoped["secret"], _conversation("c-1", "the secret plan"))
    conversations.save_conversation(scoped["web"], _conversation("c-1", "the web plan"))
    assert conversations.find_conversation(scoped["secret"], "c-1").event.data["summary"] == "the secret plan"
    found = conversations.find_conversation(app, "c-1", project="secret")
    assert found.event.data["summary"] == "the secret plan"
    assert {(e.event.data["project"], e.event.data["summary"]) for e in conversations.list_conversations(app)} == {
        ("secret", "the secret plan"),
        ("web", "the web plan"),
    }


# -- compaction keeps the project ----------------------------------------------------------


def test_after_compact_a_shared_token_lists_no_conversation_or_record_of_project_secret(
    app: App, scoped: dict[str, App]
) -> None:
    for summary in ("first", "second"):
        conversations.save_conversation(scoped["secret"], _conversation("c-secret", summary))
    for value in (1, 2):
        records.set_record(scoped["secret"], key="pr:hidden", value={"v": value})
    records.set_record(app, key="fact:last", value={"v": 0})  # this writer's newest event always stays whole
    report = compact(app.store, app.unneeded())
    assert report.reduced  # the older save and set were reduced
    fresh = grant_app(app, _grant("shared"))
    try:
        assert [e.conversation_id for e in conversations.list_conversations(fresh)] == []
        assert [r.key for r in records.list_records(fresh, since_days=0)] == ["fact:last"]
    finally:
        fresh.close()
    # and the unscoped view still counts both versions under project secret
    entry = conversations.find_conversation(app, "c-secret")
    assert (entry.versions, entry.event.data["project"]) == (2, "secret")


# -- a refused save writes nothing -----------------------------------------------------------


def test_a_conversation_save_refused_by_scope_leaves_no_blob_in_the_synced_folder(
    store_dir: Path, scoped: dict[str, App]
) -> None:
    long_transcript = "user: what next?\nassistant: the rollout plan, step by step.\n" * 3_000
    with pytest.raises(InputError, match="may not write to project 'secret'"):
        conversations.save_conversation(
            scoped["web"], _conversation("c-2", "x", project="secret", full_transcript=long_transcript)
        )
    blobs = store_dir / "blobs"
    assert not blobs.exists() or not any(p.is_file() for p in blobs.rglob("*"))


# -- sessions: the grant's projects are a condition of every query --------------------------


def test_a_web_token_sees_no_session_handoff_or_project_of_secret_and_folds_nothing(
    app: App, scoped: dict[str, App]
) -> None:
    from contextflow.sessions import core as sessions
    from contextflow.sessions.marks import mark_handoff_wrong

    base = {"agent": "a", "session_id": "s-shared-name"}
    hidden = sessions.write_handoff(scoped["secret"], **base, summary="the secret plan", project="secret")
    sessions.append_note(scoped["secret"], **base, text="a secret note", project="secret")
    sessions.write_handoff(scoped["web"], **base, summary="the web plan", project="web")
    web = scoped["web"]
    assert [p.name for p in sessions.list_projects(web)] == ["web"]
    assert sessions.projects_holding(web, "s-shared-name") == ["web"]
    assert sessions.known_session_ids(web, "secret") == []
    assert sessions.read_entries(web, sessions.EntryFilter("secret")) == []
    assert sessions.latest_handoff(web, sessions.EntryFilter("secret")) is None
    assert sessions.all_sessions(web, sessions.SessionQuery("secret", agent="a")) == []
    assert sessions.wrong_marks(web) == {}
    with pytest.raises(NotFoundError, match="no handoff with id"):
        mark_handoff_wrong(web, handoff_id=hidden.id, agent="a")
    with pytest.raises(NotFoundError, match="no session"):
        sessions.resume_session(web, session_id="s-shared-name", project="secret")
    resumed = sessions.resume_session(web, session_id="s-shared-name")
    assert resumed.project == "web" and resumed.latest_handoff is not None
    assert resumed.latest_handoff.data["summary"] == "the web plan"
    # the same tables, unscoped: both projects (nothing was folded in memory for either reader)
    assert sorted(p.name for p in sessions.list_projects(app)) == ["secret", "web"]
    assert not any(each.store.scanned for each in (web, app))


# -- every other view: the same tables as an unscoped reader's, each query kept to the grant's projects


def test_a_web_token_reads_no_record_of_secret_and_folds_none(app: App, scoped: dict[str, App]) -> None:
    records.set_record(scoped["secret"], key="pr:hidden", value={"v": "secret's"}, category="fact")
    records.set_record(scoped["secret"], key="fact:shared-key", value={"v": "secret's"})
    records.set_record(scoped["web"], key="fact:shared-key", value={"v": "web's"})
    web = scoped["web"]
    for project in (None, "secret"):
        with pytest.raises(NotFoundError):
            records.get_record(web, key="pr:hidden", project=project)
    assert records.get_record(web, key="fact:shared-key").data["value"] == {
        "v": "web's"
    }  # one holder: no "pass project="
    assert records.list_records(web, project="secret", since_days=0) == []
    assert [(r.project, r.key) for r in records.list_records(web, since_days=0)] == [("web", "fact:shared-key")]
    with pytest.raises(NotFoundError):
        records.delete_record(web, key="pr:hidden", project="secret")
    # the unscoped reader sees both from the same tables; nobody folded the records in memory
    assert sorted(r.project for r in records.list_records(app, since_days=0)) == ["secret", "secret", "web"]
    assert not web.store.scanned and not app.store.scanned


def test_a_web_token_reads_no_conversation_of_secret_and_folds_none(app: App, scoped: dict[str, App]) -> None:
    conversations.save_conversation(scoped["secret"], _conversation("c-secret", "the secret plan"))
    conversations.save_conversation(scoped["web"], _conversation("c-web", "the web plan"))
    web = scoped["web"]
    assert [e.conversation_id for e in conversations.list_conversations(web)] == ["c-web"]
    assert conversations.list_conversations(web, project="secret") == []
    for project in (None, "secret"):
        with pytest.raises(NotFoundError):
            conversations.find_conversation(web, "c-secret", project=project)
    with pytest.raises(NotFoundError):
        conversations.find_conversation(web, "c-s")  # not even as a prefix
    assert len(conversations.list_conversations(app)) == 2
    assert not web.store.scanned and not app.store.scanned


def test_a_web_token_reads_no_captured_turn_of_secret_and_folds_none(app: App, scoped: dict[str, App]) -> None:
    from contextflow.capture import recall
    from contextflow.capture.stored import turns

    turn = {"files": {"edited": ["src/secret.py"]}, "final": "done", "decisions": [{"decision": "rotate the key"}]}
    for project in ("secret", "web"):
        data = {"project": project, "session_id": "s1", "turn_id": f"t-{project}", "turn": turn}
        scoped[project].store.append("capture.turn", data)
    web = scoped["web"]
    assert turns(web, "secret").session("s1") == [] and turns(web, "secret").latest_work() is None
    assert recall.recent_substance(web, "secret") == [] and recall.latest_handoff(web, "secret") is None
    assert [e.data["project"] for e in turns(web, "web").session("s1")] == ["web"]
    assert [e.data["project"] for e in turns(app, "secret").session("s1")] == ["secret"]
    assert not web.store.scanned and not app.store.scanned


def test_a_web_token_finds_no_graph_node_edge_tag_or_view_of_secret_and_folds_none(
    app: App, scoped: dict[str, App]
) -> None:
    from contextflow.graph import explore, writes
    from contextflow.graph.compose import compose

    hidden = writes.add_node(scoped["secret"], type="fact", content="the launch code is zebra", tags=["task:launch"])
    writes.create_view(scoped["secret"], "launch", "tag:task:launch")
    mine = writes.add_node(scoped["web"], type="fact", content="the web plan mentions zebra", tags=["task:plan"])
    writes.link(app, mine.id, hidden.id)  # an unscoped writer links web's node to secret's
    writes.create_view(app, "everything", "zebra")  # (project shared)
    web = scoped["web"]
    assert [n.id for n in explore.run_query(web, "zebra")[0]] == [mine.id]
    assert [n.id for n in explore.list_nodes(web)[0]] == [mine.id]
    node, out, incoming = explore.edges_of(web, mine.id)
    assert (node.id, out, incoming) == (mine.id, [], [])  # the edge to secret's node is not there
    assert explore.around(web, mine.id)[1] == []
    for prefix in (hidden.id, hidden.id[:6]):
        with pytest.raises(NotFoundError):
            explore.edges_of(web, prefix)
    with pytest.raises(NotFoundError):
        writes.link(web, mine.id, hidden.id)
    composed = compose(web, "zebra")
    assert "launch code" not in composed.text and composed.included == [mine.id]
    assert "task:launch" not in dict(explore.tag_counts(web))
    census = explore.status(web)
    assert (census["nodes"], census["edges"]) == (1, 0)
    for name in ("launch", "everything"):
        with pytest.raises(NotFoundError):
            writes.get_view(web, name)
    assert writes.get_view(scoped["secret"], "launch").query == "tag:task:launch"
    # the unscoped reader sees both nodes and the edge, from the same tables
    assert sorted(n.id for n in explore.run_query(app, "zebra")[0]) == sorted([mine.id, hidden.id])
    assert [e.target for e in explore.edges_of(app, mine.id)[1]] == [hidden.id]
    assert not web.store.scanned and not app.store.scanned


def test_a_web_token_sees_no_timeline_thread_of_secret_and_folds_none(app: App, scoped: dict[str, App]) -> None:
    from contextflow.timeline import core as timeline
    from contextflow.timeline.fields import THREAD_UPDATE

    hidden = timeline.create_thread(scoped["secret"], name="the secret launch")
    timeline.add_thought(scoped["secret"], thread_id=hidden.id, content="rotate the launch key")
    mine = timeline.create_thread(scoped["web"], name="the web plan")
    # an unscoped writer files an update of secret's thread under project web: still not web's thread
    app.store.append(THREAD_UPDATE, {"thread_id": hidden.id, "status": "paused", "project": "web"})
    web = scoped["web"]
    assert [t.id for t in timeline.list_threads(web)] == [mine.id]
    assert [w.thread.id for w in timeline.where_am_i(web)] == [mine.id]
    assert (timeline.thread_count(web, "active"), timeline.thread_count(web, "paused")) == (1, 0)
    for prefix in (hidden.id, hidden.id[:6]):
        with pytest.raises(NotFoundError):
            timeline.get_thread(web, thread_id=prefix)
    with pytest.raises(NotFoundError):
        timeline.add_thought(web, thread_id=hidden.id, content="x")
    assert timeline.get_thread(web, thread_id=mine.id).thoughts == []
    # secret's token sees its thread as its own events leave it; the unscoped reader, every event
    assert [t.status for t in timeline.list_threads(scoped["secret"])] == ["active"]
    assert sorted(t.status for t in timeline.list_threads(app)) == ["active", "paused"]
    assert not web.store.scanned and not app.store.scanned


def test_while_a_fresh_machine_builds_its_tables_a_web_token_reads_only_web_and_folds_none(
    app: App, scoped: dict[str, App], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from contextflow.capture.stored import turns
    from contextflow.graph import explore, writes
    from contextflow.graph.compose import compose
    from contextflow.sessions import core as sessions
    from contextflow.timeline import core as timeline
    from tests.test_own_writes_while_building import building_elsewhere

    for name in ("secret", "web"):
        records.set_record(scoped[name], key="fact:plan", value={"v": name})
        conversations.save_conversation(scoped[name], _conversation("c1", f"the {name} plan"))
        writes.add_node(scoped[name], type="fact", content=f"the {name} plan, zebra")
        timeline.create_thread(scoped[name], name=f"the {name} thread")
        sessions.write_handoff(scoped[name], agent="a", session_id="s1", summary=f"the {name} handoff")
        turn = {"project": name, "session_id": "s1", "turn_id": f"t-{name}", "turn": {"final": "done"}}
        scoped[name].store.append("capture.turn", turn)
    building_elsewhere(monkeypatch)  # the tables are built in the background: not done before the reads
    monkeypatch.setenv("CONTEXTFLOW_STATE", str(tmp_path / "fresh-state"))  # a fresh machine: no state at all
    base = App.open()
    web = grant_app(base, _grant("web"))
    try:
        assert [r.data["value"] for r in records.list_records(web, since_days=0)] == [{"v": "web"}]
        assert records.get_record(web, key="fact:plan").data["value"] == {"v": "web"}
        assert [e.event.data["summary"] for e in conversations.list_conversations(web)] == ["the web plan"]
        assert conversations.find_conversation(web, "c1").event.data["project"] == "web"
        assert [n.content for n in explore.run_query(web, "zebra")[0]] == ["the web plan, zebra"]
        assert [n.content for n in explore.run_query(web, "")[0]] == ["the web plan, zebra"]
        assert "secret" not in compose(web, "zebra").text
        assert [t.name for t in timeline.list_threads(web)] == ["the web thread"]
        assert [p.name for p in sessions.list_projects(web)] == ["web"]  # (the logs' rest, kept to web's rows)
        assert sessions.known_session_ids(web, "secret") == [] and turns(web, "secret").session("s1") == []
        assert [e.data["project"] for e in turns(web, "web").session("s1")] == ["web"]
        assert not web.store.scanned and web.tables().building  # (answered while the build runs)
    finally:
        web.close()
        base.close()


def test_a_web_token_whose_tables_do_not_open_reads_the_logs_rows_of_web_and_folds_nothing(
    scoped: dict[str, App], monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextflow.capture.stored import turns
    from contextflow.core.tables import Tables
    from contextflow.graph import explore, writes
    from contextflow.timeline import core as timeline

    for name in ("secret", "web"):
        records.set_record(scoped[name], key="fact:plan", value={"v": f"{name}'s"})
        conversations.save_conversation(scoped[name], _conversation("c1", f"{name}'s plan"))
        timeline.create_thread(scoped[name], name=f"the {name} thread")
        writes.add_node(scoped[name], type="fact", content=f"{name}'s plan node")
        turn = {"project": name, "session_id": "s1", "turn_id": f"t-{name}", "turn": {"final": "done"}}
        scoped[name].store.append("capture.turn", turn)
    monkeypatch.setattr(Tables, "usable", lambda self: False)  # a read-only or full state folder
    monkeypatch.setattr(Tables, "_connect", _unopened)
    web = scoped["web"]
    assert not web.store.scanned
    # the graph, records, conversations, timeline and captured turns are read from the logs' rows, kept to web's
    assert [n.content for n in explore.run_query(web, "plan")[0]] == ["web's plan node"]
    assert [r.data["value"] for r in records.list_records(web, since_days=0)] == [{"v": "web's"}]
    assert records.get_record(web, key="fact:plan").data["value"] == {"v": "web's"}
    assert [e.event.data["summary"] for e in conversations.list_conversations(web)] == ["web's plan"]
    assert [t.name for t in timeline.list_threads(web)] == ["the web thread"]
    assert turns(web, "secret").session("s1") == [] and len(turns(web, "web").session("s1")) == 1
    assert not web.store.scanned


def _unopened(self: object) -> None:
    import sqlite3

    raise sqlite3.OperationalError("attempt to write a readonly database")
