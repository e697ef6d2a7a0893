"""Graph writes and reads through the core functions: validation, idempotency, provenance."""

import pytest

from contextflow.core.errors import InputError, NotFoundError
from contextflow.core.ids import ALPHABET
from contextflow.graph import explore, writes
from contextflow.graph.render import status_text
from tests.table import run


def count_events(app):
    return app.store.event_count


def test_a_node_keeps_type_content_tags_metadata_agent_and_token_estimate(app):
    event = writes.add_node(
        app,
        type="fact",
        content="abcdefghi",
        tags=["project:x", "project:x"],
        metadata={"confidence": "high"},
        agent="claude",
    )
    node = writes.graph(app).node(event.id)
    assert (node.type, node.content, node.agent, node.tokens) == ("fact", "abcdefghi", "claude", 3)
    assert writes.graph(app).tags_of(event.id) == {"project:x"} and node.metadata == {"confidence": "high"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"type": "note", "content": "x"}, "type.* must be one of fact"),
        ({"type": "fact", "content": "x", "tags": ["a:b"] * 51}, "tags.* has 51 items; the limit is 50"),
        ({"type": "fact", "content": "x", "links": [{"to": "x", "type": "LIKES"}]}, "edge type must be one of"),
        ({"type": "fact", "content": "  "}, "content is required"),
        ({"type": "fact", "content": "x", "tags": ["nocolon"]}, "use namespace:value"),
        ({"type": "fact", "content": "x", "tags": ["tier:hot"]}, "tier tag 'tier:hot' is not known"),
        ({"type": "fact", "content": "x", "metadata": {"bad key": 1}}, "metadata key 'bad key'"),
        ({"type": "fact", "content": "x", "supersedes": "nope"}, "no supersedes starts with 'nope'"),
    ],
)
def test_bad_nodes_are_refused_with_the_reason_and_nothing_is_written(app, kwargs, message):
    before = count_events(app)
    with pytest.raises(InputError, match=message):
        run(app, "graph_remember", **kwargs)  # the table's row, then the core
    assert count_events(app) == before


def test_linking_or_tagging_twice_succeeds_silently_without_writing(app):
    a = writes.add_node(app, type="fact", content="a")
    b = writes.add_node(app, type="fact", content="b")
    assert writes.link(app, a.id, b.id, "relates_to") is True
    before = count_events(app)
    assert writes.link(app, a.id, b.id, "RELATES_TO") is False
    assert writes.tag(app, a.id, ["task:x"]) == ["task:x"] and writes.tag(app, a.id, ["task:x"]) == []
    assert count_events(app) == before + 1
    assert writes.untag(app, a.id, ["task:x"]) == ["task:x"] and writes.untag(app, a.id, ["task:x"]) == []


def test_link_and_unlink_refuse_what_cannot_be_done(app):
    a = writes.add_node(app, type="fact", content="a")
    with pytest.raises(InputError, match="cannot link to itself"):
        writes.link(app, a.id, a.id)
    with pytest.raises(InputError, match="edge type must be one of"):
        writes.link(app, a.id, a.id, "LIKES")
    b = writes.add_node(app, type="fact", content="b")
    with pytest.raises(NotFoundError, match="no edge"):
        writes.unlink(app, a.id, b.id)


def test_update_changes_fields_and_removes_metadata_keys(app):
    a = writes.add_node(app, type="observation", content="draft", metadata={"keep": 1, "drop": 2})
    node = writes.update_node(app, a.id[:5], content="final text", type="decision", metadata={"drop": None, "new": "y"})
    assert (node.type, node.content, node.metadata) == ("decision", "final text", {"keep": 1, "new": "y"})
    assert node.updated_key > node.created_key
    with pytest.raises(InputError, match="nothing to update"):
        writes.update_node(app, a.id)


def test_ambiguous_prefixes_and_deleted_nodes_are_clear_errors(app):
    ids = [writes.add_node(app, type="fact", content=str(n)).id for n in range(40)]
    shared = next(c for c in ALPHABET if sum(i.startswith(c) for i in ids) > 1)  # 40 ids, 32 first letters
    with pytest.raises(InputError, match="ambiguous"):
        writes.resolve(writes.graph(app), shared)
    writes.delete_node(app, ids[0])
    with pytest.raises(NotFoundError, match="was deleted"):
        writes.resolve(writes.graph(app), ids[0])


def test_summarize_links_sources_and_can_archive_them(app):
    a = writes.add_node(app, type="observation", content="a", tags=["tier:working"])
    b = writes.add_node(app, type="observation", content="b", tags=["tier:working"])
    done = writes.summarize(app, [a.id, b.id, a.id], "a and b", archive_sources=True)
    state = writes.graph(app)
    assert done.sources == [a.id, b.id] and state.node(done.id).type == "summary"
    assert {e.target for e in state.edges_out(done.id) if e.type == "DERIVED_FROM"} == {a.id, b.id}
    assert state.tags_of(a.id) == {"tier:off-context"}
    _, steps = explore.around(app, done.id, "provenance")
    assert {s.node.id for s in steps} == {a.id, b.id}
    _, back = explore.around(app, a.id, "dependents")
    assert [s.node.id for s in back] == [done.id]


def test_delete_with_cascade_removes_what_was_derived(app):
    a = writes.add_node(app, type="observation", content="a")
    s1 = writes.summarize(app, [a.id], "s1")
    s2 = writes.summarize(app, [s1.id], "s2")
    assert set(writes.delete_node(app, a.id, cascade=True)) == {a.id, s1.id, s2.id}
    assert writes.graph(app).live == set()


def test_supersede_sets_superseded_by_and_related_walks_any_edge(app):
    old = writes.add_node(app, type="fact", content="old")
    new = writes.add_node(app, type="fact", content="new")
    other = writes.add_node(app, type="fact", content="other", links=[writes.Link(new.id, "RELATES_TO")])
    assert writes.supersede(app, old.id, new.id) is True
    assert writes.graph(app).superseded_by(old.id) == new.id
    _, near = explore.around(app, old.id, "related", 2)
    assert [(s.depth, s.node.id) for s in near] == [(1, new.id), (2, other.id)]


def test_status_counts_types_tokens_edges_and_tiers(app):
    a = writes.add_node(app, type="fact", content="x" * 40, tags=["tier:pinned"])
    writes.add_node(
        app, type="decision", content="y" * 8, tags=["tier:reference"], links=[writes.Link(a.id, "DEPENDS_ON")]
    )
    info = explore.status(app)
    assert info["nodes"] == 2 and info["tokens"] == 12 and info["edges"] == 1 and info["tags"] == 2
    assert info["types"] == {"decision": 1, "fact": 1}
    assert info["tiers"]["pinned"] == {"nodes": 1, "tokens": 10}
    assert "pinned: 1 nodes (10 tokens)" in status_text(info)


def test_saved_views_are_validated_and_deleted(app):
    with pytest.raises(InputError, match="query error"):
        writes.create_view(app, "v", "type:")
    with pytest.raises(InputError, match="view name"):
        writes.create_view(app, "has space", "type:fact")
    writes.create_view(app, "v", "type:fact", 100)
    assert [v.name for v in writes.graph(app).saved_views()] == ["v"]
    assert writes.delete_view(app, "v") == "v"
    with pytest.raises(NotFoundError, match="no view named 'v'"):
        writes.get_view(app, "v")


def test_list_filters_by_type_tag_and_since(app):
    writes.add_node(app, type="fact", content="f", tags=["task:a"])
    writes.add_node(app, type="decision", content="d")
    nodes, total = explore.list_nodes(app, type="fact", tag="task:a", since="1h")
    assert total == 1 and nodes[0].content == "f"
    assert explore.list_nodes(app, limit=1)[1] == 2


def test_remembering_identical_content_type_and_tags_twice_is_one_node(app):
    first = writes.add_node(app, type="fact", content="Prices are in cents", tags=["tier:reference", "project:shop"])
    again = writes.add_node(app, type="fact", content="Prices are in cents", tags=["project:shop", "tier:reference"])
    assert again.id == first.id and len(writes.graph(app).live) == 1
    other_tags = writes.add_node(app, type="fact", content="Prices are in cents", tags=["tier:working"])
    other_type = writes.add_node(app, type="decision", content="Prices are in cents", tags=["tier:reference"])
    assert len({first.id, other_tags.id, other_type.id}) == 3


def test_remembering_a_known_node_again_adds_only_the_links_it_lacks(app):
    target = writes.add_node(app, type="fact", content="target")
    node = writes.add_node(app, type="fact", content="same")
    again = writes.add_node(app, type="fact", content="same", links=[writes.Link(target.id, "DEPENDS_ON")])
    assert again.id == node.id
    assert [(e.target, e.type) for e in writes.graph(app).edges_out(node.id)] == [(target.id, "DEPENDS_ON")]
