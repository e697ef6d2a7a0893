"""Conversation records (tool group `recall`, with search's get_context): save, get, list, mint ids; the
`save_conversation` prompt that tells the client's own model how to decompose its session; `instructions`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from contextflow.conversations.fields import DEFAULT_LIST, LIST_LIMIT
from contextflow.operations.params import STRING, STRINGS, boolean, integer, string
from contextflow.operations.spec import JSON, Operation, Param, PromptArg, PromptSpec, Table, cli_only, deferred

if TYPE_CHECKING:
    from contextflow.conversations import present
else:
    present = deferred("contextflow.conversations.present")


_DECISIONS: JSON = {
    "type": "array",
    "description": "Every decision AND every rejected option, each with its reasoning.",
    "items": {
        "type": "object",
        "properties": {"decision": STRING, "reasoning": STRING, "status": {**STRING, "enum": ["chosen", "rejected"]}},
        "required": ["decision", "reasoning"],
    },
}


def _record(name: str, schema: JSON, description: str | None = None) -> Param:
    """A save_conversation field: offered to MCP clients; the CLI reads the whole record from a file."""
    return Param(name, {**schema, "description": description} if description else schema, cli=False)


SAVE_FIELDS = (
    _record("conversation_id", STRING, "From generate_conversation_id; omitted: a new one."),
    _record("source", STRING, "Your tool, e.g. codex."),
    _record("project", STRING),
    _record("conversation_type", {**STRING, "enum": ["single_topic", "multi_topic"]}),
    string("topic", "2-5 words.", required=True, cli=False),
    _record("categories", STRINGS, "Tags, e.g. testing."),
    _record("decisions", _DECISIONS),
    _record("open_questions", STRINGS, "Unresolved items."),
    _record("related_entities", STRINGS, "People, systems, files."),
    _record("summary", STRING, "2-3 paragraph synthesis."),
    _record("overall_summary", STRING, "multi_topic: the synthesis."),
    _record("cross_topic_insights", STRINGS),
    _record(
        "topics",
        {"type": "array", "items": {"type": "object"}},
        "multi_topic: per topic {topic, summary, decisions, open_questions, ...}.",
    ),
    _record("session_id", STRING, "Its contextflow session."),
    _record("full_transcript", STRING, "Optional; never searched."),
)

OPERATIONS = (
    Operation(
        "generate_conversation_id",
        "Mint a conversation id at the start of a session, to save (and re-save) it under.",
        (),
        present.generate_conversation_id,
        needs_store=False,
        structured=True,
    ),
    cli_only(
        "conversations new-id",
        "Mint a conversation id.",
        (),
        present.new_id,
        cli_description="Print a new conversation id.",
        needs_store=False,
    ),
    Operation(
        "save_conversation",
        "Save a structured record of this conversation (see the save_conversation prompt). Same id replaces.",
        SAVE_FIELDS,
        present.save_conversation,
        read_only=False,
    ),
    cli_only(
        "conversations save",
        "Save a record from a JSON file.",
        (
            string(
                "file",
                "JSON file with the record (the save_conversation fields); - reads stdin",
                required=True,
                positional=True,
                tool=False,
            ),
        ),
        present.save_file,
        cli_description="Validate and save a record given as JSON.",
        read_only=False,
    ),
    Operation(
        "get_conversation",
        "Show one saved conversation record in full.",
        (
            string("conversation_id", "Id or unique prefix.", required=True, positional=True),
            string("project", "Project key, when two projects hold the id."),
            boolean(
                "include_transcript",
                "Add its full transcript.",
                flag="--transcript",
                cli_help="include the full transcript",
            ),
        ),
        present.get_conversation,
        command=("conversations", "show"),
        cli_description="Show one record by id or prefix.",
    ),
    cli_only(
        "conversations list",
        "List records, most recently saved first.",
        (
            string("project", "Only this project."),
            integer("limit", *LIST_LIMIT, f"At most N (default {DEFAULT_LIST})."),
        ),
        present.list_conversations,
        cli_description="List records.",
    ),
    cli_only(
        "instructions",
        "Print the lines for AGENTS.md / CLAUDE.md / GEMINI.md.",
        (),
        present.instructions,
        cli_description="Print instruction-file lines that make agents search shared memory at the start of a task "
        "and save a conversation record at the end. Append them to AGENTS.md, CLAUDE.md or GEMINI.md.",
        needs_store=False,
    ),
)

TABLE = Table(
    operations=OPERATIONS,
    prompts=(
        PromptSpec(
            "save_conversation",
            "How to decompose this session into a conversation record and save it",
            present.save_conversation_prompt,
            (PromptArg("conversation_id", "Id from generate_conversation_id"), PromptArg("project", "Project key")),
        ),
    ),
)
