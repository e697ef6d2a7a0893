"""Extractors: what each kind of event adds to, changes in or removes from the search index.

An extractor is a pure function of one event returning index operations (`Put`, `Patch`,
`Delete`). `EXTRACTORS` maps an event kind to (search kind, extractor); the search kind is
what `--kind` and `kinds=[...]` filter on. To make a new kind searchable, add one entry there
(most kinds are built by `_put`, `_patch` and `_delete` from the event fields they read).

Extractors read stored data written by any version on any machine, so they accept missing
or odd fields quietly (`_text`, `_texts`) instead of failing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from contextflow.capture import view as capture
from contextflow.conversations import view as conversations
from contextflow.core.events import Event
from contextflow.core.project import project_of
from contextflow.core.timeutil import iso_ms
from contextflow.graph import model as graph
from contextflow.records import view as records
from contextflow.search.index import Delete, Op, Patch, Put
from contextflow.sessions import view as sessions
from contextflow.sessions.view import session_of
from contextflow.timeline import view as timeline

Extractor = Callable[[Event], list[Op]]


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _texts(value: Any) -> list[str]:
    items = [value] if isinstance(value, str) else _list(value)
    return [item.strip() for item in items if isinstance(item, str) and item.strip()]


def _lines(items: Iterable[str]) -> str:
    return "\n".join(items)


def _fields(**named: str) -> dict[str, str]:
    return {name: text for name, text in named.items() if text}


def _status_meta(data: dict[str, Any], *names: str) -> dict[str, Any]:
    return {name: data[name] for name in names if isinstance(data.get(name), str) and data[name]}


def _put(
    texts: dict[str, str], lists: tuple[str, ...] = (), meta: tuple[str, ...] = ("agent",), status: tuple[str, ...] = ()
) -> Extractor:
    """The event's own document: index fields from event fields (`texts`: field -> key; `lists`: list
    fields of the same name, one item a line), `meta` fields as text (`project` defaults to `shared`)
    and `status` fields when set."""

    def extract(event: Event) -> list[Op]:
        data = event.data
        fields = {name: _text(data.get(key)) for name, key in texts.items()}
        fields.update((name, _lines(_texts(data.get(name)))) for name in lists)
        found = {name: project_of(event) if name == "project" else _text(data.get(name)) for name in meta}
        return [Put(event.id, _fields(**fields), {**found, **_status_meta(data, *status)})]

    return extract


def _patch(ref: str, texts: dict[str, str], status: tuple[str, ...]) -> Extractor:
    """An update of the document the event field `ref` names: the fields the event carries, and `status`."""

    def extract(event: Event) -> list[Op]:
        data = event.data
        target = _text(data.get(ref))
        fields = {name: _text(data[key]) for name, key in texts.items() if key in data}
        return [Patch(target, fields, _status_meta(data, *status))] if target else []

    return extract


def _delete(ref: str) -> Extractor:
    def extract(event: Event) -> list[Op]:
        target = _text(event.data.get(ref))
        return [Delete(target)] if target else []

    return extract


# -- conversations (contextflow/conversations/core.py) -------------------------------------------


def conversation_docs(event: Event) -> list[Op]:
    """One document per conversation: its enriched text, topics included (the seed's decomposer)."""
    data = event.data
    conversation_id = _text(data.get("conversation_id"))
    if not conversation_id:
        return []
    parts = [data, *(t for t in data.get("topics") or [] if isinstance(t, dict))]

    def every(name: str) -> list[str]:  # a list field of the record and of each topic
        return [text for part in parts for text in _texts(part.get(name))]

    decisions = [item for part in parts for item in _list(part.get("decisions")) if isinstance(item, dict)]
    statements = []
    for item in decisions:
        if statement := _text(item.get("decision")):
            statements.append(("rejected: " if item.get("status") == "rejected" else "") + statement)
    summaries = [*(part.get("summary") for part in parts), data.get("overall_summary")]
    fields = _fields(
        title=_lines(_texts([part.get("topic") for part in parts])),
        tags=_lines(dict.fromkeys(every("categories"))),
        entities=_lines(dict.fromkeys(every("related_entities"))),
        decisions=_lines(statements),
        reasoning=_lines(_texts([item.get("reasoning") for item in decisions])),
        open_questions=_lines(every("open_questions")),
        summary=_lines(_texts(summaries) + _texts(data.get("cross_topic_insights"))),
    )
    meta = {"project": project_of(event), "agent": _text(data.get("source")), "session_id": session_of(event)}
    return [Put(conversation_id, fields, meta)]


# -- keyed context records (contextflow/records/core.py) -----------------------------------------


MAX_VALUE_LINES = 200


def _flatten(value: Any, prefix: str = "", out: list[str] | None = None) -> list[str]:
    """`value` as `path.to.field: value` lines, at most MAX_VALUE_LINES."""
    out = [] if out is None else out
    if len(out) >= MAX_VALUE_LINES:
        return out
    if isinstance(value, dict):
        for name, item in value.items():
            _flatten(item, f"{prefix}.{name}" if prefix else str(name), out)
    elif isinstance(value, list):
        for item in value:
            _flatten(item, prefix, out)
    elif value is not None and not isinstance(value, bool):
        out.append(f"{prefix}: {value}" if prefix else str(value))
    return out


def context_set_docs(event: Event) -> list[Op]:
    data = event.data
    key = _text(data.get("key"))
    if not key:
        return []
    value = _lines(_flatten(data.get("value")))
    fields = _fields(title=_text(data.get("label")), key=key, value=value, tags=_text(data.get("category")))
    return [Put(key, fields, {"agent": _text(data.get("agent")), "expires_ms": iso_ms(data.get("expires_at"))})]


# -- knowledge graph nodes (contextflow/graph) ----------------------------------------------
# Tags are set-like (graph.tag / graph.untag): each is its own field `tags.<tag>`, set to the
# tag to add it and to "" to remove it, so the latest add or removal wins per tag.


def _node_fields(data: dict[str, Any]) -> dict[str, str]:
    fields = {field: _text(data[key]) for field, key in (("text", "content"), ("summary", "summary")) if key in data}
    metadata = data.get("metadata")
    if isinstance(metadata, dict):
        fields.update(
            (f"meta.{name}", _lines(_flatten(value)))
            for name, value in metadata.items()
            if name not in graph.UNSEARCHED_METADATA
        )
    return fields


def _tag_ops(node_id: str, tags: Any, adding: bool) -> list[Op]:
    fields = {f"tags.{tag}": tag if adding else "" for tag in _texts(tags)}
    projects = [tag.split(":", 1)[1] for tag in fields if tag.startswith("tags.project:")]
    meta = {"project": projects[0] if adding else ""} if projects else {}
    return [Patch(node_id, fields, meta)] if fields else []


def node_docs(event: Event) -> list[Op]:
    """One Put with the node's tags in it: the same document as a Put and a tag Patch of the same
    event would give, indexed once."""
    data = event.data
    fields = _node_fields(data)
    meta = {"agent": _text(data.get("agent")), **_status_meta(data, "type")}
    for op in _tag_ops(event.id, data.get("tags"), True):
        if isinstance(op, Patch):
            fields.update(op.fields)
            meta.update(op.meta)
    return [Put(event.id, fields, meta)]


def node_update_docs(event: Event) -> list[Op]:
    node_id = _text(event.data.get("node"))
    return [Patch(node_id, _node_fields(event.data), _status_meta(event.data, "type"))] if node_id else []


def node_tag_docs(event: Event) -> list[Op]:
    node_id = _text(event.data.get("node"))
    return _tag_ops(node_id, event.data.get("tags"), event.kind == graph.TAG) if node_id else []


# -- captured turns (contextflow/capture) ----------------------------------------------------


def capture_turn_docs(event: Event) -> list[Op]:
    """One document per captured turn: the request, final message, files, commands and errors."""
    turn = event.data.get("turn")
    if not isinstance(turn, dict):
        return []
    files = turn["files"] if isinstance(turn.get("files"), dict) else {}
    commands = [c.get("command") for c in _list(turn.get("commands")) if isinstance(c, dict)]
    fields = _fields(
        title=_text(turn.get("request")),
        text=_text(turn.get("final")),
        files=_lines(dict.fromkeys(path for kind in ("created", "edited", "read") for path in _texts(files.get(kind)))),
        commands=_lines(_texts(commands)),
        errors=_lines(_texts(turn.get("errors"))),
    )
    meta = {"project": project_of(event), "agent": _text(event.data.get("agent")), "session_id": session_of(event)}
    return [Put(event.id, fields, meta)]


_THREAD = {"title": "name", "text": "description"}
_THOUGHT = {"text": "content"}
_SESSION = ("project", "agent", "session_id")

EXTRACTORS: dict[str, tuple[str, Extractor]] = {
    sessions.NOTE: ("note", _put({"title": "task", "text": "text"}, ("tags",), _SESSION)),
    sessions.HANDOFF: (
        "handoff",
        _put({"title": "task", "summary": "summary"}, ("next_steps", "open_questions", "files"), _SESSION),
    ),
    conversations.SAVE_KIND: ("conversation", conversation_docs),
    capture.TURN_KIND: ("activity", capture_turn_docs),
    records.SET_KIND: ("context", context_set_docs),
    records.DELETE_KIND: ("context", _delete("key")),
    timeline.THREAD: ("thread", _put(_THREAD, status=("status",))),
    timeline.THREAD_UPDATE: ("thread", _patch("thread_id", _THREAD, ("status",))),
    timeline.THOUGHT: ("thought", _put(_THOUGHT, meta=("agent", "thread_id"), status=("status", "thought_type"))),
    timeline.THOUGHT_UPDATE: ("thought", _patch("thought_id", _THOUGHT, ("status", "thought_type"))),
    graph.NODE: ("node", node_docs),
    graph.NODE_UPDATE: ("node", node_update_docs),
    graph.NODE_DELETE: ("node", _delete("node")),
    graph.TAG: ("node", node_tag_docs),
    graph.UNTAG: ("node", node_tag_docs),
}


def search_kinds() -> tuple[str, ...]:
    """The kinds `get_context(kinds=...)` and `contextflow search --kind` accept."""
    return tuple(sorted({kind for kind, _ in EXTRACTORS.values()}))
