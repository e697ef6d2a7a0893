"""What a knowledge graph node adds to the search index (contextflow.search.extractors)."""

from __future__ import annotations

from typing import Any

from contextflow.core.events import Event
from contextflow.graph import model as graph
from contextflow.search.docs import Op, Patch, Put
from contextflow.search.extractors import Extractors, delete, flatten, lines, status_meta, text_of, texts_of

# Tags are set-like (graph.tag / graph.untag): each is its own field `tags.<tag>`, set to the
# tag to add it and to "" to remove it, so the latest add or removal wins per tag.


def _node_fields(data: dict[str, Any]) -> dict[str, str]:
    fields = {field: text_of(data[key]) for field, key in (("text", "content"), ("summary", "summary")) if key in data}
    metadata = data.get("metadata")
    if isinstance(metadata, dict):
        fields.update(
            (f"meta.{name}", lines(flatten(value)))
            for name, value in metadata.items()
            if name not in graph.UNSEARCHED_METADATA
        )
    return fields


def _tag_ops(node_id: str, tags: Any, adding: bool) -> list[Op]:
    fields = {f"tags.{tag}": tag if adding else "" for tag in texts_of(tags)}
    projects = [tag.split(":", 1)[1] for tag in fields if tag.startswith("tags.project:")]
    meta = {"project": projects[0] if adding else ""} if projects else {}
    return [Patch(node_id, fields, meta)] if fields else []


def node_docs(event: Event) -> list[Op]:
    """One Put with the node's tags in it: the same document as a Put and a tag Patch of the same
    event would give, indexed once."""
    data = event.data
    fields = _node_fields(data)
    meta = {"agent": text_of(data.get("agent")), **status_meta(data, "type")}
    for op in _tag_ops(event.id, data.get("tags"), True):
        if isinstance(op, Patch):
            fields.update(op.fields)
            meta.update(op.meta)
    return [Put(event.id, fields, meta)]


def node_update_docs(event: Event) -> list[Op]:
    node_id = text_of(event.data.get("node"))
    return [Patch(node_id, _node_fields(event.data), status_meta(event.data, "type"))] if node_id else []


def node_tag_docs(event: Event) -> list[Op]:
    node_id = text_of(event.data.get("node"))
    return _tag_ops(node_id, event.data.get("tags"), event.kind == graph.TAG) if node_id else []


EXTRACTORS: Extractors = {
    graph.NODE: ("node", node_docs),
    graph.NODE_UPDATE: ("node", node_update_docs),
    graph.NODE_DELETE: ("node", delete("node")),
    graph.TAG: ("node", node_tag_docs),
    graph.UNTAG: ("node", node_tag_docs),
}
