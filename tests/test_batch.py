"""`--stdin`: many items of one command as JSON lines, stored in one write, all or nothing."""

from __future__ import annotations

import io
import json
from collections import Counter

import pytest

from contextflow.adapters.cli import main
from contextflow.app import App
from contextflow.core.log import list_segments, read_whole


def feed(monkeypatch: pytest.MonkeyPatch, *lines: object) -> None:
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(text))


def stored_kinds() -> Counter[str]:
    app = App.open()
    lines = [raw for path in list_segments(app.store.folder) for _, raw in read_whole(path)[1]]
    return Counter(json.loads(raw)["kind"] for raw in lines)


def test_notes_from_stdin_are_stored_in_one_write_with_flags_as_defaults(monkeypatch, capsys):
    feed(
        monkeypatch,
        *({"text": f"note {n} about the websocket", **({"project": "api"} if n % 2 else {})} for n in range(50)),
    )
    assert main(["note", "--stdin", "--agent", "codex", "--project", "web"]) == 0
    assert "Stored 50 item(s)" in capsys.readouterr().out
    assert stored_kinds()["note"] == 50
    assert main(["search", "websocket", "--project", "api", "--format", "json", "--limit", "50"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["count"] == 25
    assert all(item["project"] == "api" and item["agent"] == "codex" for item in found["results"])


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (['{"text": "fine"}', "not json"], "line 2 is not valid JSON"),
        (['{"text": "fine"}', "[1, 2]"], "line 2 must be a JSON object"),
        (['{"text": "fine"}', "", '{"text": 5}'], "line 3: text must be a string"),
        (['{"text": "fine"}', '{"txt": "typo"}'], "line 2: `contextflow note` does not take 'txt'"),
    ],
)
def test_a_bad_line_is_named_and_nothing_of_the_batch_is_stored(monkeypatch, capsys, lines, expected):
    feed(monkeypatch, *lines)
    assert main(["note", "--stdin", "--agent", "codex"]) == 2
    err = capsys.readouterr().err
    assert expected in err and "nothing was stored" in err
    assert stored_kinds()["note"] == 0


def test_handoffs_context_records_and_conversations_take_stdin_too(monkeypatch):
    feed(monkeypatch, {"summary": "shipped the index", "task": "index"}, {"summary": "second", "task": "t2"})
    assert main(["handoff", "--stdin", "--agent", "codex"]) == 0
    feed(monkeypatch, {"key": "pr:12", "value": {"state": "open"}}, {"key": "pr:13", "value": {"state": "merged"}})
    assert main(["context", "set", "--stdin"]) == 0
    feed(monkeypatch, {"topic": "disk index", "summary": "tantivy chosen"}, {"topic": "batch", "summary": "stdin"})
    assert main(["conversations", "save", "--stdin"]) == 0
    kinds = stored_kinds()
    assert (kinds["handoff"], kinds["context.set"], kinds["conversation.save"]) == (2, 2, 2)


def test_json_output_lists_each_items_reply(monkeypatch, capsys):
    feed(monkeypatch, {"key": "fact:a", "value": {"n": 1}}, {"key": "fact:b", "value": {"n": 2}})
    assert main(["context", "set", "--stdin", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["stored"] == 2 and len(out["results"]) == 2


def test_a_batch_of_handoffs_reads_sessions_from_the_tables_and_the_newest_is_the_latest(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextflow.adapters.batch import run_batch
    from contextflow.operations.spec import operations
    from contextflow.sessions import core as sessions

    sessions.write_handoff(app, agent="a", summary="before the batch", session_id="s")
    folded: list[object] = []
    real = app.store.refresh
    monkeypatch.setattr(app.store, "refresh", lambda: folded.append("refresh") or real())
    op = next(each for each in operations() if each.name == "write_shared_handoff")
    lines = io.StringIO("".join(json.dumps({"summary": f"batch {n}", "session_id": "s"}) + "\n" for n in range(3)))
    assert run_batch(op, app, {"agent": "codex"}, lines)[0] == 3
    latest = sessions.latest_handoff(app, sessions.EntryFilter("shared", session_id="s"))
    assert latest is not None and latest.data["summary"] == "batch 2"
    assert folded == []  # no read of every log for it


def test_a_batch_reads_records_conversations_graph_and_timeline_from_the_tables_and_sees_its_own_items(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextflow.adapters.batch import collecting, run_batch
    from contextflow.conversations.core import conversations_state
    from contextflow.graph import writes as graph
    from contextflow.operations.spec import operations
    from contextflow.records.core import get_record
    from contextflow.timeline.core import create_thread, resolve_thread

    before = create_thread(app, name="before the batch")
    folded: list[object] = []
    real_refresh = app.store.refresh

    def refresh() -> None:
        folded.append("refresh")
        real_refresh()

    monkeypatch.setattr(app.store, "refresh", refresh)
    with collecting(app):
        thread = create_thread(app, name="made in the batch")
        assert resolve_thread(app, thread.id[:8]).name == "made in the batch"
        node = graph.add_node(app, type="fact", content="the batch's own node")
        second = graph.add_node(app, type="fact", content="and a second")
        assert graph.link(app, node.id[:8], second.id)  # both ends found, the prefix resolved
        assert not graph.link(app, node.id, second.id)  # the edge the batch just made is there already
    ops = {op.name: op for op in operations()}
    items = [
        {"key": "fact:a", "value": {"n": 1}, "label": "first", "thread_id": thread.id[:8]},
        {"key": "fact:a", "value": {"n": 2}},  # keeps the label and thread the batch's first item gave it
        {"key": "fact:b", "value": {"n": 3}, "thread_id": before.id},
    ]
    assert run_batch(ops["context_set"], app, {}, io.StringIO("".join(json.dumps(i) + "\n" for i in items)))[0] == 3
    saves = [{"conversation_id": "c1", "topic": "t", "summary": f"save {n}"} for n in range(2)]
    stored, replies = run_batch(
        ops["conversations save"], app, {}, io.StringIO("".join(json.dumps(i) + "\n" for i in saves))
    )
    assert stored == 2 and [reply["replaced"] for reply in replies] == [False, True]
    assert folded == []  # no read of every log for it
    record = get_record(app, key="fact:a")
    assert (record.data["value"], record.data["label"], record.data["thread_id"]) == ({"n": 2}, "first", thread.id)
    assert get_record(app, key="fact:b").data["thread_id"] == before.id
    assert conversations_state(app).records[(app.settings.default_project, "c1")].event.data["summary"] == "save 1"
    assert graph.graph(app).edge_live(node.id, second.id, "RELATES_TO")


def test_a_failing_line_leaves_the_tables_without_the_batchs_earlier_items(monkeypatch, capsys):
    feed(monkeypatch, {"key": "fact:kept-out", "value": {"n": 1}}, {"key": "not a key", "value": {"n": 2}})
    assert main(["context", "set", "--stdin"]) == 2
    assert "line 2" in capsys.readouterr().err
    assert main(["context", "get", "fact:kept-out"]) == 3  # read in the batch, rolled back with it
    assert "no context record under 'fact:kept-out'" in capsys.readouterr().err
    feed(monkeypatch, {"key": "fact:kept-out", "value": {"n": 3}})
    assert main(["context", "set", "--stdin"]) == 0
    capsys.readouterr()
    assert main(["context", "get", "fact:kept-out", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["value"] == {"n": 3}


def test_where_the_tables_do_not_open_a_batch_still_sees_its_earlier_items(monkeypatch, capsys):
    from contextflow.core.tables import Tables

    monkeypatch.setattr(Tables, "usable", lambda self: False)  # (a read-only or full state folder)
    feed(monkeypatch, {"key": "fact:x", "value": {"n": 1}, "label": "first"}, {"key": "fact:x", "value": {"n": 2}})
    assert main(["context", "set", "--stdin"]) == 0
    capsys.readouterr()
    assert main(["context", "get", "fact:x", "--format", "json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert (found["value"], found["label"]) == ({"n": 2}, "first")
