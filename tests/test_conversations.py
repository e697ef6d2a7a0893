"""Conversation records: validation, save and replace, transcripts in blobs, list/show, MCP tools and CLI."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from contextflow.adapters.cli import main
from contextflow.app import App
from contextflow.conversations import core as conversations
from contextflow.core.blobs import BLOB_DIR, blob_path, read_blob, write_blob
from contextflow.core.errors import InputError, NotFoundError, StoreError
from tests.conftest import call_with_data, connect, open_app, text_of
from tests.table import run as run_operation

SINGLE: dict[str, Any] = {
    "source": "claude_code",
    "project": "aihub",
    "conversation_type": "single_topic",
    "topic": "Secretary auto-invocation",
    "categories": ["backend", "architecture"],
    "decisions": [
        {"decision": "Graceful degradation around Secretary calls", "reasoning": "Gates must not fail when it is down"},
        {"decision": "A shared trait for Secretary injection", "reasoning": "Over-engineering", "status": "rejected"},
    ],
    "open_questions": ["Verify prompt slugs in production"],
    "related_entities": ["TaskReviewService", "app/Services/Tasks/TaskReviewService.php"],
    "summary": "Integrated Secretary services into the quality gates.",
}

MULTI: dict[str, Any] = {
    "source": "gemini_cli",
    "topic": "Weekly architecture review",
    "overall_summary": "Reviewed caching and deployment.",
    "cross_topic_insights": ["Both topics hinge on the Redis cluster"],
    "topics": [
        {
            "topic": "Cache invalidation",
            "summary": "Chose write-through.",
            "categories": ["cache"],
            "decisions": [{"decision": "Write-through cache", "reasoning": "Simpler consistency"}],
        },
        {
            "topic": "Blue-green deploys",
            "summary": "Deferred.",
            "open_questions": ["Who owns the load balancer?"],
            "related_entities": ["nginx"],
        },
    ],
}


def record(**changes: Any) -> dict[str, Any]:
    return {**SINGLE, **changes}


# -- validation ----------------------------------------------------------------------------


def test_a_single_topic_record_keeps_every_field_and_defaults_status_to_chosen():
    checked = conversations.validate_record(SINGLE)
    assert checked["conversation_type"] == "single_topic"
    assert checked["topic"] == "Secretary auto-invocation"
    assert checked["categories"] == ["backend", "architecture"]
    assert checked["decisions"][0]["status"] == "chosen"
    assert checked["decisions"][1]["status"] == "rejected"
    assert checked["open_questions"] == ["Verify prompt slugs in production"]
    assert checked["related_entities"][0] == "TaskReviewService"
    assert checked["summary"].startswith("Integrated")


def test_a_multi_topic_record_is_inferred_from_its_topics_and_keeps_each_topics_fields():
    checked = conversations.validate_record(MULTI)
    assert checked["conversation_type"] == "multi_topic"
    assert checked["overall_summary"] == "Reviewed caching and deployment."
    assert checked["cross_topic_insights"] == ["Both topics hinge on the Redis cluster"]
    first, second = checked["topics"]
    expected = {"decision": "Write-through cache", "reasoning": "Simpler consistency", "status": "chosen"}
    assert first["decisions"] == [expected]
    assert second["open_questions"] == ["Who owns the load balancer?"] and second["related_entities"] == ["nginx"]


BAD_RECORDS = [
    ("not a dict", "the record must be an object"),
    (record(topic=None), "topic is required"),
    (record(topic="   "), "topic is empty"),
    (record(topic=7), "topic must be a string, got a number (7)"),
    (record(summary=None), "summary is required"),
    (record(categories="backend"), "categories must be a list of strings"),
    (record(categories=["ok", 3]), "categories[1] must be a string"),
    (record(open_questions=["", "x"]), "open_questions[0] is empty"),
    (record(decisions={"decision": "x"}), "decisions must be a list of objects"),
    (record(decisions=["just text"]), "decisions[0] must be an object"),
    (record(decisions=[{"decision": "x"}]), "decisions[0].reasoning is required"),
    (record(decisions=[{"decision": "x", "reasoning": "y", "status": "maybe"}]), "decisions[0].status must be"),
    (record(decisions=[{"decision": "x", "reasoning": "y", "why": "z"}]), "decisions[0] has unknown field(s) why"),
    (record(conversation_type="chat"), "conversation_type must be 'single_topic' or 'multi_topic'"),
    (
        record(topics=[{"topic": "t", "summary": "s"}], conversation_type="single_topic"),
        "topics is only for multi_topic",
    ),
    ({**MULTI, "overall_summary": None}, "overall_summary is required"),
    ({**MULTI, "topics": []}, "topics is required for a multi_topic record"),
    ({"topic": "t", "topics": [{"topic": "a", "summary": "b"}]}, "overall_summary is required"),
    ({**MULTI, "conversation_type": "multi_topic", "topics": []}, "topics is required for a multi_topic record"),
    ({**MULTI, "topics": [MULTI["topics"][0], {"topic": "x"}]}, "topics[1].summary is required"),
    (
        {**MULTI, "topics": [{"topic": "a", "summary": "b", "decisions": [{"decision": "d", "reasoning": 4}]}]},
        "topics[0].decisions[0].reasoning must be a string",
    ),
    (record(colour="blue"), "the record has unknown field(s) colour"),
    (record(summary="x" * 20_001), "summary is 20001 characters; the limit is 20000"),
    (record(categories=["x"] * 201), "categories has 201 items; the limit is 200"),
]


@pytest.mark.parametrize(("raw", "expected"), BAD_RECORDS)
def test_a_bad_record_is_refused_with_an_error_naming_the_field(raw, expected):
    with pytest.raises(InputError) as caught:
        conversations.validate_record(raw)
    assert expected in str(caught.value)


def test_the_error_for_a_deep_field_names_its_whole_path():
    bad = {
        **MULTI,
        "topics": [
            *MULTI["topics"],
            {"topic": "c", "summary": "s", "decisions": [{"decision": "d", "reasoning": ["not", "a", "string"]}]},
        ],
    }
    with pytest.raises(InputError, match=r"^topics\[2\]\.decisions\[0\]\.reasoning must be a string, got a list$"):
        conversations.validate_record(bad)


# -- saving --------------------------------------------------------------------------------


def test_saving_appends_one_event_with_the_whole_record_and_a_new_id(app):
    saved = conversations.save_conversation(app, SINGLE)
    assert saved.event.kind == "conversation.save" and not saved.replaced
    assert saved.event.data["conversation_id"] == saved.conversation_id
    assert saved.event.data["decisions"][1]["status"] == "rejected"
    assert saved.event.data["source"] == "claude_code" and saved.event.data["project"] == "aihub"
    assert [e.conversation_id for e in conversations.list_conversations(app)] == [saved.conversation_id]


def test_saving_the_same_id_again_replaces_the_record_and_counts_versions(app):
    conversation_id = conversations.generate_conversation_id()
    conversations.save_conversation(app, record(conversation_id=conversation_id))
    second = conversations.save_conversation(app, record(conversation_id=conversation_id, topic="Renamed topic"))
    assert second.replaced
    entries = conversations.list_conversations(app)
    assert len(entries) == 1 and entries[0].event.data["topic"] == "Renamed topic" and entries[0].versions == 2


def test_the_latest_save_wins_across_writers_whatever_order_they_are_read(app):
    conversation_id = conversations.generate_conversation_id()
    conversations.save_conversation(app, record(conversation_id=conversation_id, topic="First"))
    other = open_app("writer-b")
    try:
        conversations.save_conversation(other, record(conversation_id=conversation_id, topic="Second"))
    finally:
        other.close()
    fresh = open_app("writer-c")
    try:
        entry = conversations.find_conversation(fresh, conversation_id)
        assert entry.event.data["topic"] == "Second" and entry.event.writer == "writer-b"
    finally:
        fresh.close()
    assert conversations.find_conversation(app, conversation_id).event.data["topic"] == "Second"


def test_project_defaults_to_the_default_project_and_source_to_unknown(app):
    saved = conversations.save_conversation(app, {"topic": "t", "summary": "s"})
    assert saved.event.data["project"] == "shared" and saved.event.data["source"] == "unknown"


def test_a_conversation_id_may_be_a_uuid_and_is_stored_in_lower_case(app):
    saved = conversations.save_conversation(app, record(conversation_id="0F8FAD5B-D9CB-469F-A165-70867728950E"))
    assert saved.conversation_id == "0f8fad5b-d9cb-469f-a165-70867728950e"


def test_a_bad_conversation_id_or_record_stores_nothing(app):
    with pytest.raises(InputError, match="conversation_id may hold only"):
        conversations.save_conversation(app, record(conversation_id="../etc/passwd"))
    with pytest.raises(InputError, match=r"decisions\[0\]\.reasoning is required"):
        conversations.save_conversation(app, record(decisions=[{"decision": "x"}]))
    assert app.store.event_count == 0


def test_a_small_transcript_stays_in_the_record_and_is_returned_only_on_request(app):
    saved = conversations.save_conversation(app, record(full_transcript="user: hi\nassistant: hello"))
    assert saved.transcript_blob is None and saved.transcript_tokens > 0
    entry = conversations.find_conversation(app, saved.conversation_id)
    assert "full_transcript" not in conversations.record_json(entry)
    assert conversations.load_transcript(app, entry) == "user: hi\nassistant: hello"


def test_a_transcript_over_ten_thousand_tokens_goes_to_a_blob_file(app, store_dir):
    transcript = "user: please refactor the billing module\n" * 1_200  # about 12k tokens
    saved = conversations.save_conversation(app, record(full_transcript=transcript))
    assert saved.transcript_blob is not None and saved.transcript_tokens > 10_000
    assert "text" not in saved.event.data["transcript"]
    path = blob_path(store_dir, saved.transcript_blob)
    assert path.read_text() == transcript.strip()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert len(store_dir.joinpath("events.writer-a.jsonl").read_bytes()) < 5_000  # the log holds only the reference
    entry = conversations.find_conversation(app, saved.conversation_id)
    assert conversations.load_transcript(app, entry) == transcript.strip()


def test_secrets_in_a_blob_transcript_are_redacted_before_they_reach_the_file(app, store_dir):
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    transcript = ("talk about deploys\n" * 3_000) + f"export GITHUB_TOKEN={token}\n"
    saved = conversations.save_conversation(app, record(full_transcript=transcript))
    assert saved.transcript_blob is not None
    stored = blob_path(store_dir, saved.transcript_blob).read_text()
    assert token not in stored and "[REDACTED:" in stored
    assert saved.event.data["redacted"]


# -- blobs ---------------------------------------------------------------------------------


def test_a_blob_is_written_once_and_read_back_checked_against_its_hash(tmp_path):
    folder = tmp_path / "store"
    sha = write_blob(folder, b"hello")
    assert write_blob(folder, b"hello") == sha
    assert read_blob(folder, sha) == b"hello"
    assert not [p for p in (folder / BLOB_DIR).rglob("*.tmp")]
    blob_path(folder, sha).write_bytes(b"tampered")
    with pytest.raises(StoreError, match="does not match its hash"):
        read_blob(folder, sha)


def test_a_missing_blob_or_a_bad_reference_is_reported_clearly(tmp_path):
    with pytest.raises(NotFoundError, match="wait for the sync"):
        read_blob(tmp_path, "a" * 64)
    with pytest.raises(NotFoundError, match="not a blob reference"):
        read_blob(tmp_path, "../../etc/passwd")


# -- list and show -------------------------------------------------------------------------


def test_list_is_newest_first_and_filters_by_project(app):
    first = conversations.save_conversation(app, record(project="web"))
    second = conversations.save_conversation(app, record(project="api"))
    assert [e.conversation_id for e in conversations.list_conversations(app)] == [
        second.conversation_id,
        first.conversation_id,
    ]
    assert [e.conversation_id for e in conversations.list_conversations(app, project="web")] == [first.conversation_id]
    with pytest.raises(InputError, match="limit must be from 1 to 200"):
        run_operation(app, "conversations list", limit=0)


def test_show_finds_a_record_by_unique_prefix_and_says_how_to_list_them(app):
    saved = conversations.save_conversation(app, SINGLE)
    assert conversations.find_conversation(app, saved.conversation_id[:6]).conversation_id == saved.conversation_id
    with pytest.raises(NotFoundError, match="contextflow conversations list"):
        conversations.find_conversation(app, "zzzzzz")


# -- MCP -----------------------------------------------------------------------------------


@pytest.fixture
def recall_app(monkeypatch: pytest.MonkeyPatch) -> Iterator[App]:
    monkeypatch.setenv("CONTEXTFLOW_TOOLS", "sessions,recall")
    opened = App.open()
    yield opened
    opened.close()


@pytest.fixture
async def rc(recall_app: App) -> AsyncIterator[Client]:
    async with connect(recall_app) as connected:
        yield connected


@pytest.mark.anyio
async def test_the_recall_group_offers_its_four_tools_with_compact_descriptions(rc):
    tools = {tool.name: tool for tool in (await rc.list_tools()).tools}
    assert {"get_context", "generate_conversation_id", "save_conversation", "get_conversation"} <= set(tools)
    assert tools["save_conversation"].annotations.read_only_hint is False
    assert tools["get_context"].annotations.read_only_hint is True
    assert all(len(tools[name].description) < 240 for name in ("get_context", "save_conversation"))


@pytest.mark.anyio
async def test_the_recall_group_is_in_the_default_tool_list(client):
    names = {tool.name for tool in (await client.list_tools()).tools}
    assert {"get_context", "save_conversation", "generate_conversation_id"} <= names


@pytest.mark.anyio
async def test_an_id_generated_at_the_start_is_used_to_save_and_update_the_record(rc):
    minted = await rc.call_tool("generate_conversation_id", {})
    conversation_id = minted.structured_content["id"]
    saved = await rc.call_tool("save_conversation", {**SINGLE, "conversation_id": conversation_id})
    assert not saved.is_error and saved.structured_content["id"] == conversation_id
    assert saved.structured_content["replaced"] is False
    again = await rc.call_tool("save_conversation", {**MULTI, "conversation_id": conversation_id})
    assert again.structured_content["replaced"] is True and "Replaced" in text_of(again)
    shown = await rc.call_tool("get_conversation", {"conversation_id": conversation_id[:8]})
    assert "> Weekly architecture review" in text_of(shown) and "topic 2/2" in text_of(shown)


@pytest.mark.anyio
async def test_save_conversation_errors_name_the_field_and_store_nothing(rc, recall_app):
    nested = {**MULTI, "topics": [{"topic": "a", "summary": "b", "decisions": [{"decision": "d", "reasoning": 1}]}]}
    result = await rc.call_tool("save_conversation", nested)
    assert result.is_error and "topics[0].decisions[0].reasoning must be a string" in text_of(result)
    result = await rc.call_tool("save_conversation", {**SINGLE, "decisions": "all of them"})
    assert result.is_error and "decisions must be a list" in text_of(result)
    result = await rc.call_tool("save_conversation", {"summary": "no topic"})
    assert result.is_error and "topic" in text_of(result)
    assert recall_app.store.event_count == 0


@pytest.mark.anyio
async def test_get_conversation_returns_the_transcript_only_when_asked(rc):
    saved = await rc.call_tool("save_conversation", {**SINGLE, "full_transcript": "word " * 50_000})
    conversation_id = saved.structured_content["id"]
    assert saved.structured_content["transcript_blob"]
    plain = await rc.call_tool("get_conversation", {"conversation_id": conversation_id})
    assert "word word" not in text_of(plain) and "include_transcript" in text_of(plain)
    asked = {"conversation_id": conversation_id, "include_transcript": True}
    full = await call_with_data(rc, "get_conversation", asked)
    assert "> word word" in text_of(full) and full.structured_content["full_transcript"].startswith("word")
    missing = await rc.call_tool("get_conversation", {"conversation_id": "nope"})
    assert missing.is_error and "no conversation id starts with 'nope'" in text_of(missing)


@pytest.mark.anyio
async def test_the_save_conversation_prompt_explains_the_structure_and_rejected_options(rc):
    prompt = await rc.get_prompt("save_conversation", {"conversation_id": "abc123", "project": "aihub"})
    text = prompt.messages[0].content.text
    assert "conversation_id: abc123" in text and "project: aihub" in text
    assert "REJECTED" in text and "open_questions" in text and "related_entities" in text


# -- CLI -----------------------------------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_saves_lists_and_shows_a_record(capsys, tmp_path: Path):
    path = tmp_path / "record.json"
    path.write_text(json.dumps({**SINGLE, "full_transcript": "we talked"}))
    code, out, err = run(capsys, "conversations", "save", str(path), "--format", "json")
    assert code == 0, err
    conversation_id = json.loads(out)["id"]
    code, out, _ = run(capsys, "conversations", "list")
    assert code == 0 and conversation_id in out and "> Secretary auto-invocation" in out
    code, out, _ = run(capsys, "conversations", "list", "--project", "other", "--format", "json")
    assert code == 0 and json.loads(out) == []
    code, out, _ = run(capsys, "conversations", "show", conversation_id[:5])
    assert code == 0 and "[rejected] A shared trait" in out and "we talked" not in out
    code, out, _ = run(capsys, "conversations", "show", conversation_id, "--transcript", "--format", "json")
    assert code == 0 and json.loads(out)["full_transcript"] == "we talked"


def test_cli_save_reads_stdin_and_reports_bad_json_or_fields_on_stderr(capsys, monkeypatch, app):
    import io

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"{not json")))
    code, out, err = run(capsys, "conversations", "save", "-")
    assert code == 2 and "not valid JSON" in err and not out
    path = os.devnull
    code, _, err = run(capsys, "conversations", "save", path)
    assert code == 2 and "not valid JSON" in err
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(record(topic=3)).encode())))
    code, _, err = run(capsys, "conversations", "save", "-")
    assert code == 2 and "topic must be a string" in err
    code, _, err = run(capsys, "conversations", "save", "/nonexistent/record.json")
    assert code == 2 and "cannot read" in err
    code, _, err = run(capsys, "conversations", "show", "nope")
    assert code == 3 and "no conversation id starts with" in err
    assert app.store.event_count == 0


def test_cli_new_id_and_instructions_need_no_store(capsys, store_dir):
    code, out, _ = run(capsys, "conversations", "new-id", "--format", "json")
    assert code == 0 and len(json.loads(out)["id"]) == 16
    code, out, _ = run(capsys, "instructions")
    assert code == 0 and "get_context" in out and "save_conversation" in out and "rejected" in out
    code, out, _ = run(capsys, "instructions", "--format", "json")
    assert code == 0 and json.loads(out)["files"] == ["AGENTS.md", "CLAUDE.md", "GEMINI.md"]
    assert not store_dir.exists()
