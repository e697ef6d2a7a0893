"""The graph's state in tables (a folding `Projection`, core/projections.py): each node, tag, edge and saved
view as the pure fold (`graph/view.py`) leaves it, so a graph call reads the rows it touches
(`graph/stored.py`) instead of folding every `graph.*` event.

The catch-up (core/catchup.py) hands it each chunk's `graph.*` events, inside its transaction: a
chunk is folded by loading the rows its events touch into an empty `GraphState`, applying the events
with `GraphView.apply` itself, and writing those rows back: every value is last-writer-wins by event
key (an event applied twice changes nothing), so the rows equal the whole fold's whatever the chunks.
Columns beside each row's state (`data`, `mark`) are what queries filter and order on. `graph_events` holds the
ids of the events of the kinds an import writes (`KNOWN_KINDS`), so an import learns which of its items are here
(imported before, deleted since) from a lookup (`stored.known`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from contextflow.core import hashing, jsonio
from contextflow.core.clock import COUNTER_BITS
from contextflow.core.events import Event, OrderKey
from contextflow.core.formats import Format
from contextflow.core.projections import CHUNK, Projection, Writer, chunks, db_stamp, marks, merged_by
from contextflow.core.scan import overwritten

if TYPE_CHECKING:  # (imported when a chunk is folded or a row read: a session start that reads no graph imports none)
    from contextflow.graph.view import EdgeKey, GraphState, Mark, Node

SCHEMA = (
    """CREATE TABLE graph_nodes(
    id TEXT PRIMARY KEY, live INTEGER NOT NULL, type TEXT NOT NULL, tokens INTEGER NOT NULL,
    summary INTEGER NOT NULL, created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL, hlc INTEGER NOT NULL,
    w TEXT NOT NULL, seq INTEGER NOT NULL, origin TEXT NOT NULL, dedupe BLOB NOT NULL, who TEXT NOT NULL,
    shortest INTEGER NOT NULL, project TEXT NOT NULL) WITHOUT ROWID""",  # project: its creation's ('' for none yet)
    # (apart: a scan of the nodes' columns never reads their text)
    "CREATE TABLE graph_node_text(id TEXT PRIMARY KEY, lower TEXT NOT NULL, data BLOB NOT NULL) WITHOUT ROWID",
    "CREATE INDEX graph_nodes_dedupe ON graph_nodes(dedupe)",
    "CREATE INDEX graph_nodes_live ON graph_nodes(live, hlc, w, seq)",
    "CREATE INDEX graph_nodes_type ON graph_nodes(type, live)",
    "CREATE INDEX graph_nodes_origin ON graph_nodes(origin) WHERE origin != ''",
    """CREATE TABLE graph_tags(node TEXT NOT NULL, tag TEXT NOT NULL, "on" INTEGER NOT NULL, mark BLOB NOT NULL,
    PRIMARY KEY(node, tag)) WITHOUT ROWID""",
    'CREATE INDEX graph_tags_tag ON graph_tags(tag, "on")',
    """CREATE TABLE graph_edges(src TEXT NOT NULL, dst TEXT NOT NULL, type TEXT NOT NULL, "on" INTEGER NOT NULL,
    mark BLOB NOT NULL, PRIMARY KEY(src, dst, type)) WITHOUT ROWID""",
    "CREATE INDEX graph_edges_dst ON graph_edges(dst, type)",
    # project: that of the newest event of the view's name
    "CREATE TABLE graph_views(name TEXT PRIMARY KEY, mark BLOB NOT NULL, project TEXT NOT NULL) WITHOUT ROWID",
    "CREATE TABLE graph_events(id TEXT PRIMARY KEY) WITHOUT ROWID",  # the ids of the events of KNOWN_KINDS
)
_MINE = "EXISTS (SELECT 1 FROM main.graph_nodes n WHERE n.id = {} AND n.project IN ({{projects}}))"
# a scoped reader's graph (`Projection.scoped`): the nodes its projects created, with their text and tags, the
# edges between two of them, the saved views its projects wrote last
SCOPED = (
    ("graph_nodes", "SELECT * FROM main.graph_nodes WHERE project IN ({projects})"),
    ("graph_node_text", f"SELECT * FROM main.graph_node_text t WHERE {_MINE.format('t.id')}"),
    ("graph_tags", f"SELECT * FROM main.graph_tags t WHERE {_MINE.format('t.node')}"),
    ("graph_edges", f"SELECT * FROM main.graph_edges e WHERE {_MINE.format('e.src')} AND {_MINE.format('e.dst')}"),
    ("graph_views", "SELECT * FROM main.graph_views WHERE project IN ({projects})"),
)
TABLE_NAMES = ("graph_nodes", "graph_node_text", "graph_tags", "graph_edges", "graph_views", "graph_events")
# the kinds whose events' ids an import asks for (`stored.known`: its items' derived ids, imported before or not)
KNOWN_KINDS = frozenset(("graph.node", "graph.node_update", "graph.node_delete", "graph.edge", "graph.view"))


# -- rows <-> the fold's values ---------------------------------------------------------------


def _key(value: Sequence[Any]) -> OrderKey:
    return (value[0], value[1], value[2])


def node_of(blob: bytes, lower: str) -> Node:
    """The node a `graph_node_text` row holds (its `data` and `lower`)."""
    from contextflow.graph.view import Node

    (node_id, exists, deleted, created, updated, writer, agent, origin, kind, content, summary, meta, keys, tokens) = (
        jsonio.loads(blob)
    )
    return Node(
        node_id,
        exists,
        deleted,
        _key(created),
        _key(updated),
        writer,
        agent,
        origin,
        kind,
        content,
        summary,
        meta,
        {name: _key(key) for name, key in keys.items()},
        tokens,
        lower,
    )


def mark_of(blob: bytes) -> Mark:
    """The mark (latest add, latest removal, payload) a `mark` column holds."""
    found = jsonio.loads(blob)
    return (_key(found[0]), _key(found[1]), *found[2:])


def _node_rows(node: Node, project: str) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The node's `graph_nodes` row and its `graph_node_text` row."""
    from contextflow.graph.model import shortest_text

    data = [
        node.id,
        node.exists,
        node.deleted,
        node.created_key,
        node.updated_key,
        node.writer,
        node.agent,
        node.origin,
        node.type,
        node.content,
        node.summary,
        node.metadata,
        node.field_keys,
        node.tokens,
    ]
    columns = (
        node.id,
        int(node.exists and not node.deleted),
        node.type,
        node.tokens,
        int(bool(node.summary)),
        node.created_key[0] >> COUNTER_BITS,
        node.updated_key[0] >> COUNTER_BITS,
        db_stamp(node.updated_key[0]),
        node.updated_key[1],
        node.updated_key[2],
        node.origin,
        dedupe_digest(node.content),
        node.agent or node.writer,
        shortest_text(node.content, node.summary),
        project,
    )
    return columns, (node.id, node.lower, jsonio.dumps(data))


def dedupe_digest(content: str) -> bytes:
    """Equal for contents with the same `model.dedupe_key` (nodes that may be copies of each other)."""
    from contextflow.graph import model

    return hashing.blake2b(model.dedupe_key(content).encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _on(mark: Mark) -> int:
    return int(mark[0] > mark[1])


# -- folding a batch -----------------------------------------------------------------------------


def _touched(events: Iterable[Event]) -> tuple[set[str], set[EdgeKey], set[str]]:
    """The nodes (with their tags), edges and saved views a batch of events sets."""
    from contextflow.graph import model

    nodes: set[str] = set()
    edges: set[EdgeKey] = set()
    views: set[str] = set()
    for event in events:
        kind, data = event.kind, event.data
        if kind == model.NODE:
            nodes.add(event.id)
            links = data.get("links")
            for link in links if isinstance(links, list) else ():
                if isinstance(link, dict) and isinstance(link.get("to"), str) and isinstance(link.get("type"), str):
                    edges.add((event.id, link["to"], link["type"]))
        elif kind in (model.NODE_UPDATE, model.NODE_DELETE, model.TAG, model.UNTAG):
            if isinstance(data.get("node"), str):
                nodes.add(data["node"])
        elif kind in (model.EDGE, model.EDGE_DELETE):
            ends = (data.get("from"), data.get("to"), data.get("type"))
            if isinstance(ends[0], str) and isinstance(ends[1], str) and isinstance(ends[2], str):
                edges.add((ends[0], ends[1], ends[2]))
        elif kind in (model.VIEW, model.VIEW_DELETE) and isinstance(data.get("name"), str):
            views.add(data["name"])
    return nodes, edges, views


def _load(db: Writer, nodes: list[str], edges: list[EdgeKey], views: list[str], projects: dict[str, str]) -> GraphState:
    """The rows a batch touches, as the fold's state; the nodes' and views' `projects` beside it."""
    from contextflow.graph.view import GraphState

    state = GraphState()
    for part in chunks(nodes):
        projects.update(db.execute(f"SELECT id, project FROM graph_nodes WHERE id IN ({marks(len(part))})", part))
        sql = f"SELECT data, lower FROM graph_node_text WHERE id IN ({marks(len(part))})"
        for blob, lower in db.execute(sql, part):
            node = node_of(blob, lower)
            state.nodes[node.id] = node
        sql = f"SELECT node, tag, mark FROM graph_tags WHERE node IN ({marks(len(part))})"
        for node_id, tag, blob in db.execute(sql, part):
            state.tag_marks.setdefault(node_id, {})[tag] = mark_of(blob)
    for part in chunks(edges, CHUNK // 4):  # (the sources first: the key's index narrows to them)
        sources = sorted({edge[0] for edge in part})
        values = ", ".join("(?, ?, ?)" for _ in part)
        sql = f"""SELECT src, dst, type, mark FROM graph_edges
            WHERE src IN ({marks(len(sources))}) AND (src, dst, type) IN (VALUES {values})"""
        for src, dst, kind, blob in db.execute(sql, [*sources, *(value for edge in part for value in edge)]):
            state.edges[(src, dst, kind)] = mark_of(blob)
    for part in chunks(views):
        sql = f"SELECT name, mark, project FROM graph_views WHERE name IN ({marks(len(part))})"
        for name, blob, project in db.execute(sql, part):
            state.views[name], projects[f"view:{name}"] = mark_of(blob), project
    return state


def apply(db: Writer, events: list[Event]) -> None:
    """Fold a chunk's `graph.*` events into the tables (inside the catch-up's transaction)."""
    nodes, edges, views = _touched(events)
    from contextflow.core.project import project_of
    from contextflow.graph import model
    from contextflow.graph.view import GraphView

    projects: dict[str, str] = {}  # node id -> its creation's project; "view:" name -> its newest event's
    state = _load(db, sorted(nodes), sorted(edges), sorted(views), projects)
    fold, wrote = GraphView(), {}
    for event in events:
        fold.apply(state, event)
        if event.kind == model.NODE:
            projects[event.id] = project_of(event)
        elif event.kind in (model.VIEW, model.VIEW_DELETE) and isinstance(event.data.get("name"), str):
            wrote[(event.data["name"], (event.hlc, event.writer, event.seq))] = project_of(event)
    for name, mark in state.views.items():  # (the newest event of a name: its mark's latest add or removal)
        key = f"view:{name}"
        projects[key] = wrote.get((name, max(mark[0], mark[1])), projects.get(key, ""))
    rows = [_node_rows(node, projects.get(node.id, "")) for node in state.nodes.values()]
    db.executemany(f"INSERT OR REPLACE INTO graph_nodes VALUES ({marks(15)})", [columns for columns, _ in rows])
    db.executemany("INSERT OR REPLACE INTO graph_node_text VALUES (?, ?, ?)", [text for _, text in rows])
    db.executemany(
        'INSERT OR REPLACE INTO graph_tags(node, tag, "on", mark) VALUES (?, ?, ?, ?)',
        [(i, tag, _on(mark), jsonio.dumps(mark)) for i, tags in state.tag_marks.items() for tag, mark in tags.items()],
    )
    db.executemany(
        'INSERT OR REPLACE INTO graph_edges(src, dst, type, "on", mark) VALUES (?, ?, ?, ?, ?)',
        [(*key, _on(mark), jsonio.dumps(mark)) for key, mark in state.edges.items()],
    )
    db.executemany(
        "INSERT OR REPLACE INTO graph_views(name, mark, project) VALUES (?, ?, ?)",
        [(name, jsonio.dumps(mark), projects[f"view:{name}"]) for name, mark in state.views.items()],
    )
    known = [(event.id,) for event in events if event.kind in KNOWN_KINDS]
    db.executemany("INSERT OR IGNORE INTO graph_events(id) VALUES (?)", known)


def unneeded(events: Sequence[Event]) -> dict[str, tuple[str, ...]]:
    """Compaction (scan.Unneeded): an update, tag, untag, edge or view change each of whose slots a later
    event in the same log sets again can go (an add only by a later add, a removal by a later removal).
    Nodes and node deletions stay."""
    from contextflow.graph.view import DROPPABLE, writes

    found: dict[str, tuple[str, ...]] = {e.id: () for e in events if not e.kind.startswith("graph.")}
    droppable = {e.id for e in events if e.kind in DROPPABLE}
    found.update(dict.fromkeys(overwritten(events, writes) & droppable, ()))
    return found


PROJECTION = Projection(
    Format("graph-state", 4, ("contextflow.graph.projection",)),  # 4: the ids of the events an import asks for
    SCHEMA,
    tables=TABLE_NAMES,
    ahead=False,
    kinds="graph.",
    apply=apply,
    merged=(
        merged_by("graph_tags", "node", "tag"),
        merged_by("graph_edges", "src", "dst", "type"),
        merged_by("graph_views", "name"),
    ),  # (graph_nodes, graph_node_text: by `id`)
    scoped=SCOPED,
    unneeded=unneeded,
)
