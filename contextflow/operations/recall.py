"""The `recall` group: ranked retrieval (get_context / `search`) and conversation records,
plus the `save_conversation` prompt that tells the client's own model how to decompose its session."""

from __future__ import annotations

from typing import Any

from contextflow.operations.params import STRING, STRINGS, boolean, integer, string
from contextflow.operations.spec import JSON, Feature, Operation, Param, PromptArg, PromptSpec, lazy

_RUN = "contextflow.present.recall:"
_DECISIONS: JSON = {
    "type": "array",
    "description": "Every decision AND every rejected option, each with its reasoning.",
    "items": {
        "type": "object",
        "properties": {"decision": STRING, "reasoning": STRING, "status": {**STRING, "enum": ["chosen", "rejected"]}},
        "required": ["decision", "reasoning"],
    },
}
# Copies of core constants, so that reading the table stays cheap (a test checks they agree):
# contextflow.search.extractors.search_kinds(), contextflow.retrieval's limits, contextflow.conversations.DEFAULT_LIMIT.
SEARCH_KINDS = ("context", "conversation", "handoff", "node", "note", "thought", "thread")
DEFAULT_LIMIT, MAX_LIMIT = 8, 50
DEFAULT_BUDGET, MIN_BUDGET, MAX_BUDGET = 2_000, 200, 50_000
DEFAULT_LIST = 20


def _record(name: str, schema: JSON, description: str | None = None) -> Param:
    """A save_conversation field: offered to MCP clients; the CLI reads the whole record from a file."""
    return Param(name, {**schema, "description": description} if description else schema, cli=False)


def _op(name: str, summary: str, params: tuple[Param, ...], **more: Any) -> Operation:
    return Operation(name, summary, params, _RUN + name, group="recall", **more)


def _command(words: tuple[str, ...], summary: str, params: tuple[Param, ...], handler: str, description: str,
             **more: Any) -> Operation:
    """A CLI-only command."""
    return Operation(" ".join(words), summary, params, _RUN + handler, command=words, tool=False, group="recall",
                     cli_description=description, **more)


SAVE_FIELDS = (
    _record("conversation_id", STRING, "From generate_conversation_id; omitted: a new one."),
    _record("source", STRING, "Your tool, e.g. claude_code, codex, gemini_cli."),
    _record("project", STRING, "Project key."),
    _record("conversation_type", {**STRING, "enum": ["single_topic", "multi_topic"]}),
    string("topic", "2-5 words.", required=True, cli=False),
    _record("categories", STRINGS, "Discovery tags, e.g. backend, testing."),
    _record("decisions", _DECISIONS),
    _record("open_questions", STRINGS, "Unresolved items."),
    _record("related_entities", STRINGS, "People, systems, files, concepts."),
    _record("summary", STRING, "2-3 paragraph synthesis."),
    _record("overall_summary", STRING, "multi_topic: synthesis of all topics."),
    _record("cross_topic_insights", STRINGS),
    _record("topics", {"type": "array", "items": {"type": "object"}},
            "multi_topic: per topic {topic, summary, categories, decisions, open_questions, related_entities}."),
    _record("session_id", STRING, "Link to a contextflow session."),
    _record("full_transcript", STRING, "Optional; large ones are stored apart, never searched."),
)

OPERATIONS = (
    _op("get_context",
        "Search shared memory (conversations, handoffs, notes, context records, thoughts, graph nodes) and get "
        "the best matches as markdown within a token budget. Call it at the start of a task.", (
            string("query", "What you need to know: topics, files, components, decisions.", required=True,
                   positional=True, cli_help="what to look for: topics, files, components, decisions"),
            Param("kinds", {"type": "array", "items": {**STRING, "enum": list(SEARCH_KINDS)},
                            "description": "Only these kinds."}, flag="--kind", cli_help="only this kind (repeatable)"),
            string("project", "Only this project's records (plus records without a project).",
                   cli_help="only this project (plus records without a project)"),
            integer("limit", 1, MAX_LIMIT, "Default 8.", cli_help=f"at most N matches (default {DEFAULT_LIMIT})"),
            integer("budget_tokens", MIN_BUDGET, MAX_BUDGET, "Most tokens to return. Default 2000.", cli=False),
            # the CLI's --budget: checked by the core, so its message names budget_tokens as before
            Param("budget", {"type": "integer", "description": f"most tokens to print (default {DEFAULT_BUDGET})"},
                  tool=False),
        ), command=("search",),
        cli_description="Ranked search across conversations, handoffs, notes, context records, thoughts and graph "
        "nodes; prints the best matches as markdown within a token budget."),
    _op("generate_conversation_id",
        "Mint a conversation id at the start of a session, to save (and re-save) its record under.", (),
        needs_store=False, structured=True),
    _command(("conversations", "new-id"), "Mint a conversation id.", (), "new_id", "Print a new conversation id.",
             needs_store=False),
    _op("save_conversation",
        "Save a structured record of this conversation (see the save_conversation prompt). Same id replaces.",
        SAVE_FIELDS, read_only=False),
    _command(("conversations", "save"), "Save a record from a JSON file.", (
        string("file", "JSON file with the record (the save_conversation fields); - reads stdin", required=True,
               positional=True, tool=False),
    ), "save_file", "Validate and save a record given as JSON.", read_only=False),
    _op("get_conversation",
        "Show one saved conversation record in full; include_transcript adds its full transcript.", (
            string("conversation_id", "Id or unique prefix.", required=True, positional=True),
            string("project", "Project key, when two projects hold the id."),
            boolean("include_transcript", "Default false.", flag="--transcript",
                    cli_help="include the full transcript"),
        ), command=("conversations", "show"), cli_description="Show one record by id or prefix."),
    _command(("conversations", "list"), "List records, most recently saved first.", (
        string("project", "Only this project."),
        Param("limit", {"type": "integer", "description": f"At most N (default {DEFAULT_LIST})."}),
    ), "list_conversations", "List records."),
    _command(("instructions",), "Print the lines for AGENTS.md / CLAUDE.md / GEMINI.md.", (), "instructions",
             "Print instruction-file lines that make agents search shared memory at the start of a task and save a "
             "conversation record at the end. Append them to AGENTS.md, CLAUDE.md or GEMINI.md.", needs_store=False),
)

FEATURE = Feature(
    group="recall",
    operations=OPERATIONS,
    prompts=(
        PromptSpec(
            "save_conversation",
            "How to decompose this session into a conversation record and save it",
            lazy(_RUN + "save_conversation_prompt"),
            (PromptArg("conversation_id", "Id from generate_conversation_id"), PromptArg("project", "Project key")),
        ),
    ),
)
