"""From node and edge records to the `graph.*` events an import writes, each with a derived id.

For a format `f` and an item key `k`: the node's id is `derived_id(f, "node", k)` and its origin
`f:k`; its metadata carries `source_version`, a digest of the record, so a later import of the
same item knows whether the source changed since. Per record:

- no node with that id yet: a `graph.node` event (with that id);
- the node exists with the same `source_version`: nothing;
- the source changed: one `graph.node_update` (and a `graph.tag` for tags it gained), with ids
  derived from the new version, so importing that version again writes nothing;
- the node was deleted here: nothing (an import never brings back what someone deleted).

An edge's id derives from its ends, type and the source's names for it; an edge whose other end is
neither in the file nor already imported is left out and counted.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from contextflow.app import App
from contextflow.core.errors import InputError
from contextflow.core.ids import derived_id
from contextflow.core.text import clip
from contextflow.graph import model
from contextflow.graph.view import GraphState
from contextflow.graph.writes import edge_item, graph, node_item
from contextflow.imports.model import EdgeRecord, NodeRecord, Planned, Records, SourceError

VERSION_KEY = "source_version"  # in model.UNSEARCHED_METADATA: kept on the node, not in the search index
TICK = 1000


def node_id(fmt: str, key: str) -> str:
    return derived_id(fmt, "node", key)


def version(record: NodeRecord) -> str:
    raw = orjson.dumps(
        [record.type, record.content, record.summary, sorted(record.tags), record.metadata],
        option=orjson.OPT_SORT_KEYS,
    )
    return hashlib.blake2b(raw, digest_size=6).hexdigest()


def _label(record: NodeRecord) -> str:
    return f"{record.type} {clip(record.content.split(chr(10), 1)[0], 70)}"


class Planner:
    """Plans one file's records against the graph as it is now."""

    def __init__(
        self, app: App, fmt: str, file: Path | str, owner: dict[str, str] | None = None, labels: bool = True
    ) -> None:
        self.app, self.fmt, self.file = app, fmt, file
        self.labels = labels  # a line per event for --dry-run (an import that stores skips making them)
        self.owner = owner or {}  # item key -> the file it came from (for errors)
        self.events: list[Planned] = []
        self.present: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()

    def plan(self, records: Records, tick: Callable[[int], None] | None = None) -> list[Planned]:
        """The events that bring `records` into the store; `tick(n)` is told of every n records planned."""
        state = graph(self.app)
        nodes = {record.key: record for record in records.nodes}  # a key given twice: the last one counts
        if len(nodes) < len(records.nodes):
            self.skipped["repeated item"] += len(records.nodes) - len(nodes)
        self.skipped.update(records.skipped)
        edges = _merged(records.edges)
        versions = {key: version(record) for key, record in nodes.items()}
        ids = {key: node_id(self.fmt, key) for key in nodes}
        candidates = [*ids.values(), *(self._edge_id(edge) for edge in edges)]
        candidates += [derived_id(self.fmt, "delete", key) for key in records.deleted]
        known = self.app.store.known(candidates)
        updates = [self._update_id(key, versions[key]) for key, nid in ids.items() if nid in known]
        known |= self.app.store.known(updates)  # only a node imported before can have an update
        for done, (key, record) in enumerate(nodes.items(), start=1):
            self._node(state, record, ids[key], versions[key], known)
            if tick and done % TICK == 0:
                tick(TICK)
        here = set(ids)
        for edge in edges:
            self._edge(state, edge, here, known)
        if tick:
            tick(len(nodes) % TICK + len(edges))
        for key in records.deleted:
            self._delete(state, key, known)
        return self.events

    def _update_id(self, key: str, digest: str) -> str:
        return derived_id(self.fmt, "update", key, digest)

    def _edge_id(self, edge: EdgeRecord) -> str:
        return derived_id(self.fmt, "edge", edge.source, edge.target, edge.type, *edge.relations)

    def _checked(self, what: str, key: str, make: Any) -> tuple[str, dict[str, Any]]:
        try:
            kind, data = make()
        except InputError as exc:
            raise SourceError(self.owner.get(key, str(self.file)), f"{what} {key!r}: {exc}") from None
        return kind, data

    def _node(self, state: GraphState, record: NodeRecord, nid: str, digest: str, known: set[str]) -> None:
        metadata = {**record.metadata, VERSION_KEY: digest}
        if nid not in known:
            kind, data = self._checked(
                "item",
                record.key,
                lambda: node_item(
                    type=record.type,
                    content=record.content,
                    tags=record.tags,
                    metadata=metadata,
                    summary=record.summary,
                    agent=self.fmt,
                    origin=f"{self.fmt}:{record.key}",
                ),
            )
            self.events.append(Planned(nid, kind, data, "node", _label(record) if self.labels else ""))
            return
        node = state.node(nid)
        if node is None:
            self.skipped["deleted here"] += 1
            return
        update = self._update_id(record.key, digest)
        if node.metadata.get(VERSION_KEY) == digest or update in known:
            self.present["node"] += 1
            return
        kind, data = self._checked(
            "item",
            record.key,
            lambda: node_item(type=record.type, content=record.content, tags=record.tags, metadata=metadata),
        )
        change = {"node": nid, "type": data["type"], "content": data["content"], "summary": record.summary or ""}
        change["metadata"] = data["metadata"]
        self.events.append(Planned(update, model.NODE_UPDATE, change, "update", _label(record) if self.labels else ""))
        gained = [tag for tag in data["tags"] if tag not in state.tags_of(nid)]
        if gained:
            tag_id = derived_id(self.fmt, "tag", record.key, digest)
            self.events.append(Planned(tag_id, model.TAG, {"node": nid, "tags": gained}, "tag", ", ".join(gained)))

    def _edge(self, state: GraphState, edge: EdgeRecord, here: set[str], known: set[str]) -> None:
        source, target = node_id(self.fmt, edge.source), node_id(self.fmt, edge.target)
        ends = ((edge.source, source), (edge.target, target))
        if not all(key in here or state.node(nid) is not None for key, nid in ends):
            self.skipped["link to an item not imported"] += 1
            return
        eid = self._edge_id(edge)
        if eid in known:
            self.present["edge"] += 1
            return
        meta = {"relations": list(edge.relations)} if edge.relations else None
        kind, data = edge_item(source, target, edge.type, meta)
        self.events.append(Planned(eid, kind, data, "edge", f"{edge.source} -{edge.type}-> {edge.target}"))

    def _delete(self, state: GraphState, key: str, known: set[str]) -> None:
        nid = node_id(self.fmt, key)
        delete = derived_id(self.fmt, "delete", key)
        if state.node(nid) is None or delete in known:
            self.skipped["deleted in the source"] += 1
            return
        self.events.append(Planned(delete, model.NODE_DELETE, {"node": nid}, "delete", key))


def _merged(edges: list[EdgeRecord]) -> list[EdgeRecord]:
    """One record per (from, to, type), with the source's names for it together (sorted, once each)."""
    found: dict[tuple[str, str, str], set[str]] = {}
    for edge in edges:
        found.setdefault((edge.source, edge.target, edge.type), set()).update(edge.relations)
    return [EdgeRecord(s, t, kind, tuple(sorted(names))) for (s, t, kind), names in found.items()]
