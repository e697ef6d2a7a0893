"""The `recall` tool group: ranked retrieval (get_context) and conversation memory (seed 002).

Thin adapters over contextflow/retrieval.py and contextflow/conversations.py, plus the
`save_conversation` prompt that tells the client's own model how to decompose its session.
"""

from __future__ import annotations

from contextflow import conversations, retrieval
from contextflow.app import App
from contextflow.search import search_kinds
from contextflow.server.tooling import JSON, Feature, PromptArg, PromptSpec, Reply, ToolSpec
from contextflow.text import DATA_NOTICE

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
_FIELDS: JSON = {
    "categories": {**_LIST, "description": "Discovery tags, e.g. backend, testing."},
    "decisions": _DECISIONS,
    "open_questions": {**_LIST, "description": "Unresolved items."},
    "related_entities": {**_LIST, "description": "People, systems, files, concepts."},
}


def get_context(app: App, args: JSON) -> Reply:
    result = retrieval.get_context(
        app, query=args.get("query"), project=args.get("project"), kinds=args.get("kinds"),
        limit=args.get("limit"), budget_tokens=args.get("budget_tokens"),
    )
    return Reply(result.text, result.as_dict())


def generate_conversation_id(app: App, args: JSON) -> Reply:
    new = conversations.generate_conversation_id()
    text = (
        f"conversation_id={new}\nPass it to save_conversation at the end of the session; "
        "saving again with the same id replaces the record."
    )
    return Reply(text, {"id": new, "conversation_id": new})


def save_conversation(app: App, args: JSON) -> Reply:
    saved = conversations.save_conversation(app, args)
    data: JSON = {
        "id": saved.conversation_id,
        "conversation_id": saved.conversation_id,
        "event_id": saved.event.id,
        "replaced": saved.replaced,
        "transcript_tokens": saved.transcript_tokens,
        "transcript_blob": saved.transcript_blob,
    }
    verb = "Replaced" if saved.replaced else "Saved"
    text = f"{verb} conversation {saved.conversation_id} in {app.store.folder}"
    if saved.transcript_blob:
        text += f"\ntranscript ({saved.transcript_tokens} tokens) stored apart as blob {saved.transcript_blob[:12]}..."
    return Reply(text, data)


def get_conversation(app: App, args: JSON) -> Reply:
    entry = conversations.find_conversation(app, args.get("conversation_id"))
    transcript = conversations.load_transcript(app, entry) if args.get("include_transcript") else None
    text = f"{DATA_NOTICE}\n\n{retrieval.conversation_markdown(entry, transcript)}"
    return Reply(text, conversations.record_json(entry, transcript))


TOOLS = [
    ToolSpec(
        "get_context",
        "Search shared memory (conversations, handoffs, notes, context records, thoughts, graph nodes) and get "
        "the best matches as markdown within a token budget. Call it at the start of a task.",
        {
            "query": {**_S, "description": "What you need to know: topics, files, components, decisions."},
            "project": {**_S, "description": "Only this project's records (plus records without a project)."},
            "kinds": {"type": "array", "items": {"type": "string", "enum": list(search_kinds())},
                      "description": "Only these kinds."},
            "limit": {"type": "integer", "minimum": 1, "maximum": retrieval.MAX_LIMIT, "description": "Default 8."},
            "budget_tokens": {"type": "integer", "minimum": retrieval.MIN_BUDGET, "maximum": retrieval.MAX_BUDGET,
                              "description": "Most tokens to return. Default 2000."},
        },
        get_context,
        required=("query",),
        group="recall",
    ),
    ToolSpec(
        "generate_conversation_id",
        "Mint a conversation id at the start of a session, to save (and re-save) its record under.",
        {},
        generate_conversation_id,
        group="recall",
    ),
    ToolSpec(
        "save_conversation",
        "Save a structured record of this conversation (see the save_conversation prompt). Same id replaces.",
        {
            "conversation_id": {**_S, "description": "From generate_conversation_id; omitted: a new one."},
            "source": {**_S, "description": "Your tool, e.g. claude_code, codex, gemini_cli."},
            "project": {**_S, "description": "Project key."},
            "conversation_type": {"type": "string", "enum": ["single_topic", "multi_topic"]},
            "topic": {**_S, "description": "2-5 words."},
            **_FIELDS,
            "summary": {**_S, "description": "2-3 paragraph synthesis."},
            "overall_summary": {**_S, "description": "multi_topic: synthesis of all topics."},
            "cross_topic_insights": _LIST,
            "topics": {
                "type": "array",
                "description": "multi_topic: per topic {topic, summary, categories, decisions, open_questions, "
                "related_entities}.",
                "items": {"type": "object"},
            },
            "session_id": {**_S, "description": "Link to a contextflow session."},
            "full_transcript": {**_S, "description": "Optional; large ones are stored apart, never searched."},
        },
        save_conversation,
        required=("topic",),
        read_only=False,
        group="recall",
    ),
    ToolSpec(
        "get_conversation",
        "Show one saved conversation record in full; include_transcript adds its full transcript.",
        {
            "conversation_id": {**_S, "description": "Id or unique prefix."},
            "include_transcript": {"type": "boolean", "description": "Default false."},
        },
        get_conversation,
        required=("conversation_id",),
        group="recall",
    ),
]


DECOMPOSER = """\
Save this conversation to shared memory with the save_conversation tool.

Turn the session into one structured record. Write for a future agent who has none of this
context and needs to know what was decided, why, and what is still open.

- conversation_id: {conversation_id}
- source: your tool (claude_code, codex, gemini_cli, cursor, cline, ...)
- project: {project}
- conversation_type: single_topic for one focused piece of work; multi_topic when the
  session covered several separate subjects.
- topic: 2-5 words naming the subject.
- categories: a few discovery tags (backend, testing, architecture, bugfix, ...).
- decisions: every conclusion, each {{"decision", "reasoning", "status"}}. Record the options
  that were considered and REJECTED too, with status "rejected" and why: they stop the next
  agent from re-litigating them. Keep each decision attached to its own reasoning.
- open_questions: what is unresolved, so the next session can pick it up.
- related_entities: files, services, classes, people, systems and concepts involved,
  spelled as they appear in code.
- summary: a 2-3 paragraph synthesis of what happened and the resulting state.
- multi_topic only: overall_summary, cross_topic_insights, and topics[] where each entry has
  its own topic, summary, categories, decisions, open_questions and related_entities.
- full_transcript: optional; include it only if the user asks to keep the whole record.

Use concrete names (files, functions, commands), not "the second approach". Call
save_conversation with the record as its arguments; saving again with the same
conversation_id replaces the earlier version.
"""


def save_conversation_prompt(app: App, args: dict[str, str]) -> str:
    conversation_id = args.get("conversation_id", "").strip()
    project = args.get("project", "").strip() or app.settings.default_project
    return DECOMPOSER.format(
        conversation_id=conversation_id or "call generate_conversation_id first (or omit it to get a new one)",
        project=project,
    )


FEATURE = Feature(
    tools=TOOLS,
    prompts=[
        PromptSpec(
            "save_conversation",
            "How to decompose this session into a conversation record and save it",
            save_conversation_prompt,
            (PromptArg("conversation_id", "Id from generate_conversation_id"), PromptArg("project", "Project key")),
        ),
    ],
)
