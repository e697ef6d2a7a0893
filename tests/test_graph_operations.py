"""The graph and recall rows of the operations table: cheap to read, faithful to the core, one payload
for a command and its tool, and graph_update's changes written at once."""

import json
import subprocess
import sys

import pytest

from contextflow.adapters.cli import main
from contextflow.adapters.server.app import ContextflowServer
from contextflow.graph import compose, model, writes
from contextflow.graph import operations as graph_table
from contextflow.graph import present as present_graph
from contextflow.search import operations as search_table
from contextflow.search.extractors import search_kinds


def test_the_tables_and_the_cores_share_each_limit_and_list():
    """Said once, in the feature's light fields.py: the table and the core use the same object."""
    from contextflow.graph import explore as graph_explore
    from contextflow.records import core as records_core
    from contextflow.records import fields as records_fields
    from contextflow.search import fields as search_fields
    from contextflow.sessions import core as sessions_core
    from contextflow.sessions import operations as sessions_table
    from contextflow.timeline import core as timeline_core
    from contextflow.timeline import operations as timeline_table

    assert graph_table.NODE_TYPES is model.NODE_TYPES and graph_table.EDGE_TYPES is model.EDGE_TYPES
    assert graph_table.MAX_TAGS is model.MAX_TAGS and graph_table.BUDGET == (1, model.MAX_BUDGET)
    assert graph_table.DEFAULT_LIMIT is graph_explore.DEFAULT_LIMIT
    assert graph_table.DEFAULT_LIST_LIMIT is graph_explore.DEFAULT_LIST_LIMIT
    assert graph_table.DEFAULT_TRACE_DEPTH is graph_explore.WALKS["provenance"][0]
    assert graph_table.DEFAULT_RELATED_DEPTH is graph_explore.WALKS["related"][0]
    assert tuple(graph_explore.WALKS) == graph_table.FOLLOWS
    assert graph_table.DEFAULT_VIEW_BUDGET is model.DEFAULT_VIEW_BUDGET
    assert search_table.SEARCH_KINDS is search_fields.SEARCH_KINDS
    assert search_table.MAX_BUDGET is search_fields.MAX_BUDGET
    # the table checks each status and type; the core maps a status verb and fills in the defaults
    assert timeline_table.STATUS_VERBS is timeline_core.STATUS_VERBS
    assert timeline_table.DEFAULT_WHERE is timeline_core.DEFAULT_WHERE
    assert timeline_table.DEFAULT_THOUGHTS is timeline_core.DEFAULT_THOUGHTS
    assert records_core.DEFAULT_SINCE_DAYS is records_fields.DEFAULT_SINCE_DAYS
    assert sessions_core.DEFAULT_LIMIT is sessions_table.fields.DEFAULT_LIMIT


def test_the_copies_a_table_still_keeps_agree_with_the_core():
    """What only the core can compute (the extractors' kinds) or what lives with the core's code."""
    assert search_kinds() == search_table.SEARCH_KINDS
    assert graph_table.DEFAULT_QUERY == compose.DEFAULT_QUERY


def test_reading_the_tables_imports_neither_the_graph_nor_the_search_index():
    code = (
        "import sys, contextflow.graph.operations, contextflow.conversations.operations\n"
        "print(sorted(m for m in sys.modules if m.startswith(('contextflow.graph.', 'contextflow.search.'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['contextflow.graph.fields', 'contextflow.graph.operations']"  # fields.py: light


def test_graph_update_changes_fields_and_tags_in_one_write(app, monkeypatch):
    node = writes.add_node(app, type="observation", content="draft", tags=["tier:working"])
    batches = []
    original = app.store.append_many
    monkeypatch.setattr(app.store, "append_many", lambda items: batches.append(list(items)) or original(items))
    reply = present_graph.graph_update(
        app,
        {
            "id": node.id,
            "content": "final",
            "add_tags": ["tier:reference"],
            "remove_tags": ["tier:working"],
        },
    )
    assert len(batches) == 1 and [kind for kind, _ in batches[0]] == [model.NODE_UPDATE, model.TAG, model.UNTAG]
    assert (reply.data["content"], reply.data["tags"]) == ("final", ["tier:reference"])


def test_a_tag_added_and_removed_in_one_update_ends_removed_and_repeats_write_nothing(app):
    node = writes.add_node(app, type="fact", content="x", tags=["task:a"])
    writes.update_node(app, node.id, add_tags=["task:b"], remove_tags=["task:b"])
    assert writes.graph(app).tags_of(node.id) == {"task:a"}
    before = app.store.event_count
    writes.update_node(app, node.id, add_tags=["task:a"])
    assert app.store.event_count == before


def test_update_with_nothing_to_change_names_what_it_takes(app):
    node = writes.add_node(app, type="fact", content="x")
    with pytest.raises(Exception, match="nothing to update: pass content, type, summary or metadata"):
        writes.update_node(app, node.id, add_tags=[])


@pytest.fixture
def server(app_with_tools):
    return ContextflowServer(app_with_tools("recall,graph"))


def test_add_and_graph_remember_answer_with_the_same_payload(server, capsys):
    assert main(["add", "--type", "fact", "--tag", "tier:reference", "from the shell", "--format", "json"]) == 0
    from_cli = json.loads(capsys.readouterr().out)
    from_tool = server.call("graph_remember", {"content": "from a client", "type": "fact"}).structured_content
    assert set(from_cli) == set(from_tool) and {"links", "content", "writer", "tags"} <= set(from_cli)


def test_search_and_get_context_answer_with_the_same_payload(server, capsys):
    server.call("graph_remember", {"content": "Terraform state lives in S3", "type": "fact"})
    assert main(["search", "terraform state", "--format", "json"]) == 0
    from_cli = json.loads(capsys.readouterr().out)
    from_tool = server.call("get_context", {"query": "terraform state", "format": "json"}).structured_content
    assert from_cli == from_tool and from_cli["markdown"].startswith("# Context for: terraform state")


def test_what_did_not_fit_ends_the_tool_text_and_goes_to_stderr_on_the_cli(server, capsys):
    server.call("graph_remember", {"content": "pinned", "type": "fact", "tags": ["tier:pinned"]})
    server.call("graph_remember", {"content": "y" * 4000, "type": "fact", "tags": ["tier:reference"]})
    text = server.call("graph_compose", {"budget": 300}).content[0].text
    last = text.splitlines()[-1]
    assert text.startswith("<!-- ctx: 1 nodes") and last.startswith("(1 node(s), ") and "1 did not fit" in last
    assert main(["compose", "--budget", "300"]) == 0
    out, err = capsys.readouterr()
    assert "node(s), " not in out and "1 node(s), " in err and "1 did not fit" in err
