"""Export, import (with and without merge), ingest, and the Mermaid/dot pictures."""

import shutil

import pytest

from contextflow.core.errors import InputError
from contextflow.graph import picture, transfer, writes
from tests.conftest import open_app


def import_graph(app, doc, *, merge=False):
    """Import an export in one write (`transfer.plan_import`'s events); what is already here is skipped."""
    result, planned = transfer.plan_import(app, doc, merge=merge)
    if planned:
        app.store.append_many([(kind, data) for _, kind, data in planned], ids=[event_id for event_id, _, _ in planned])
    return result


def seed(app):
    a = writes.add_node(app, type="fact", content="a fact", tags=["project:x"])
    b = writes.add_node(app, type="decision", content='a "quoted" decision', links=[writes.Link(a.id, "DEPENDS_ON")])
    writes.create_view(app, "facts", "type:fact", 1000)
    return a, b


def test_importing_an_export_into_another_store_keeps_nodes_edges_tags_and_views(app, tmp_path):
    a, b = seed(app)
    doc = transfer.export_graph(app)
    other = open_app("writer-b", CONTEXTFLOW_STORE=str(tmp_path / "other"), CONTEXTFLOW_STATE=str(tmp_path / "st2"))
    try:
        result = import_graph(other, doc)
        assert (result.nodes_added, result.edges_added, result.views_added) == (2, 1, 1)
        state = writes.graph(other)
        new_a, new_b = result.id_map[a.id], result.id_map[b.id]
        assert state.edge_live(new_b, new_a, "DEPENDS_ON") and state.tags_of(new_a) == {"project:x"}
        assert state.nodes[new_a].origin == a.id
        events = other.store.event_count
        again = import_graph(other, doc)
        assert (again.nodes_added, again.edges_added, again.views_added) == (0, 0, 0)
        assert (again.nodes_present, again.edges_present, again.views_present) == (2, 1, 1)
        assert other.store.event_count == events
        # and back: the nodes that came from here are recognised by their origin
        back = import_graph(app, transfer.export_graph(other))
        assert back.nodes_added == 0
    finally:
        other.close()


def test_two_machines_importing_one_export_store_each_node_once(app, tmp_path):
    seed(app)
    doc = transfer.export_graph(app)
    first = open_app("writer-b", CONTEXTFLOW_STORE=str(tmp_path / "one"), CONTEXTFLOW_STATE=str(tmp_path / "st2"))
    second = open_app("writer-c", CONTEXTFLOW_STORE=str(tmp_path / "two"), CONTEXTFLOW_STATE=str(tmp_path / "st3"))
    try:
        import_graph(first, doc)
        import_graph(second, doc)  # each machine imports before the other's log reaches it
        shutil.copy(tmp_path / "two" / "events.writer-c.jsonl", tmp_path / "one")  # then the sync
        assert len(writes.graph(first).live) == 2
        first.store.refresh()  # (the in-memory fold counts the duplicates)
        assert first.store.duplicates == 4
    finally:
        first.close()
        second.close()


def test_a_view_of_the_same_name_with_another_query_needs_merge(app, tmp_path):
    seed(app)
    doc = transfer.export_graph(app)
    doc["views"][0]["query"] = "type:decision"
    with pytest.raises(InputError, match=r"view 'facts' exists here with another query; import with --merge"):
        import_graph(app, doc)
    assert import_graph(app, doc, merge=True).views_present == 1


def test_export_with_a_query_keeps_only_edges_between_exported_nodes(app):
    seed(app)
    doc = transfer.export_graph(app, "type:fact")
    assert [n["type"] for n in doc["nodes"]] == ["fact"] and doc["edges"] == []


def _export(node: dict | None = None, views: list | None = None) -> dict:
    """An export holding one node (`node` over a good one) and `views`."""
    good = {"id": "q", "type": "fact", "content": "c"}
    return {"format": "contextflow-graph", "version": 1, "nodes": [{**good, **(node or {})}], "views": views or []}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([], "not a contextflow graph export"),
        ({"format": "contextflow-graph", "version": 9}, "version 9 is not supported"),
        ({"format": "contextflow-graph", "version": 1, "nodes": "x"}, "'nodes' must be a list"),
        (
            {"format": "contextflow-graph", "version": 1, "nodes": [{"id": "q", "type": "bogus", "content": "c"}]},
            r"nodes\[0\] \(q\): node type",
        ),
        (_export({"content": 7}), r"nodes\[0\] \(q\): .*content.* must be a string, got a number \(7\)"),
        (_export({"content": " "}), r"nodes\[0\] \(q\): .*content.* is required"),
        (_export({"tags": "tier:working"}), r"nodes\[0\] \(q\): tags must be a list of namespace:value"),
        (_export({"tags": ["a:b"] * 51}), r"nodes\[0\] \(q\): 51 tags given; the limit is 50"),
        (_export({"tags": ["nocolon"]}), r"nodes\[0\] \(q\): tag 'nocolon' is not valid"),
        (_export({"metadata": [1]}), r"nodes\[0\] \(q\): .*metadata.* must be a JSON object"),
        (_export({"agent": ["x"]}), r"nodes\[0\] \(q\): .*agent.* must be a string"),
        (_export(views=[{"name": "v", "query": "type:fact", "budget": 0}]), "budget must be a whole number of tokens"),
        (_export(views=[{"name": 5, "query": "type:fact"}]), r"name.* must be a string"),
    ],
)
def test_bad_imports_are_refused_and_nothing_is_written(app, doc, message):
    before = app.store.event_count
    with pytest.raises(InputError, match=message):
        import_graph(app, doc)
    assert app.store.event_count == before


def test_ingest_stores_a_file_once_and_supersedes_it_when_it_changes(app, tmp_path):
    file = tmp_path / "README.md"
    file.write_text("# Title\nbody\n")
    first = transfer.ingest_file(app, str(file), tags=["project:x"])
    assert first.created and transfer.ingest_file(app, file).id == first.id
    node = writes.graph(app).node(first.id)
    assert node.type == "source" and node.metadata["name"] == "README.md" and node.metadata["bytes"] == 13
    file.write_text("# Title\nnew body\n")
    second = transfer.ingest_file(app, file)
    assert second.created and second.replaced == first.id
    assert writes.graph(app).superseded_by(first.id) == second.id


def test_ingest_refuses_missing_and_binary_files(app, tmp_path):
    with pytest.raises(InputError, match="cannot read"):
        transfer.ingest_file(app, tmp_path / "missing.txt")
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InputError, match="not UTF-8 text"):
        transfer.ingest_file(app, binary)


def test_pictures_draw_nodes_and_edges_with_escaped_labels(app):
    a, b = seed(app)
    state = writes.graph(app)
    nodes = [state.nodes[a.id], state.nodes[b.id]]
    mermaid = picture.mermaid(state, nodes)
    assert mermaid.startswith("graph LR") and f"n{b.id} -->|DEPENDS_ON| n{a.id}" in mermaid
    assert "#quot;quoted#quot;" in mermaid
    dot = picture.dot(state, nodes)
    assert dot.startswith("digraph contextflow {") and f'"{b.id}" -> "{a.id}" [label="DEPENDS_ON"];' in dot
    assert '\\"quoted\\"' in dot and dot.rstrip().endswith("}")
