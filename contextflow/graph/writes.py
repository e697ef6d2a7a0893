"""Graph writes: add, update, delete, link, unlink, tag, untag, summarize, supersede, views.

Each function validates everything first, then appends its events in one locked write, so
a multi-step change lands whole: a new node carries its outgoing edges (`links`) in its
own event, and summarize writes the summary with its DERIVED_FROM links and the archive
tags of its sources together.
Linking or tagging what is already linked or tagged succeeds without writing anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contextflow import ondisk
from contextflow.app import App
from contextflow.core import checks
from contextflow.core.errors import InputError, NotFoundError, arg
from contextflow.core.events import Event
from contextflow.core.ids import resolve_prefix
from contextflow.graph import model
from contextflow.graph.fields import DEFAULT_VIEW_BUDGET, MAX_NAME_CHARS
from contextflow.graph.query import parse
from contextflow.graph.stored import StoredGraph
from contextflow.graph.view import Node, SavedView

Item = tuple[str, dict[str, Any]]
PREFIX_SHOWN = 20  # ids offered to `resolve_prefix` (it names a few of an ambiguous prefix's matches)


def graph(app: App, *, whole: bool = False) -> StoredGraph:
    """The graph for one call, queried from its tables on disk: as built with the logs' remaining bytes while
    the derived tables do not hold every log (`ondisk.reading`); when `whole`, never partial (`ondisk.whole`)."""
    from contextflow.graph.projection import PROJECTION

    return StoredGraph((ondisk.whole if whole else ondisk.reading)(app, PROJECTION))


def resolve(state: StoredGraph, prefix: str, what: str = "node id") -> Node:
    """The live node whose id is `prefix` or starts with it (git-style)."""
    if not prefix.strip():
        raise InputError(f"{arg(what)} is required: pass a node id or a unique prefix of it")
    wanted = prefix.strip().lower()
    node = state.node(wanted)
    if node is not None:
        return node
    if wanted in state.nodes and state.nodes[wanted].deleted:
        raise NotFoundError(f"{what} {prefix!r} was deleted; `contextflow list` shows the nodes that exist")
    return state.nodes[resolve_prefix(wanted, state.prefixed(wanted, PREFIX_SHOWN), what)]


def ends(state: StoredGraph, source: str, target: str) -> tuple[Node, Node]:
    """An edge's two nodes; a miss says which end it is: "the edge's target: no node id starts with ..."."""
    found = []
    for end, given in (("source", source), ("target", target)):
        try:
            found.append(resolve(state, given))
        except InputError as exc:  # or NotFoundError: the same kind, said of its end
            raise type(exc)(f"the edge's {end}: {exc.template}") from None
    return found[0], found[1]


def node_item(
    *,
    type: str,
    content: str,
    tags: list[str] | None = None,
    metadata: dict[str, Any] | None = None,
    summary: str | None = None,
    agent: str | None = None,
    origin: str | None = None,
    links: list[tuple[str, str]] | None = None,
) -> Item:
    """A `graph.node` event; `links` (resolved target id, edge type) become its outgoing edges. `type` is
    one of NODE_TYPES (the table's row, `inbound.node_type` or the import's mapping chose it)."""
    data: dict[str, Any] = {"type": type, "content": model.content(content)}
    text = model.summary(summary)
    if text:
        data["summary"] = text
    data["metadata"] = model.metadata(metadata)
    data["tags"] = model.tags(tags)
    data["agent"] = checks.trimmed(agent, "agent", max_chars=MAX_NAME_CHARS) or "unknown"
    if origin:
        data["origin"] = origin
    if links:
        data["links"] = [{"to": target, "type": kind} for target, kind in dict.fromkeys(links)]
    return (model.NODE, data)


def edge_item(source: str, target: str, edge_type: str, metadata: dict[str, Any] | None = None) -> Item:
    data: dict[str, Any] = {"from": source, "to": target, "type": edge_type}
    if metadata:
        data["metadata"] = metadata
    return (model.EDGE, data)


@dataclass(frozen=True)
class Link:
    target: str
    type: str


def parse_links(value: list[dict[str, Any]] | None) -> list[Link]:
    """`[{"to": id, "type": "DEPENDS_ON"}, ...]` as given to graph_remember (its row checked each item's
    types and edge type; an object's keys are not a schema's to require)."""
    links: list[Link] = []
    for index, item in enumerate(value or []):
        target, kind = item.get("to"), item.get("type", "RELATES_TO")
        if not isinstance(target, str) or not isinstance(kind, str):
            raise InputError(f'links[{index}] must be an object like {{"to": "<node id>", "type": "DEPENDS_ON"}}')
        links.append(Link(target, model.edge_type(kind)))
    return links


def same_node(state: StoredGraph, node_type: str, content: str, tags: list[str]) -> Node | None:
    """The oldest live node with this type and tags and the same content but for case, white
    space and final punctuation (`model.dedupe_key`), if any."""
    wanted = set(tags)
    found = [node for node in state.alike(node_type, content) if state.tags_of(node.id) == wanted]
    return min(found, key=lambda node: node.created_key) if found else None


def add_node(
    app: App,
    *,
    type: str,
    content: str,
    tags: list[str] | None = None,
    metadata: dict[str, Any] | None = None,
    summary: str | None = None,
    agent: str | None = None,
    links: list[Link] | None = None,
    supersedes: str | None = None,
) -> Event:
    """A new node, linked to existing nodes and replacing one (SUPERSEDES) in the same event.
    Outside the shared project a node without a `project:` tag gets the project's. The same
    content (but for case, white space and final punctuation) with the same type and tags is
    one node: remembering it again writes only the links it lacks and returns the existing
    node's event."""
    state = graph(app)
    targets = [(resolve(state, link.target, "links[].to").id, link.type) for link in links or []]
    if supersedes is not None:
        targets.append((resolve(state, supersedes, "supersedes").id, "SUPERSEDES"))
    scoped = model.scoped_tags(tags, app.settings.default_project)  # a node written in a repository is its project's
    item = node_item(
        type=type, content=content, tags=scoped, metadata=metadata, summary=summary, agent=agent, links=targets
    )
    existing = same_node(state, item[1]["type"], item[1]["content"], item[1]["tags"])
    if existing is None:
        return app.store.append(*item)
    missing = [
        (target, kind)
        for target, kind in dict.fromkeys(targets)
        if target != existing.id and not state.edge_live(existing.id, target, kind)
    ]
    if missing:
        app.store.append_many([edge_item(existing.id, target, kind) for target, kind in missing])
    hlc, writer, seq = existing.created_key  # its creating event, as far as the folded state remembers it
    tags = sorted(state.tags_of(existing.id))
    data = {"type": existing.type, "content": existing.content, "tags": tags, "agent": existing.agent}
    return Event(existing.id, writer, seq, hlc, model.NODE, data)


def _by(agent: str | None) -> dict[str, str]:
    """Who made a change, on the events that change or delete a node (when given)."""
    name = checks.trimmed(agent, "agent", max_chars=MAX_NAME_CHARS)
    return {"agent": name} if name else {}


def update_node(
    app: App,
    node_id: str,
    *,
    content: str | None = None,
    type: str | None = None,
    summary: str | None = None,
    metadata: dict[str, Any] | None = None,
    add_tags: list[str] | None = None,
    remove_tags: list[str] | None = None,
    agent: str | None = None,
) -> Node:
    """Change fields and tags in one write (tags added, then removed); tags already so change nothing."""
    state = graph(app)
    node = resolve(state, node_id)
    data: dict[str, Any] = {"node": node.id}
    if content is not None:
        data["content"] = model.content(content)
    if type is not None:
        data["type"] = type
    if summary is not None:
        data["summary"] = model.summary(summary) or ""
    meta = model.metadata(metadata, allow_null=True)
    if meta:
        data["metadata"] = meta
    adding, removing = model.tags(add_tags), model.tags(remove_tags)
    if len(data) == 1 and not adding and not removing:
        raise InputError("nothing to update: pass content, type, summary or metadata")
    current = state.tags_of(node.id)
    new = [name for name in adding if name not in current]
    gone = [name for name in removing if name in current or name in new]
    by = _by(agent)
    items: list[Item] = [(model.NODE_UPDATE, {**data, **by})] if len(data) > 1 else []
    items += [(model.TAG, {"node": node.id, "tags": new, **by})] if new else []
    items += [(model.UNTAG, {"node": node.id, "tags": gone, **by})] if gone else []
    if items:
        app.store.append_many(items)
    return graph(app).nodes[node.id]


def delete_node(app: App, node_id: str, *, cascade: bool = False, agent: str | None = None) -> list[str]:
    """Delete a node (its edges go with it); with cascade also what was derived from it."""
    state = graph(app)
    node = resolve(state, node_id)
    depth = len(state.live) if cascade else 0
    derived = state.walk(node.id, depth, forward=False, backward=True, types=("DERIVED_FROM",))
    doomed = [node.id, *(step.node.id for step in derived)]
    app.store.append_many([(model.NODE_DELETE, {"node": target, **_by(agent)}) for target in doomed])
    return doomed


def link(
    app: App, source: str, target: str, edge_type: str = "RELATES_TO", metadata: dict[str, Any] | None = None
) -> bool:
    """Link two nodes; False (and nothing written) when that edge already exists."""
    kind = model.edge_type(edge_type)
    state = graph(app)
    a, b = ends(state, source, target)
    if a.id == b.id:
        raise InputError("a node cannot link to itself: pass two different node ids")
    if state.edge_live(a.id, b.id, kind):
        return False
    app.store.append(*edge_item(a.id, b.id, kind, model.metadata(metadata)))
    return True


def unlink(app: App, source: str, target: str, edge_type: str | None = None) -> list[str]:
    """Remove the edges from `source` to `target` (of one type, or all); returns the types removed."""
    state = graph(app)
    a, b = ends(state, source, target)
    kinds = [model.edge_type(edge_type)] if edge_type else list(model.EDGE_TYPES)
    live = [kind for kind in kinds if state.edge_live(a.id, b.id, kind)]
    if not live:
        shown = f" of type {kinds[0]}" if edge_type else ""
        raise NotFoundError(f"no edge{shown} from {a.id} to {b.id}; `contextflow edges {a.id}` lists its edges")
    app.store.append_many([(model.EDGE_DELETE, {"from": a.id, "to": b.id, "type": kind}) for kind in live])
    return live


def _retag(app: App, node_id: str, names: list[str], adding: bool, missing: str) -> list[str]:
    state = graph(app)
    node = resolve(state, node_id)
    wanted = model.tags(names)
    if not wanted:
        raise InputError(f"no tag given: {missing}")
    current = state.tags_of(node.id)
    changed = [name for name in wanted if (name in current) != adding]
    if changed:
        app.store.append(model.TAG if adding else model.UNTAG, {"node": node.id, "tags": changed})
    return changed


def tag(app: App, node_id: str, names: list[str]) -> list[str]:
    """Add tags; returns the ones that were new (tagging twice succeeds silently)."""
    return _retag(app, node_id, names, True, "pass one or more namespace:value tags, e.g. tier:reference")


def untag(app: App, node_id: str, names: list[str]) -> list[str]:
    """Remove tags; returns the ones that were set (removing an absent tag succeeds silently)."""
    return _retag(app, node_id, names, False, "pass the tags to remove")


def archive_items(state: StoredGraph, node_ids: list[str]) -> list[Item]:
    """Events that move nodes to tier:off-context (dropping their other tiers)."""
    items: list[Item] = []
    for node_id in node_ids:
        current = state.tags_of(node_id)
        other_tiers = [name for name in model.TIER_TAGS if name in current and name != model.OFF_CONTEXT]
        if other_tiers:
            items.append((model.UNTAG, {"node": node_id, "tags": other_tiers}))
        if model.OFF_CONTEXT not in current:
            items.append((model.TAG, {"node": node_id, "tags": [model.OFF_CONTEXT]}))
    return items


@dataclass(frozen=True)
class Summarized:
    id: str
    sources: list[str]
    archived: list[str]


def summarize(
    app: App,
    node_ids: list[str],
    content: str,
    *,
    archive_sources: bool = False,
    tags: list[str] | None = None,
    agent: str | None = None,
) -> Summarized:
    """A summary node with DERIVED_FROM edges to each source; optionally archive the sources."""
    if not node_ids:
        raise InputError("summarize needs the ids of the nodes it summarizes")
    state = graph(app)
    sources = list(dict.fromkeys(resolve(state, node_id, "source id").id for node_id in node_ids))
    item = node_item(
        type="summary", content=content, tags=tags, agent=agent, links=[(source, "DERIVED_FROM") for source in sources]
    )
    archived = archive_items(state, sources) if archive_sources else []
    event = app.store.append_many([item, *archived])[0]
    return Summarized(event.id, sources, sources if archive_sources else [])


def supersede(app: App, old: str, new: str) -> bool:
    """Mark `old` as replaced by `new` (a SUPERSEDES edge from new to old)."""
    return link(app, new, old, "SUPERSEDES")


# -- saved views -----------------------------------------------------------------------


def create_view(app: App, name: str, query: str, budget: int | None = None) -> dict[str, Any]:
    """Save (or replace) a view; `budget` is in BUDGET (the table's row), default DEFAULT_VIEW_BUDGET."""
    view: dict[str, Any] = {"name": model.view_name(name), "query": query.strip()}
    parse(view["query"])
    view["budget"] = DEFAULT_VIEW_BUDGET if budget is None else budget
    app.store.append(model.VIEW, view)
    return view


def get_view(app: App, name: str) -> SavedView:
    checked = model.view_name(name)
    found = graph(app).saved_view(checked)
    if found is None:
        known = ", ".join(view.name for view in graph(app).saved_views()) or "none yet"
        raise NotFoundError(f"no view named {checked!r} (views: {known}); create it with `contextflow view create`")
    return found


def delete_view(app: App, name: str) -> str:
    found = get_view(app, name)
    app.store.append(model.VIEW_DELETE, {"name": found.name})
    return found.name
