"""Every graph command from a shell: good input, bad input (stderr, non-zero exit), formats."""

import io
import json

import pytest

from contextflow.adapters.cli import main
from contextflow.core.errors import EXIT_BAD_INPUT, EXIT_NOT_FOUND


def run(capsys, *argv, stdin=None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def add(capsys, *argv):
    code, out, _ = run(capsys, "add", *argv, "--format", "json")
    assert code == 0
    return json.loads(out)["id"]


def test_add_show_update_list_and_delete(capsys, monkeypatch):
    node = add(capsys, "--type", "fact", "--tag", "tier:reference", "--meta", "confidence=high", "Go is preferred")
    code, out, _ = run(capsys, "show", node[:6], "--with-edges")
    assert code == 0 and "> Go is preferred" in out and "confidence=high" in out
    code, out, _ = run(capsys, "show", node, "--format", "markdown")
    assert out.startswith(f'- [fact:{node} by "human" ')
    code, out, _ = run(capsys, "update", node, "--type", "decision", "--meta", "confidence=", "--format", "json")
    assert code == 0 and json.loads(out)["type"] == "decision" and json.loads(out)["metadata"] == {}
    code, out, _ = run(capsys, "update", node, "--stdin", stdin="from stdin\n", monkeypatch=monkeypatch)
    assert code == 0 and out.startswith("Updated:")
    code, out, _ = run(capsys, "list", "--type", "decision", "--format", "json")
    assert [n["content"] for n in json.loads(out)["nodes"]] == ["from stdin"]
    code, out, _ = run(capsys, "delete", node)
    assert code == 0 and node in out
    assert run(capsys, "list")[1].startswith("Nodes: no matching nodes.")


def test_add_reads_stdin(capsys, monkeypatch):
    code, out, _ = run(capsys, "add", "--type", "observation", "--stdin", stdin="piped text", monkeypatch=monkeypatch)
    assert code == 0 and out.startswith("Added: ")


def test_link_unlink_edges_tag_untag_and_tags(capsys):
    a = add(capsys, "--type", "fact", "premise")
    b = add(capsys, "--type", "decision", "conclusion")
    assert run(capsys, "link", b, a, "--type", "DEPENDS_ON")[1].startswith("Linked:")
    assert "(already linked)" in run(capsys, "link", b, a, "--type", "depends_on")[1]
    code, out, _ = run(capsys, "edges", a, "--direction", "in", "--format", "json")
    assert code == 0 and json.loads(out)["in"][0]["from"] == b
    assert "DEPENDS_ON" in run(capsys, "unlink", b, a)[1]
    assert "(no edges)" in run(capsys, "edges", a)[1]
    assert run(capsys, "tag", a, "task:x", "tier:working")[1] == f"Tagged {a}: task:x, tier:working\n"
    assert "(already tagged)" in run(capsys, "tag", a, "task:x")[1]
    assert run(capsys, "untag", a, "task:x")[0] == 0
    code, out, _ = run(capsys, "tags", "--prefix", "tier:", "--format", "json")
    assert json.loads(out) == [{"tag": "tier:working", "nodes": 1}]


def test_query_trace_related_summarize_and_supersede(capsys):
    a = add(capsys, "--type", "observation", "--tag", "tier:working", "parser work")
    b = add(capsys, "--type", "observation", "lexer work")
    code, out, _ = run(capsys, "summarize", a, b, "--content", "parsing done", "--archive-sources", "--format", "json")
    summary = json.loads(out)["id"]
    assert code == 0 and json.loads(out)["archived"] == [a, b]
    code, out, _ = run(capsys, "query", "type:observation AND tag:tier:off-context", "--format", "json")
    assert json.loads(out)["total"] == 2
    assert run(capsys, "query", "parser", "--format", "markdown")[1].startswith(f"- [observation:{a}")
    assert f"DERIVED_FROM [observation:{a}]" in run(capsys, "trace", summary)[1]
    assert "Depended on by" in run(capsys, "trace", a, "--reverse")[1]
    code, out, _ = run(capsys, "related", a, "--depth", "2", "--format", "json")
    assert {s["node"]["id"] for s in json.loads(out)["steps"]} == {summary, b}
    newer = add(capsys, "--type", "summary", "parsing done, tested")
    assert run(capsys, "supersede", summary, newer)[1].startswith("Superseded:")
    assert json.loads(run(capsys, "show", summary, "--format", "json")[1])["superseded_by"] == newer


def test_views_compose_and_status(capsys):
    add(capsys, "--type", "fact", "--tag", "tier:pinned", "always here")
    add(capsys, "--type", "fact", "--tag", "tier:reference", "x" * 3000)
    assert run(capsys, "view", "create", "facts", "--query", "type:fact", "--budget", "200")[0] == 0
    assert "facts: type:fact (budget 200)" in run(capsys, "view", "list")[1]
    code, out, err = run(capsys, "view", "render", "facts")
    assert code == 0 and out.startswith("<!-- ctx: 1 nodes") and "1 did not fit" in err
    code, out, _ = run(capsys, "compose", "--query", "type:fact", "--budget", "5000", "--format", "json")
    assert code == 0 and len(json.loads(out)["included"]) == 2
    assert run(capsys, "view", "delete", "facts")[0] == 0
    code, out, _ = run(capsys, "status")
    assert code == 0 and "Nodes: 2" in out and "pinned: 1 nodes" in out


def test_export_import_and_ingest(capsys, tmp_path):
    a = add(capsys, "--type", "fact", "exported")
    code, out, _ = run(capsys, "export")
    assert code == 0 and json.loads(out)["nodes"][0]["id"] == a
    path = tmp_path / "g.json"
    assert run(capsys, "export", "-o", str(path))[0] == 0
    code, out, _ = run(capsys, "import", str(path), "--format", "json")
    assert code == 0 and json.loads(out)["already_present"] == {"node": 1} and json.loads(out)["stored"] == {}
    doc = tmp_path / "notes.md"
    doc.write_text("ingest me")
    code, out, _ = run(capsys, "ingest", str(doc), "--tag", "project:x", "--format", "json")
    assert code == 0 and json.loads(out)["created"] is True
    assert run(capsys, "ingest", str(doc))[1].startswith("Unchanged:")


def test_graph_draws_mermaid_and_dot(capsys):
    a = add(capsys, "--type", "fact", "a")
    b = add(capsys, "--type", "decision", "b")
    run(capsys, "link", b, a, "--type", "DEPENDS_ON")
    assert f"n{b} -->|DEPENDS_ON| n{a}" in run(capsys, "graph")[1]
    assert run(capsys, "graph", "type:fact", "--format", "dot")[1].startswith("digraph")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("add", "--type", "fact"), "add needs the content"),
        (("add", "--type", "fact", "--tag", "bad", "x"), "use namespace:value"),
        (("add", "--type", "fact", "--meta", "novalue", "x"), "is not key=value"),
        (("show", "nosuchid"), "no node id starts with 'nosuchid'"),
        (("update", "nosuchid", "--content", "x"), "no node id starts with"),
        (("delete", "nosuchid"), "no node id starts with"),
        (("link", "a1", "b2"), "no node id starts with"),
        (("tag", "zz", "x:y"), "no node id starts with"),
        (("query", "type:fact AND"), "position 14: expected a term after AND"),
        (("query", "x", "--limit", "0"), "limit must be from 1"),
        (("query", "x", "--limit", "10001"), "--limit must be from 1 to 10000, got 10001"),
        (("list", "--limit", "0"), "--limit must be from 1 to 10000, got 0"),
        (("graph", "--limit", "0"), "--limit must be from 1 to 10000, got 0"),
        (("trace", "zz", "--depth", "101"), "--depth must be from 1 to 100, got 101"),
        (("related", "zz", "--depth", "11"), "--depth must be from 1 to 10, got 11"),
        (("view", "create", "v", "--query", "x", "--budget", "0"), "--budget must be from 1 to 2000000, got 0"),
        (("view", "render", "v", "--budget", "2000001"), "--budget must be from 1 to 2000000, got 2000001"),
        (("query", "x" * 4001), "is 4001 characters; the limit is 4000"),
        (("tags", "--prefix", "p" * 201), "--prefix is 201 characters; the limit is 200"),
        (("add", "--type", "fact", *("--tag", "a:b") * 51, "x"), "--tag has 51 items; the limit is 50"),
        (("trace", "zz"), "no node id starts with"),
        (("related", "zz"), "no node id starts with"),
        (("summarize", "zz", "--content", "s"), "no source id starts with"),
        (("summarize", "zz"), "needs the summary text"),
        (("supersede", "zz", "yy"), "no old id starts with"),
        (("view", "render", "nope"), "no view named 'nope'"),
        (("view", "create", "v", "--query", "(type:fact"), "expected ')'"),
        (("compose", "--budget", "5"), "budget 5 is too small"),
        (("import", "/no/such/file.json"), "cannot read /no/such/file.json"),
        (("ingest", "/no/such/file.md"), "cannot read"),
        (("list", "--tag", "oops"), "use namespace:value"),
        (("graph", "type:"), "expected a node type"),
        (("export", "--query", "NOT"), "expected a term after NOT"),
        (("edges", "zz"), "no node id starts with"),
        (("untag", "zz", "x:y"), "no node id starts with"),
        (("unlink", "zz", "yy"), "no node id starts with"),
        (("view", "delete", "nope"), "no view named 'nope'"),
        (("view", "create", "bad name", "--query", "x"), "view name 'bad name' is not valid"),
    ],
)
def test_bad_input_exits_non_zero_with_the_reason_on_stderr(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    missing = message.startswith("no ") or "/no/such/" in " ".join(argv)  # no such id, or no such file
    assert code == (EXIT_NOT_FOUND if missing else EXIT_BAD_INPUT) and message in err and out == ""


def test_import_refuses_text_that_is_not_json(capsys, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    code, _, err = run(capsys, "import", str(path))
    assert code == 2 and "not valid JSON" in err


def test_unknown_node_types_are_usage_errors(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["add", "--type", "rumour", "x"])
    assert exc.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_every_graph_command_has_help_and_appears_in_the_docs():
    import re
    from pathlib import Path

    from contextflow.graph import operations as graph_table
    from contextflow.operations.spec import operations

    docs = (Path(__file__).resolve().parent.parent / "docs" / "graph.md").read_text()
    documented = ("hook", "install")  # converted by another change; checked once they are in the table
    commands = [
        op for op in operations() if op.command and (op in graph_table.TABLE.operations or op.command[0] in documented)
    ]
    assert len(commands) >= 26
    for op in commands:
        name = op.command[0]
        assert op.cli_description or op.summary, f"{name} has no description"
        assert re.search(rf"contextflow {name}\b", docs), f"{name} is not in docs/graph.md"
