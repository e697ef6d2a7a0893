"""Every searchable kind reaches get_context through its extractor, updates and deletes included:
notes, handoffs, conversations, context records, timeline threads and thoughts, graph nodes."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from contextflow.adapters.cli import main
from contextflow.conversations import core as conversations
from contextflow.graph import writes as graph
from contextflow.records import core as records
from contextflow.search import retrieval
from contextflow.search.extractors import extractors, search_kinds
from contextflow.sessions import core as sessions
from contextflow.timeline import core as timeline


def found(app, query: str, **options) -> list[tuple[str, str]]:
    result = retrieval.get_context(app, query=query, **options)
    return [(shown.hit.doc.kind, shown.hit.doc.ref) for shown in result.shown]


def test_every_kind_is_registered_once_with_its_search_kind():
    assert set(search_kinds()) == {
        "note",
        "handoff",
        "conversation",
        "context",
        "thread",
        "thought",
        "node",
        "activity",
    }
    assert extractors()["graph.node_delete"][0] == "node" and extractors()["context.delete"][0] == "context"


def test_notes_and_handoffs_are_found_by_text_task_tags_steps_and_files(app):
    note = sessions.append_note(app, agent="codex", text="Bumped the tokio runtime", task="Upgrade deps", tags=["rust"])
    handoff = sessions.write_handoff(
        app,
        agent="claude",
        summary="Login form done",
        next_steps=["wire the OAuth callback"],
        open_questions=["which scopes?"],
        files=["src/auth/LoginForm.tsx"],
    )
    assert found(app, "tokio") == [("note", note.id)]
    assert found(app, "upgrade deps rust") == [("note", note.id)]
    assert found(app, "OAuth callback") == [("handoff", handoff.id)]
    assert found(app, "LoginForm") == [("handoff", handoff.id)]


def test_a_context_record_is_found_by_key_label_and_value_until_deleted(app):
    records.set_record(app, key="machine:chisel", value={"ip": "10.0.0.2", "role": "build server"}, label="Chisel")
    assert found(app, "build server") == [("context", "machine:chisel")]
    assert found(app, "chisel", kinds=["context"]) == [("context", "machine:chisel")]
    records.set_record(app, key="machine:chisel", value={"role": "media box"})
    assert found(app, "build server") == [] and found(app, "media box") == [("context", "machine:chisel")]
    records.delete_record(app, key="machine:chisel")
    assert found(app, "media box") == []
    records.set_record(app, key="machine:chisel", value={"role": "media box again"})
    assert found(app, "media box") == [("context", "machine:chisel")]


def test_an_expired_context_record_is_left_out_at_read_time(app):
    records.set_record(app, key="fact:promo", value={"text": "discount code works"}, expires_at="2099-01-01T00:00:00Z")
    assert found(app, "discount code") == [("context", "fact:promo")]
    after = int(datetime(2099, 1, 2, tzinfo=UTC).timestamp() * 1000)
    assert found(app, "discount code", now_ms=after) == []


def test_threads_and_thoughts_are_found_and_follow_their_updates(app):
    thread = timeline.create_thread(app, name="Payments migration", description="Move billing to Stripe")
    thought = timeline.add_thought(app, thread_id=thread.id, content="Webhooks arrive twice", thought_type="discovery")
    assert found(app, "stripe billing") == [("thread", thread.id)]
    assert found(app, "webhooks") == [("thought", thought.id)]
    timeline.update_thought(app, thought_id=thought.id, content="Webhooks are idempotent now", status="resolved")
    result = retrieval.get_context(app, query="idempotent webhooks")
    assert [(s.hit.doc.kind, s.hit.doc.ref) for s in result.shown] == [("thought", thought.id)]
    assert "status=resolved" in result.text and "thought_type=discovery" in result.text
    timeline.update_thread(app, thread_id=thread.id, name="Payments on Adyen")
    assert found(app, "adyen") == [("thread", thread.id)] and found(app, "migration") == []


def test_graph_nodes_follow_updates_tags_and_deletes(app):
    node = graph.add_node(
        app,
        type="decision",
        content="Use SQLite for the cache",
        summary="embedded store",
        tags=["project:viberent", "area:storage"],
        metadata={"confidence": "high"},
    )
    assert found(app, "sqlite cache", kinds=["node"]) == [("node", node.id)]
    assert found(app, "embedded") == [("node", node.id)] and found(app, "storage area") == [("node", node.id)]
    graph.update_node(app, node.id, content="Use DuckDB for the cache")
    assert found(app, "sqlite") == [] and found(app, "duckdb") == [("node", node.id)]
    assert found(app, "embedded") == [("node", node.id)]  # the summary was not changed
    graph.tag(app, node.id, ["lang:zig"])
    assert found(app, "zig") == [("node", node.id)]
    graph.untag(app, node.id, ["lang:zig"])
    assert found(app, "zig") == []
    graph.delete_node(app, node.id)
    assert found(app, "duckdb") == []


def test_a_graph_nodes_project_tag_scopes_it_like_a_project(app):
    node = graph.add_node(app, type="fact", content="Redis runs on port 6380", tags=["project:viberent"])
    sessions.append_note(app, agent="a", text="Redis restarted", project="other")
    assert found(app, "redis", project="viberent") == [("node", node.id)]
    assert [kind for kind, _ in found(app, "redis", project="other")] == ["note"]


def test_a_node_shows_its_type_tags_and_metadata_with_provenance(app):
    node = graph.add_node(
        app,
        type="pattern",
        content="Retry with jitter",
        tags=["area:net"],
        metadata={"source": "SRE book"},
        agent="claude",
    )
    text = retrieval.get_context(app, query="jitter").text
    assert f"kind=node | id={node.id} | writer=writer-a | agent=claude" in text
    assert "type=pattern" in text and "> area:net" in text and "> source: SRE book" in text


def test_a_re_saved_conversation_is_indexed_only_as_its_latest_version(app):
    conversation_id = conversations.generate_conversation_id()
    conversations.save_conversation(app, {"conversation_id": conversation_id, "topic": "Kafka", "summary": "lag"})
    conversations.save_conversation(app, {"conversation_id": conversation_id, "topic": "Pulsar", "summary": "lag"})
    assert found(app, "kafka") == [] and found(app, "pulsar") == [("conversation", conversation_id)]


def test_cli_search_kind_node_finds_graph_nodes_only(capsys, app):
    node = graph.add_node(app, type="fact", content="Terraform state lives in S3")
    sessions.append_note(app, agent="a", text="Terraform plan failed")
    assert main(["search", "terraform", "--kind", "node", "--format", "json"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert [(r["kind"], r["id"]) for r in results] == [("node", node.id)]


@pytest.mark.parametrize("kind", ["note", "handoff", "conversation", "context", "thread", "thought", "node"])
def test_each_kind_can_be_asked_for_alone(app, kind):
    result = retrieval.get_context(app, query="anything", kinds=[kind])
    assert result.shown == [] and f"kinds={kind}" in result.text


def test_a_huge_node_is_clipped_to_the_budget_without_rendering_all_of_it(app):
    graph.add_node(app, type="source", content="kubernetes " + "manifest line\n" * 30_000)
    result = retrieval.get_context(app, query="kubernetes manifest", budget_tokens=300)
    assert result.tokens <= 300 and result.shown[0].status == "clipped"
