"""Extractors: what each kind of event adds to, changes in or removes from the search index.

An extractor is a pure function of one event returning index operations (`Put`, `Patch`,
`Delete`). `EXTRACTORS` maps an event kind to (search kind, extractor); the search kind is
what `--kind` and `kinds=[...]` filter on. To make a new kind searchable, write one
function and add one entry here.

Extractors read stored data written by any version on any machine, so they accept missing
or odd fields quietly (`_text`, `_texts`) instead of failing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from contextflow.events import Event
from contextflow.search.index import Delete, Op, Patch, Put
from contextflow.timeutil import iso_ms

Extractor = Callable[[Event], list[Op]]
DEFAULT_PROJECT = "shared"


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _texts(value: Any) -> list[str]:
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return [item.strip() for item in items if isinstance(item, str) and item.strip()]


def _lines(items: Iterable[str]) -> str:
    return "\n".join(items)


def _session_meta(data: dict[str, Any], agent: str = "agent") -> dict[str, Any]:
    """Metadata of a record written in a session: its project (default `shared`), agent and session."""
    project = _text(data.get("project")) or DEFAULT_PROJECT
    return {"project": project, "agent": _text(data.get(agent)), "session_id": _text(data.get("session_id"))}


def _fields(**named: str) -> dict[str, str]:
    return {name: text for name, text in named.items() if text}


# -- sessions: notes and handoffs (contextflow/sessions.py) ---------------------------------


def note_docs(event: Event) -> list[Op]:
    data = event.data
    fields = _fields(title=_text(data.get("task")), text=_text(data.get("text")), tags=_lines(_texts(data.get("tags"))))
    return [Put(event.id, fields, _session_meta(data))]


def handoff_docs(event: Event) -> list[Op]:
    data = event.data
    fields = _fields(
        title=_text(data.get("task")),
        summary=_text(data.get("summary")),
        next_steps=_lines(_texts(data.get("next_steps"))),
        open_questions=_lines(_texts(data.get("open_questions"))),
        files=_lines(_texts(data.get("files"))),
    )
    return [Put(event.id, fields, _session_meta(data))]


# -- conversations (contextflow/conversations.py) -------------------------------------------


def _decision_lines(decisions: Any) -> tuple[list[str], list[str]]:
    statements: list[str] = []
    reasons: list[str] = []
    for item in decisions if isinstance(decisions, list) else []:
        if not isinstance(item, dict):
            continue
        statement = _text(item.get("decision"))
        if statement:
            rejected = item.get("status") == "rejected"
            statements.append(("rejected: " if rejected else "") + statement)
        reason = _text(item.get("reasoning"))
        if reason:
            reasons.append(reason)
    return statements, reasons


def conversation_docs(event: Event) -> list[Op]:
    """One document per conversation: its enriched text, topics included (the seed's decomposer)."""
    data = event.data
    conversation_id = _text(data.get("conversation_id"))
    if not conversation_id:
        return []
    parts = [data, *(t for t in data.get("topics") or [] if isinstance(t, dict))]
    titles, tags, entities, decisions, reasons, questions, summaries = [], [], [], [], [], [], []
    for part in parts:
        titles.append(_text(part.get("topic")))
        tags += _texts(part.get("categories"))
        entities += _texts(part.get("related_entities"))
        statements, why = _decision_lines(part.get("decisions"))
        decisions += statements
        reasons += why
        questions += _texts(part.get("open_questions"))
        summaries.append(_text(part.get("summary")))
    summaries += [_text(data.get("overall_summary")), *_texts(data.get("cross_topic_insights"))]
    fields = _fields(
        title=_lines(t for t in titles if t),
        tags=_lines(dict.fromkeys(tags)),
        entities=_lines(dict.fromkeys(entities)),
        decisions=_lines(decisions),
        reasoning=_lines(reasons),
        open_questions=_lines(questions),
        summary=_lines(s for s in summaries if s),
    )
    return [Put(conversation_id, fields, _session_meta(data, agent="source"))]


# -- keyed context records (contextflow/records.py) -----------------------------------------


MAX_VALUE_LINES = 200


def _flatten(value: Any, prefix: str, out: list[str]) -> None:
    if len(out) >= MAX_VALUE_LINES:
        return
    if isinstance(value, dict):
        for name, item in value.items():
            _flatten(item, f"{prefix}.{name}" if prefix else str(name), out)
    elif isinstance(value, list):
        for item in value:
            _flatten(item, prefix, out)
    elif value is not None and not isinstance(value, bool):
        out.append(f"{prefix}: {value}" if prefix else str(value))


def context_set_docs(event: Event) -> list[Op]:
    data = event.data
    key = _text(data.get("key"))
    if not key:
        return []
    lines: list[str] = []
    _flatten(data.get("value"), "", lines)
    fields = _fields(title=_text(data.get("label")), key=key, value=_lines(lines), tags=_text(data.get("category")))
    meta = {"agent": _text(data.get("agent")), "expires_ms": iso_ms(data.get("expires_at"))}
    return [Put(key, fields, meta)]


def context_delete_docs(event: Event) -> list[Op]:
    key = _text(event.data.get("key"))
    return [Delete(key)] if key else []


# -- timeline threads and thoughts (contextflow/timeline.py) ---------------------------------


def _status_meta(data: dict[str, Any], *names: str) -> dict[str, Any]:
    return {name: data[name] for name in names if isinstance(data.get(name), str) and data[name]}


def thread_docs(event: Event) -> list[Op]:
    data = event.data
    fields = _fields(title=_text(data.get("name")), text=_text(data.get("description")))
    return [Put(event.id, fields, {"agent": _text(data.get("agent")), **_status_meta(data, "status")})]


def thread_update_docs(event: Event) -> list[Op]:
    data = event.data
    thread_id = _text(data.get("thread_id"))
    if not thread_id:
        return []
    pairs = (("title", "name"), ("text", "description"))
    fields = {name: _text(data[source]) for name, source in pairs if source in data}
    return [Patch(thread_id, fields, _status_meta(data, "status"))]


def thought_docs(event: Event) -> list[Op]:
    data = event.data
    meta = {"agent": _text(data.get("agent")), "thread_id": _text(data.get("thread_id"))}
    meta.update(_status_meta(data, "status", "thought_type"))
    return [Put(event.id, _fields(text=_text(data.get("content"))), meta)]


def thought_update_docs(event: Event) -> list[Op]:
    data = event.data
    thought_id = _text(data.get("thought_id"))
    if not thought_id:
        return []
    fields = {"text": _text(data["content"])} if "content" in data else {}
    return [Patch(thought_id, fields, _status_meta(data, "status", "thought_type"))]


# -- knowledge graph nodes (contextflow/graph) ----------------------------------------------
# Tags are set-like (graph.tag / graph.untag): each is its own field `tags.<tag>`, set to the
# tag to add it and to "" to remove it, so the latest add or removal wins per tag.


def _node_fields(data: dict[str, Any]) -> dict[str, str]:
    fields = {field: _text(data[key]) for field, key in (("text", "content"), ("summary", "summary")) if key in data}
    metadata = data.get("metadata")
    if isinstance(metadata, dict):
        for name, value in metadata.items():
            lines: list[str] = []
            _flatten(value, "", lines)
            fields[f"meta.{name}"] = _lines(lines)
    return fields


def _tag_ops(node_id: str, tags: Any, adding: bool) -> list[Op]:
    fields = {f"tags.{tag}": tag if adding else "" for tag in _texts(tags)}
    projects = [tag.split(":", 1)[1] for tag in fields if tag.startswith("tags.project:")]
    meta = {"project": projects[0] if adding else ""} if projects else {}
    return [Patch(node_id, fields, meta)] if fields else []


def node_docs(event: Event) -> list[Op]:
    data = event.data
    meta = {"agent": _text(data.get("agent")), **_status_meta(data, "type")}
    return [Put(event.id, _node_fields(data), meta), *_tag_ops(event.id, data.get("tags"), True)]


def node_update_docs(event: Event) -> list[Op]:
    node_id = _text(event.data.get("node"))
    return [Patch(node_id, _node_fields(event.data), _status_meta(event.data, "type"))] if node_id else []


def node_delete_docs(event: Event) -> list[Op]:
    node_id = _text(event.data.get("node"))
    return [Delete(node_id)] if node_id else []


def node_tag_docs(event: Event) -> list[Op]:
    node_id = _text(event.data.get("node"))
    return _tag_ops(node_id, event.data.get("tags"), event.kind == "graph.tag") if node_id else []


EXTRACTORS: dict[str, tuple[str, Extractor]] = {
    "note": ("note", note_docs),
    "handoff": ("handoff", handoff_docs),
    "conversation.save": ("conversation", conversation_docs),
    "context.set": ("context", context_set_docs),
    "context.delete": ("context", context_delete_docs),
    "timeline.thread": ("thread", thread_docs),
    "timeline.thread_update": ("thread", thread_update_docs),
    "timeline.thought": ("thought", thought_docs),
    "timeline.thought_update": ("thought", thought_update_docs),
    "graph.node": ("node", node_docs),
    "graph.node_update": ("node", node_update_docs),
    "graph.node_delete": ("node", node_delete_docs),
    "graph.tag": ("node", node_tag_docs),
    "graph.untag": ("node", node_tag_docs),
}


def search_kinds() -> tuple[str, ...]:
    """The kinds `get_context(kinds=...)` and `contextflow search --kind` accept."""
    return tuple(sorted({kind for kind, _ in EXTRACTORS.values()}))
