"""Graph writes and reads through the core functions: validation, idempotency, provenance."""

import pytest

from contextflow.errors import InputError, NotFoundError
from contextflow.graph import explore, ops
from contextflow.ids import ALPHABET
from contextflow.present.nodes import status_text


def count_events(app):
    return app.store.event_count


def test_a_node_keeps_type_content_tags_metadata_agent_and_token_estimate(app):
    event = ops.add_node(app, type="fact", content="abcdefghi", tags=["project:x", "project:x"],
                         metadata={"confidence": "high"}, agent="claude")
    node = ops.graph(app).node(event.id)
    assert (node.type, node.content, node.agent, node.tokens) == ("fact", "abcdefghi", "claude", 3)
    assert ops.graph(app).tags_of(event.id) == {"project:x"} and node.metadata == {"confidence": "high"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"type": "note", "content": "x"}, "node type must be one of fact"),
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
        ops.add_node(app, **kwargs)
    assert count_events(app) == before


def test_linking_or_tagging_twice_succeeds_silently_without_writing(app):
    a = ops.add_node(app, type="fact", content="a")
    b = ops.add_node(app, type="fact", content="b")
    assert ops.link(app, a.id, b.id, "relates_to") is True
    before = count_events(app)
    assert ops.link(app, a.id, b.id, "RELATES_TO") is False
    assert ops.tag(app, a.id, ["task:x"]) == ["task:x"] and ops.tag(app, a.id, ["task:x"]) == []
    assert count_events(app) == before + 1
    assert ops.untag(app, a.id, ["task:x"]) == ["task:x"] and ops.untag(app, a.id, ["task:x"]) == []


def test_link_and_unlink_refuse_what_cannot_be_done(app):
    a = ops.add_node(app, type="fact", content="a")
    with pytest.raises(InputError, match="cannot link to itself"):
        ops.link(app, a.id, a.id)
    with pytest.raises(InputError, match="edge type must be one of"):
        ops.link(app, a.id, a.id, "LIKES")
    b = ops.add_node(app, type="fact", content="b")
    with pytest.raises(NotFoundError, match="no edge"):
        ops.unlink(app, a.id, b.id)


def test_update_changes_fields_and_removes_metadata_keys(app):
    a = ops.add_node(app, type="observation", content="draft", metadata={"keep": 1, "drop": 2})
    node = ops.update_node(app, a.id[:5], content="final text", type="decision", metadata={"drop": None, "new": "y"})
    assert (node.type, node.content, node.metadata) == ("decision", "final text", {"keep": 1, "new": "y"})
    assert node.updated_key > node.created_key
    with pytest.raises(InputError, match="nothing to update"):
        ops.update_node(app, a.id)


def test_ambiguous_prefixes_and_deleted_nodes_are_clear_errors(app):
    ids = [ops.add_node(app, type="fact", content=str(n)).id for n in range(40)]
    shared = next(c for c in ALPHABET if sum(i.startswith(c) for i in ids) > 1)  # 40 ids, 32 first letters
    with pytest.raises(InputError, match="ambiguous"):
        ops.resolve(ops.graph(app), shared)
    ops.delete_node(app, ids[0])
    with pytest.raises(NotFoundError, match="was deleted"):
        ops.resolve(ops.graph(app), ids[0])


def test_summarize_links_sources_and_can_archive_them(app):
    a = ops.add_node(app, type="observation", content="a", tags=["tier:working"])
    b = ops.add_node(app, type="observation", content="b", tags=["tier:working"])
    done = ops.summarize(app, [a.id, b.id, a.id], "a and b", archive_sources=True)
    state = ops.graph(app)
    assert done.sources == [a.id, b.id] and state.node(done.id).type == "summary"
    assert {e.target for e in state.edges_out(done.id) if e.type == "DERIVED_FROM"} == {a.id, b.id}
    assert state.tags_of(a.id) == {"tier:off-context"}
    _, steps = explore.around(app, done.id, "provenance")
    assert {s.node.id for s in steps} == {a.id, b.id}
    _, back = explore.around(app, a.id, "dependents")
    assert [s.node.id for s in back] == [done.id]


def test_delete_with_cascade_removes_what_was_derived(app):
    a = ops.add_node(app, type="observation", content="a")
    s1 = ops.summarize(app, [a.id], "s1")
    s2 = ops.summarize(app, [s1.id], "s2")
    assert set(ops.delete_node(app, a.id, cascade=True)) == {a.id, s1.id, s2.id}
    assert ops.graph(app).live == set()


def test_supersede_sets_superseded_by_and_related_walks_any_edge(app):
    old = ops.add_node(app, type="fact", content="old")
    new = ops.add_node(app, type="fact", content="new")
    other = ops.add_node(app, type="fact", content="other", links=[ops.Link(new.id, "RELATES_TO")])
    assert ops.supersede(app, old.id, new.id) is True
    assert ops.graph(app).superseded_by(old.id) == new.id
    _, near = explore.around(app, old.id, "related", 2)
    assert [(s.depth, s.node.id) for s in near] == [(1, new.id), (2, other.id)]


def test_status_counts_types_tokens_edges_and_tiers(app):
    a = ops.add_node(app, type="fact", content="x" * 40, tags=["tier:pinned"])
    ops.add_node(app, type="decision", content="y" * 8, tags=["tier:reference"], links=[ops.Link(a.id, "DEPENDS_ON")])
    info = explore.status(app)
    assert info["nodes"] == 2 and info["tokens"] == 12 and info["edges"] == 1 and info["tags"] == 2
    assert info["types"] == {"decision": 1, "fact": 1}
    assert info["tiers"]["pinned"] == {"nodes": 1, "tokens": 10}
    assert "pinned: 1 nodes (10 tokens)" in status_text(info)


def test_saved_views_are_validated_and_deleted(app):
    with pytest.raises(InputError, match="query error"):
        ops.create_view(app, "v", "type:")
    with pytest.raises(InputError, match="view name"):
        ops.create_view(app, "has space", "type:fact")
    ops.create_view(app, "v", "type:fact", 100)
    assert [v.name for v in ops.graph(app).saved_views()] == ["v"]
    assert ops.delete_view(app, "v") == "v"
    with pytest.raises(NotFoundError, match="no view named 'v'"):
        ops.get_view(app, "v")


def test_list_filters_by_type_tag_and_since(app):
    ops.add_node(app, type="fact", content="f", tags=["task:a"])
    ops.add_node(app, type="decision", content="d")
    nodes, total = explore.list_nodes(app, type="fact", tag="task:a", since="1h")
    assert total == 1 and nodes[0].content == "f"
    assert explore.list_nodes(app, limit=1)[1] == 2


def test_remembering_identical_content_type_and_tags_twice_is_one_node(app):
    first = ops.add_node(app, type="fact", content="Prices are in cents", tags=["tier:reference", "project:shop"])
    again = ops.add_node(app, type="fact", content="Prices are in cents", tags=["project:shop", "tier:reference"])
    assert again.id == first.id and len(ops.graph(app).live) == 1
    other_tags = ops.add_node(app, type="fact", content="Prices are in cents", tags=["tier:working"])
    other_type = ops.add_node(app, type="decision", content="Prices are in cents", tags=["tier:reference"])
    assert len({first.id, other_tags.id, other_type.id}) == 3


def test_remembering_a_known_node_again_adds_only_the_links_it_lacks(app):
    target = ops.add_node(app, type="fact", content="target")
    node = ops.add_node(app, type="fact", content="same")
    again = ops.add_node(app, type="fact", content="same", links=[ops.Link(target.id, "DEPENDS_ON")])
    assert again.id == node.id
    assert [(e.target, e.type) for e in ops.graph(app).edges_out(node.id)] == [(target.id, "DEPENDS_ON")]
