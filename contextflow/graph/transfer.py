"""Moving knowledge in and out: export to JSON, import (optionally merging), ingest a file.

An export holds nodes (with their ids, tags and provenance), the edges between them and
the saved views. Importing appends new nodes (new ids; each remembers the id it came
from as `origin`) and then the edges between them. A node whose id or origin is already
known here counts as present: without `merge` that is a conflict and nothing is written;
with `merge` it is skipped, so importing the same export twice changes nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextflow import __version__
from contextflow.app import App
from contextflow.core.clock import stamp_from_ms, stamp_iso
from contextflow.core.errors import InputError
from contextflow.core.events import Event
from contextflow.core.timeutil import now_ms
from contextflow.graph import model
from contextflow.graph.query import evaluate, parse
from contextflow.graph.view import GraphState
from contextflow.graph.writes import edge_item, graph, node_item

FORMAT = "contextflow-graph"
VERSION = 1


def export_graph(app: App, query: Any = None) -> dict[str, Any]:
    if query is not None and not isinstance(query, str):
        raise InputError("query must be a string")
    state = graph(app)
    ids = evaluate(parse(query), state, now_ms()) if query else state.live
    chosen = sorted((state.nodes[i] for i in ids), key=lambda node: node.created_key)
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": stamp_iso(stamp_from_ms(now_ms())),
        "exported_by": f"contextflow {__version__}",
        "query": query or None,
        "nodes": [
            {
                "id": node.id,
                "type": node.type,
                "content": node.content,
                "summary": node.summary or None,
                "metadata": node.metadata,
                "tags": sorted(state.tags_of(node.id)),
                "agent": node.agent or None,
                "writer": node.writer,
                "origin": node.origin or None,
                "created_at": node.created_at,
                "updated_at": node.updated_at,
            }
            for node in chosen
        ],
        "edges": [edge.as_dict() for edge in state.all_edges() if edge.source in ids and edge.target in ids],
        "views": [view.as_dict() for view in state.saved_views()],
    }


@dataclass
class Imported:
    nodes_added: int = 0
    nodes_present: int = 0
    edges_added: int = 0
    edges_present: int = 0
    views_added: int = 0
    views_present: int = 0
    id_map: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))

    def text(self) -> str:
        return (
            f"Imported {self.nodes_added} node(s), {self.edges_added} edge(s), {self.views_added} view(s); "
            f"already present: {self.nodes_present} node(s), {self.edges_present} edge(s), "
            f"{self.views_present} view(s)."
        )


def _local_id(state: GraphState, exported_id: str, origin: str | None) -> str | None:
    """The node here that is the exported one (same id, same origin, or imported from it)."""
    for key in (exported_id, origin):
        if not key:
            continue
        if key in state.nodes and state.nodes[key].exists:
            return key
        if key in state.origins:
            return state.origins[key]
    return None


def _check_document(doc: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InputError(f'not a contextflow graph export: expected a JSON object with "format": "{FORMAT}"')
    if doc.get("version") != VERSION:
        raise InputError(f"export version {doc.get('version')!r} is not supported; this contextflow reads {VERSION}")
    parts = []
    for name in ("nodes", "edges", "views"):
        value = doc.get(name) or []
        if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
            raise InputError(f"export field {name!r} must be a list of objects")
        parts.append(value)
    return parts[0], parts[1], parts[2]


def import_graph(app: App, doc: Any, *, merge: bool = False) -> Imported:
    nodes, edges, views = _check_document(doc)
    state = graph(app)
    result = Imported()
    new_items: list[tuple[str, dict[str, Any]]] = []
    new_keys: list[str] = []
    conflicts: list[str] = []
    for index, node in enumerate(nodes):
        exported_id = node.get("id")
        if not isinstance(exported_id, str) or not exported_id:
            raise InputError(f"nodes[{index}] has no id")
        origin = node.get("origin") if isinstance(node.get("origin"), str) else None
        local = _local_id(state, exported_id, origin)
        if local is not None:
            result.id_map[exported_id] = local
            result.nodes_present += 1
            conflicts.append(exported_id)
            continue
        try:
            item = node_item(
                type=node.get("type"),
                content=node.get("content"),
                tags=node.get("tags"),
                metadata=node.get("metadata"),
                summary=node.get("summary"),
                agent=node.get("agent") or "import",
                origin=origin or exported_id,
            )
        except InputError as exc:
            raise InputError(f"nodes[{index}] ({exported_id}): {exc}; nothing was imported") from None
        new_items.append(item)
        new_keys.append(exported_id)
    if conflicts and not merge:
        shown = ", ".join(conflicts[:5]) + (" ..." if len(conflicts) > 5 else "")
        raise InputError(
            f"{len(conflicts)} node(s) of this export are already here ({shown}); "
            "import with --merge to skip them and add the rest. Nothing was imported"
        )
    view_items = _view_items(state, views, merge, result)
    created: list[Event] = app.store.append_many(new_items) if new_items else []
    for exported_id, event in zip(new_keys, created, strict=True):
        result.id_map[exported_id] = event.id
    result.nodes_added = len(created)
    state = graph(app)
    edge_items = []
    for edge in edges:
        source, target = result.id_map.get(str(edge.get("from"))), result.id_map.get(str(edge.get("to")))
        kind = edge.get("type")
        if not source or not target or kind not in model.EDGE_TYPES:
            continue
        if state.edge_live(source, target, str(kind)):
            result.edges_present += 1
            continue
        meta = edge.get("metadata") if isinstance(edge.get("metadata"), dict) else None
        edge_items.append(edge_item(source, target, str(kind), meta))
    if edge_items or view_items:
        app.store.append_many(edge_items + view_items)
    result.edges_added = len(edge_items)
    return result


def _view_items(
    state: GraphState,
    views: list[dict[str, Any]],
    merge: bool,
    result: Imported,
) -> list[tuple[str, dict[str, Any]]]:
    items: list[tuple[str, dict[str, Any]]] = []
    for view in views:
        name = model.view_name(view.get("name"))
        query, amount = str(view.get("query") or ""), model.budget(view.get("budget"))
        parse(query)
        existing = state.saved_view(name)
        if existing is not None:
            if (existing.query, existing.budget) != (query, amount) and not merge:
                raise InputError(
                    f"view {name!r} exists here with another query; import with --merge to keep the local one. "
                    "Nothing was imported"
                )
            result.views_present += 1
            continue
        items.append((model.VIEW, {"name": name, "query": query, "budget": amount}))
    result.views_added = len(items)
    return items


@dataclass(frozen=True)
class Ingested:
    id: str
    created: bool
    replaced: str | None


def ingest_file(app: App, path: Any, *, tags: Any = None, agent: Any = None) -> Ingested:
    """The file as a `source` node. The same unchanged file again returns its node; a changed one supersedes it."""
    if not isinstance(path, str | Path) or not str(path).strip():
        raise InputError("ingest needs the path of a text file")
    file = Path(path).expanduser().absolute()
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {file}: {exc.strerror or exc}; pass the path of a readable text file") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{file} is not UTF-8 text; only text files can be ingested") from None
    digest = hashlib.sha256(raw).hexdigest()
    state = graph(app)
    previous = None
    for node_id in state.by_type.get("source", set()) & state.live:
        node = state.nodes[node_id]
        if node.metadata.get("path") == str(file) and not state.superseded_by(node_id):
            if node.metadata.get("sha256") == digest:
                return Ingested(node_id, False, None)
            previous = node_id
    meta = {"path": str(file), "name": file.name, "bytes": len(raw), "sha256": digest}
    links = [(previous, "SUPERSEDES")] if previous else None
    item = node_item(type="source", content=text, tags=tags, metadata=meta, agent=agent, links=links)
    event = app.store.append(*item)
    return Ingested(event.id, True, previous)
