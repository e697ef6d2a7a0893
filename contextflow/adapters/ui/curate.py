"""The page's writes, each an ordinary append through the operations table: curating nodes and
records, marking a handoff wrong, adding a note, a record or a node. Attributed to `AGENT`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from contextflow.core import jsonio
from contextflow.core.errors import InputError
from contextflow.operations.spec import JSON

if TYPE_CHECKING:
    from contextflow.adapters.ui.api import Api

AGENT = "human"  # who the page's changes are attributed to (the CLI's default too)
TIERS = ("tier:pinned", "tier:reference", "tier:working", "tier:off-context")
NODE_CHANGES: dict[str, dict[str, list[str]]] = {
    "pin": {"add_tags": ["tier:pinned"], "remove_tags": ["tier:off-context"]},
    "unpin": {"remove_tags": ["tier:pinned"]},
    "archive": {"add_tags": ["tier:off-context"], "remove_tags": [t for t in TIERS if t != "tier:off-context"]},
    "unarchive": {"remove_tags": ["tier:off-context"]},
}


async def node(api: Api, body: JSON) -> Any:
    """pin, unpin, archive, unarchive, forget, or tags (add_tags / remove_tags)."""
    node_id, action = body.get("id"), body.get("action")
    if action == "forget":
        return await api.call("graph_update", {"id": node_id, "delete": True, "agent": AGENT})
    changes = NODE_CHANGES.get(str(action), {})
    if action == "tags":
        changes = {"add_tags": body.get("add_tags") or [], "remove_tags": body.get("remove_tags") or []}
    if not changes:
        raise InputError("action must be pin, unpin, archive, unarchive, forget or tags")
    given = {name: tags for name, tags in changes.items() if tags}
    return await api.call("graph_update", {"id": node_id, "agent": AGENT, **given})


async def record(api: Api, body: JSON) -> Any:
    """pin, unpin or forget a keyed context record."""
    key, project, action = body.get("key"), body.get("project"), body.get("action")
    if action == "forget":
        return await api.call("context_delete", {"key": key, "project": project, "agent": AGENT})
    if action not in ("pin", "unpin"):
        raise InputError("action must be pin, unpin or forget")
    found = await api.call("context_get", {"key": key, "project": project})
    return await api.call(
        "context_set",
        {"key": key, "project": project, "value": found["value"], "pinned": action == "pin", "agent": AGENT},
    )


async def mark_wrong(api: Api, body: JSON) -> Any:
    return await api.call(
        "mark_handoff_wrong", {"handoff_id": body.get("id"), "reason": body.get("reason"), "agent": AGENT}
    )


async def add_note(api: Api, body: JSON) -> Any:
    """A note in a project (and session, when given), as `append_shared_note` writes it."""
    arguments = {name: body.get(name) for name in ("project", "session_id", "text", "task")}
    if not str(body.get("text") or "").strip():
        raise InputError("write the note's text first")
    return await api.call("append_shared_note", {**arguments, "agent": AGENT}, unscoped=True)


async def add_record(api: Api, body: JSON) -> Any:
    """A keyed context record; its value is a JSON object, or plain text (kept as {"text": ...})."""
    raw = body.get("value")
    value: Any = raw
    if isinstance(raw, str) and not raw.strip():
        value = None
    elif isinstance(raw, str):
        try:
            value = jsonio.loads(raw) if raw.strip().startswith("{") else {"text": raw}
        except jsonio.DecodeError as exc:
            raise InputError(
                f'the value is not a JSON object ({exc}); write {{"name": "value"}} or plain text'
            ) from None
    if not value:
        raise InputError('give the record a value: plain text or a JSON object such as {"status": "open"}')
    arguments = {name: body.get(name) for name in ("key", "project", "label", "category")}
    return await api.call("context_set", {**arguments, "value": value, "agent": AGENT})


async def add_node(api: Api, body: JSON) -> Any:
    """A knowledge-graph node, as `graph_remember` stores it."""
    tags = body.get("tags")
    if isinstance(tags, str):
        tags = [tag.strip() for tag in tags.split(",") if tag.strip()]
    arguments = {"type": body.get("type"), "content": body.get("content"), "tags": tags or None}
    return await api.call("graph_remember", {**arguments, "agent": AGENT})
