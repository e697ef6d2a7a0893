"""Moving knowledge in and out: export to JSON, import (optionally merging), ingest a file.

An export holds nodes (with their ids, tags and provenance), the edges between them and
the saved views. Importing appends, in one write, the new nodes (each with an id derived from
the id it came from, which it keeps as `origin`), the edges between them and the views. A node
whose id or origin is already known here is present and skipped, so importing the same export
twice, or back into the store it came from, writes nothing. A view of the same name with another
query, or a node here whose content differs, stops the import unless `merge` (then the local one stays).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextflow import __version__
from contextflow.app import App
from contextflow.core import hashing
from contextflow.core.clock import stamp_from_ms, stamp_iso
from contextflow.core.errors import InputError, NotFoundError
from contextflow.core.ids import derived_id, new_id
from contextflow.core.projections import chunks, marks
from contextflow.core.timeutil import now_ms
from contextflow.graph import inbound, model, stored
from contextflow.graph.query import parse
from contextflow.graph.stored import StoredGraph
from contextflow.graph.view import Node
from contextflow.graph.writes import edge_item, graph, node_item

FORMAT = "contextflow-graph"
VERSION = 1


def export_graph(app: App, query: str | None = None) -> dict[str, Any]:
    state = graph(app, whole=True)  # a file is whole or it is no export
    ids = state.matching(parse(query), now_ms()) if query else set(state.live)
    chosen = sorted(state.many(ids), key=lambda node: node.created_key)  # (read together)
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
    nodes_differing: int = 0  # present here with other content: kept as they are here (--merge)
    id_map: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))

    def text(self) -> str:
        return (
            f"Imported {self.nodes_added} node(s), {self.edges_added} edge(s), {self.views_added} view(s); "
            f"already present: {self.nodes_present} node(s), {self.edges_present} edge(s), "
            f"{self.views_present} view(s)."
            + (f" Kept {self.nodes_differing} node(s) as they are here (--merge)." if self.nodes_differing else "")
        )


def _differs(here: Node | None, exported: dict[str, Any]) -> bool:
    """Whether an exported node says something else than the same node here (its type or content)."""
    content = exported.get("content")
    if here is None or not isinstance(content, str):
        return False
    return content.strip() != here.content.strip() or exported.get("type") not in (None, here.type)


def _local_id(state: StoredGraph, exported_id: str, origin: str | None, origins: dict[str, str]) -> str | None:
    """The node here that is the exported one (same id, same origin, or imported from it); `origins`: the
    first node made from each key as an origin (`_origins`)."""
    for key in (exported_id, origin):
        if not key:
            continue
        if key in state.nodes and state.nodes[key].exists:
            return key
        found = origins.get(key)
        if found is not None:
            return found
    return None


def _origins(state: StoredGraph, keys: list[str]) -> dict[str, str]:
    """For each of `keys` that some node came from, the first such node (`StoredGraph.origin` of each), found
    in one query per chunk of keys: a query per node read the whole node table each time (1.6 s for 7,000)."""
    found: dict[str, str] = {}
    for part in chunks(list(dict.fromkeys(keys))):
        sql = f"SELECT origin, min(id) FROM graph_nodes WHERE origin IN ({marks(len(part))}) GROUP BY origin"
        found.update((str(origin), str(first)) for origin, first in state.read.query(sql, part))
    return found


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


def plan_import(app: App, doc: Any, *, merge: bool = False) -> tuple[Imported, list[tuple[str, str, dict[str, Any]]]]:
    """What importing `doc` would write, as (id, kind, data), and its counts. New nodes get ids
    derived from the exported node's origin (or id), edges and views from what they join, so the
    same export imported twice, or on two machines of one store, writes each thing once."""
    nodes, edges, views = _check_document(doc)
    state = graph(app, whole=True)
    result = Imported()
    planned: list[tuple[str, str, dict[str, Any]]] = []
    differing: list[str] = []
    keys = [key for node in nodes for key in (node.get("id"), node.get("origin")) if isinstance(key, str) and key]
    state.load(keys)  # (the nodes of those ids, a query a chunk, not one each)
    origins = _origins(state, keys)
    for index, node in enumerate(nodes):
        exported_id = node.get("id")
        if not isinstance(exported_id, str) or not exported_id:
            raise InputError(f"nodes[{index}] has no id")
        origin = node.get("origin") if isinstance(node.get("origin"), str) else None
        local = _local_id(state, exported_id, origin, origins)
        if local is not None:
            result.id_map[exported_id] = local
            if _differs(state.nodes.get(local), node):
                differing.append(exported_id)
            else:
                result.nodes_present += 1
            continue
        try:
            kind, data = node_item(
                type=inbound.node_type(node.get("type")),
                content=inbound.text(node.get("content"), "content") or "",
                tags=inbound.tags(node.get("tags")),
                metadata=inbound.metadata(node.get("metadata")),
                summary=inbound.text(node.get("summary"), "summary"),
                agent=inbound.text(node.get("agent"), "agent") or "import",
                origin=origin or exported_id,
            )
        except InputError as exc:
            raise InputError(f"nodes[{index}] ({exported_id}): {exc}; nothing was imported") from None
        new_id = derived_id(FORMAT, "node", origin or exported_id)
        result.id_map[exported_id] = new_id
        planned.append((new_id, kind, data))
    if differing and not merge:
        raise InputError(
            f"{len(differing)} node(s) of this export are here with other content (e.g. {differing[0]}): a plain "
            "import stops on a conflict and stored nothing. Import with --merge to keep the versions here and "
            "import the rest, or update the nodes here first"
        )
    result.nodes_differing = len(differing)
    result.nodes_added = len(planned)
    edge_items: list[tuple[str, str, dict[str, Any]]] = []
    for edge in edges:
        source, target = result.id_map.get(str(edge.get("from"))), result.id_map.get(str(edge.get("to")))
        edge_type = str(edge.get("type"))
        if not source or not target or edge_type not in model.EDGE_TYPES:
            continue
        if state.edge_live(source, target, edge_type):
            result.edges_present += 1
            continue
        meta = edge.get("metadata") if isinstance(edge.get("metadata"), dict) else None
        edge_items.append(
            (derived_id(FORMAT, "edge", source, target, edge_type), *edge_item(source, target, edge_type, meta))
        )
    view_items = [
        (derived_id(FORMAT, "view", data["name"], data["query"], str(data["budget"])), kind, data)
        for kind, data in _view_items(state, views, merge, result)
    ]
    known = stored.known(app, (item[0] for item in edge_items + view_items))
    result.edges_present += sum(1 for item in edge_items if item[0] in known)
    result.views_present += sum(1 for item in view_items if item[0] in known)
    fresh = [item for item in edge_items + view_items if item[0] not in known]
    result.edges_added = sum(1 for item in fresh if item[1] == model.EDGE)
    result.views_added = len(fresh) - result.edges_added
    return result, planned + fresh


def _view_items(
    state: StoredGraph,
    views: list[dict[str, Any]],
    merge: bool,
    result: Imported,
) -> list[tuple[str, dict[str, Any]]]:
    items: list[tuple[str, dict[str, Any]]] = []
    for view in views:
        name = model.view_name(inbound.text(view.get("name"), "name") or "")
        query, amount = str(view.get("query") or ""), inbound.budget(view.get("budget"))
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
    return items


@dataclass(frozen=True)
class Ingested:
    id: str
    created: bool
    replaced: str | None
    parts: tuple[str, ...] = ()  # a file over the content limit: its parts after the first, each CHILD_OF it


def ingest_file(app: App, path: str | Path, *, tags: list[str] | None = None, agent: str | None = None) -> Ingested:
    """The file as a `source` node. The same unchanged file again returns its node; a changed one supersedes it."""
    if not str(path).strip():
        raise InputError("ingest needs the path of a text file")
    file = Path(path).expanduser().absolute()
    from contextflow.imports.files import check_given  # a FIFO or device is refused, never waited on

    try:
        check_given(file)
        raw = file.read_bytes()
    except FileNotFoundError:
        raise NotFoundError(f"cannot read {file}: no such file; pass the path of a readable text file") from None
    except OSError as exc:
        raise InputError(f"cannot read {file}: {exc.strerror or exc}; pass the path of a readable text file") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{file} is not UTF-8 text; only text files can be ingested") from None
    digest = hashing.sha256(raw).hexdigest()
    state = graph(app)
    previous: list[str] = []  # the file's current node (each part of it), superseded by the new one
    for node_id in sorted(state.of_type("source")):
        node = state.nodes[node_id]
        if node.metadata.get("path") == str(file) and not state.superseded_by(node_id):
            if node.metadata.get("sha256") == digest and node.metadata.get("part", 1) == 1:
                return Ingested(node_id, False, None)
            previous.append(node_id)
    meta: dict[str, Any] = {"path": str(file), "name": file.name, "bytes": len(raw), "sha256": digest}
    pieces = split_text(text, model.MAX_CONTENT_CHARS)
    ids = [new_id() for _ in pieces]
    items = []
    for number, piece in enumerate(pieces, 1):
        links = [(old, "SUPERSEDES") for old in previous] if number == 1 else [(ids[0], "CHILD_OF")]
        part = {"part": number, "parts": len(pieces)} if len(pieces) > 1 else {}
        items.append(
            node_item(type="source", content=piece, tags=tags, metadata={**meta, **part}, agent=agent, links=links)
        )
    app.store.append_many(items, ids=ids)  # all parts or none
    first = previous[0] if previous else None
    return Ingested(ids[0], True, first, tuple(ids[1:]))


def split_text(text: str, limit: int) -> list[str]:
    """`text` in parts of at most `limit` characters, cut at a line break in the last quarter of each
    (the break itself dropped: the parts joined by line breaks are the file), else at the limit."""
    parts: list[str] = []
    while len(text) > limit:
        cut = text.rfind("\n", limit * 3 // 4, limit)
        parts.append(text[: cut if cut > 0 else limit])
        text = text[cut + 1 if cut > 0 else limit :]
    return [*parts, text]
