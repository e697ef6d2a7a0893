"""The `recall` group: ranked retrieval (get_context / `search`) and conversation records,
plus the `save_conversation` prompt that tells the client's own model how to decompose its session."""

from __future__ import annotations

from typing import Any

from contextflow.operations.spec import JSON, Feature, Operation, Param, PromptArg, PromptSpec, lazy

_RUN = "contextflow.present.recall:"
_S: JSON = {"type": "string"}
_LIST: JSON = {"type": "array", "items": _S}
_DECISIONS: JSON = {
    "type": "array",
    "description": "Every decision AND every rejected option, each with its reasoning.",
    "items": {
        "type": "object",
        "properties": {"decision": _S, "reasoning": _S, "status": {"type": "string", "enum": ["chosen", "rejected"]}},
        "required": ["decision", "reasoning"],
    },
}
# Copies of core constants, so that reading the table stays cheap (a test checks they agree):
# contextflow.search.search_kinds(), contextflow.retrieval's limits, contextflow.conversations.DEFAULT_LIMIT.
SEARCH_KINDS = ("context", "conversation", "handoff", "node", "note", "thought", "thread")
DEFAULT_LIMIT, MAX_LIMIT = 8, 50
DEFAULT_BUDGET, MIN_BUDGET, MAX_BUDGET = 2_000, 200, 50_000
DEFAULT_LIST = 20


def _record(name: str, schema: JSON, description: str | None = None) -> Param:
    """A save_conversation field: offered to MCP clients; the CLI reads the whole record from a file."""
    return Param(name, {**schema, "description": description} if description else schema, cli=False)


def _command(words: tuple[str, ...], summary: str, params: tuple[Param, ...], handler: str, description: str,
             **more: Any) -> Operation:
    """A CLI-only command."""
    return Operation(" ".join(words), summary, params, _RUN + handler, command=words, tool=False, group="recall",
                     cli_description=description, **more)


SAVE_FIELDS = (
    _record("conversation_id", _S, "From generate_conversation_id; omitted: a new one."),
    _record("source", _S, "Your tool, e.g. claude_code, codex, gemini_cli."),
    _record("project", _S, "Project key."),
    _record("conversation_type", {"type": "string", "enum": ["single_topic", "multi_topic"]}),
    Param("topic", {**_S, "description": "2-5 words."}, required=True, cli=False),
    _record("categories", _LIST, "Discovery tags, e.g. backend, testing."),
    _record("decisions", _DECISIONS),
    _record("open_questions", _LIST, "Unresolved items."),
    _record("related_entities", _LIST, "People, systems, files, concepts."),
    _record("summary", _S, "2-3 paragraph synthesis."),
    _record("overall_summary", _S, "multi_topic: synthesis of all topics."),
    _record("cross_topic_insights", _LIST),
    _record(
        "topics",
        {"type": "array", "items": {"type": "object"}},
        "multi_topic: per topic {topic, summary, categories, decisions, open_questions, related_entities}.",
    ),
    _record("session_id", _S, "Link to a contextflow session."),
    _record("full_transcript", _S, "Optional; large ones are stored apart, never searched."),
)

OPERATIONS = (
    Operation(
        "get_context",
        "Search shared memory (conversations, handoffs, notes, context records, thoughts, graph nodes) and get "
        "the best matches as markdown within a token budget. Call it at the start of a task.",
        (
            Param("query", {**_S, "description": "What you need to know: topics, files, components, decisions."},
                  required=True, positional=True, cli_help="what to look for: topics, files, components, decisions"),
            Param("kinds", {"type": "array", "items": {"type": "string", "enum": list(SEARCH_KINDS)},
                            "description": "Only these kinds."}, flag="--kind", cli_help="only this kind (repeatable)"),
            Param("project", {**_S, "description": "Only this project's records (plus records without a project)."},
                  cli_help="only this project (plus records without a project)"),
            Param("limit", {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "Default 8."},
                  cli_help=f"at most N matches (default {DEFAULT_LIMIT})"),
            Param("budget_tokens", {"type": "integer", "minimum": MIN_BUDGET, "maximum": MAX_BUDGET,
                                    "description": "Most tokens to return. Default 2000."}, cli=False),
            # the CLI's --budget: checked by the core, so its message names budget_tokens as before
            Param("budget", {"type": "integer", "description": f"most tokens to print (default {DEFAULT_BUDGET})"},
                  tool=False),
        ),
        _RUN + "get_context",
        command=("search",),
        group="recall",
        cli_description="Ranked search across conversations, handoffs, notes, context records, thoughts and graph "
        "nodes; prints the best matches as markdown within a token budget.",
    ),
    Operation(
        "generate_conversation_id",
        "Mint a conversation id at the start of a session, to save (and re-save) its record under.",
        (),
        _RUN + "generate_conversation_id",
        group="recall",
        needs_store=False,
        structured=True,
    ),
    _command(("conversations", "new-id"), "Mint a conversation id.", (), "new_id", "Print a new conversation id.",
             needs_store=False),
    Operation(
        "save_conversation",
        "Save a structured record of this conversation (see the save_conversation prompt). Same id replaces.",
        SAVE_FIELDS,
        _RUN + "save_conversation",
        group="recall",
        read_only=False,
    ),
    _command(
        ("conversations", "save"),
        "Save a record from a JSON file.",
        (Param("file", {**_S, "description": "JSON file with the record (the save_conversation fields); - reads "
                        "stdin"}, required=True, positional=True, tool=False),),
        "save_file",
        "Validate and save a record given as JSON.",
        read_only=False,
    ),
    Operation(
        "get_conversation",
        "Show one saved conversation record in full; include_transcript adds its full transcript.",
        (
            Param("conversation_id", {**_S, "description": "Id or unique prefix."}, required=True, positional=True),
            Param("project", {**_S, "description": "Project key, when two projects hold the id."}),
            Param("include_transcript", {"type": "boolean", "description": "Default false."}, flag="--transcript",
                  cli_help="include the full transcript"),
        ),
        _RUN + "get_conversation",
        command=("conversations", "show"),
        group="recall",
        cli_description="Show one record by id or prefix.",
    ),
    _command(
        ("conversations", "list"),
        "List records, most recently saved first.",
        (
            Param("project", {**_S, "description": "Only this project."}),
            Param("limit", {"type": "integer", "description": f"At most N (default {DEFAULT_LIST})."}),
        ),
        "list_conversations",
        "List records.",
    ),
    _command(
        ("instructions",),
        "Print the lines for AGENTS.md / CLAUDE.md / GEMINI.md.",
        (),
        "instructions",
        "Print instruction-file lines that make agents search shared memory at the start of a task and save a "
        "conversation record at the end. Append them to AGENTS.md, CLAUDE.md or GEMINI.md.",
        needs_store=False,
    ),
)

FEATURE = Feature(
    group="recall",
    views=("contextflow.views.conversations:ConversationsView", "contextflow.search.view:SearchView"),
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
