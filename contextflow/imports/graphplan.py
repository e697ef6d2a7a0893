"""From node and edge records to the `graph.*` events an import writes, each with a derived id, an event
at a time: the records are read back from the stage (`stage.py`) in order, a chunk at a time, and only
their ids are checked against the graph's tables (`StoredGraph.known`, never a fold of the logs), read
whole (`ondisk.whole`: never a partial answer while they are built).

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

from collections import Counter
from collections.abc import Callable, Iterator
from itertools import islice
from typing import Any

from contextflow.app import App
from contextflow.core.ids import derived_id
from contextflow.core.text import clip
from contextflow.graph import model
from contextflow.graph.stored import StoredGraph
from contextflow.graph.writes import edge_item, graph
from contextflow.imports.model import EdgeRecord, Planned, SourceError
from contextflow.imports.stage import VERSION_KEY, EdgeRow, Stage, node_id, version

__all__ = ["VERSION_KEY", "Planner", "node_id", "version"]
CHUNK = 2000  # items whose ids are checked against the store together


def _label(data: dict[str, Any]) -> str:
    return f"{data['type']} {clip(str(data['content']).split(chr(10), 1)[0], 70)}"


def _chunks(rows: Iterator[Any]) -> Iterator[list[Any]]:
    while chunk := list(islice(rows, CHUNK)):
        yield chunk


class Planner:
    """Plans a staged import against the graph as it is now, an event at a time."""

    def __init__(self, app: App, fmt: str, labels: bool = True) -> None:
        self.app, self.fmt = app, fmt
        self.labels = labels  # a line per event for --dry-run (an import that stores skips making them)
        self.present: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()
        self.planned: Counter[str] = Counter()

    def plan(self, stage: Stage, tick: Callable[[int], None] | None = None) -> Iterator[Planned]:
        """The events that bring what `stage` holds into the store; `tick(n)` is told of every n items planned.
        A node the store refuses raises SourceError naming its file."""
        read = graph(self.app, whole=True).read  # one reading for the plan (a build moving meanwhile: read once)
        if stage.repeated:
            self.skipped["repeated item"] += stage.repeated
        self.skipped.update(stage.skipped)
        for chunk in _chunks(stage.nodes()):
            state = StoredGraph(read)  # (a chunk's: the nodes it loads are let go with it)
            known = state.known([row[0] for row in chunk])
            chunk = [stage.with_ids(row) if row[0] in known else row for row in chunk]
            known |= state.known([row[2] for row in chunk if row[0] in known])  # only a node imported before
            state.load(row[0] for row in chunk if row[0] in known)  # (in one query)
            for nid, digest, update, tag, data, error, file, body in chunk:
                if nid not in known and data is not None:  # a new node (a first import's every one)
                    label = _label(data) if self.labels else ""
                    yield self._counted(Planned(nid, model.NODE, data, "node", label, body))
                else:
                    yield from self._node(state, stage, nid, digest, update, tag, data, error, file, known)
            if tick:
                tick(len(chunk))
        for chunk in _chunks(stage.edges()):
            state = StoredGraph(read)
            ids = [self._edge_id(row.record) for row in chunk]
            known = state.known(ids)
            for row, eid in zip(chunk, ids, strict=True):
                yield from self._edge(state, row, eid, known)
            if tick:
                tick(len(chunk))
        for chunk in _chunks(stage.deleted()):
            state = StoredGraph(read)
            known = state.known([row[1] for row in chunk])
            for nid, delete, key in chunk:
                if state.node(nid) is None or delete in known:
                    self.skipped["deleted in the source"] += 1
                    continue
                yield self._counted(Planned(delete, model.NODE_DELETE, {"node": nid}, "delete", key))

    def _counted(self, event: Planned) -> Planned:
        self.planned[event.what] += 1
        return event

    def _edge_id(self, edge: EdgeRecord) -> str:
        return derived_id(self.fmt, "edge", edge.source, edge.target, edge.type, *edge.relations)

    def _node(
        self,
        state: StoredGraph,
        stage: Stage,
        nid: str,
        digest: str,
        update: str,
        tag: str,
        data: dict[str, Any] | None,
        error: str,
        file: int,
        known: set[str],
    ) -> Iterator[Planned]:
        """A node known here (or refused): nothing, or its update and tags."""
        if nid in known:
            node = state.node(nid)
            if node is None:
                self.skipped["deleted here"] += 1
                return
            if node.metadata.get(VERSION_KEY) == digest or update in known:
                self.present["node"] += 1
                return
        if data is None:  # a record the store refuses: its file is left out
            raise SourceError(stage.files[file], error)
        label = _label(data) if self.labels else ""
        change = {"node": nid, "type": data["type"], "content": data["content"], "summary": data.get("summary", "")}
        change["metadata"] = data["metadata"]
        if "redacted" in data:
            change["redacted"] = data["redacted"]
        yield self._counted(Planned(update, model.NODE_UPDATE, change, "update", label))
        gained = [name for name in data["tags"] if name not in state.tags_of(nid)]
        if gained:
            yield self._counted(Planned(tag, model.TAG, {"node": nid, "tags": gained}, "tag", ", ".join(gained)))

    def _edge(self, state: StoredGraph, row: EdgeRow, eid: str, known: set[str]) -> Iterator[Planned]:
        edge = row.record
        ends = ((row.source_here, row.source), (row.target_here, row.target))
        if not all(here or state.node(nid) is not None for here, nid in ends):
            self.skipped["link to an item not imported"] += 1
            return
        if eid in known:
            self.present["edge"] += 1
            return
        meta = {"relations": list(edge.relations)} if edge.relations else None
        kind, data = edge_item(row.source, row.target, edge.type, meta)
        yield self._counted(Planned(eid, kind, data, "edge", f"{edge.source} -{edge.type}-> {edge.target}"))
