"""What a graph import keeps while it gets faster: nodes are staged as read and a key given again is settled at
the end (its first place, its last record, whatever chunk each fell in); a staged node's JSON is stored as it is
only when it holds no `<private>` text; secrets in any observation are redacted on the batch path (an import's
many events, scanned in chunks); a second import stores nothing; the collector's threshold comes back."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import pytest

from contextflow.app import App
from contextflow.core import jsonio
from contextflow.core.errors import NotFoundError
from contextflow.graph import writes
from contextflow.graph.model import MAX_CONTENT_CHARS
from contextflow.imports import run, stage
from contextflow.imports.model import NodeRecord
from contextflow.imports.run import run_import

TOKEN = "ghp_" + "Ab3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3gH5"
CLOUDANT = "ab12" * 16  # 64 hex digits after a Cloudant credential name: a rule that requires its words


def entity(name: str, *observations: str) -> dict[str, object]:
    return {"type": "entity", "name": name, "entityType": "person", "observations": list(observations)}


def memory_file(tmp_path: Path, lines: list[dict[str, object]]) -> Path:
    path = tmp_path / "memory.json"
    path.write_text("\n".join(json.dumps(line) for line in lines))
    return path


def logs(app: App) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(app.store.folder.glob("*.jsonl")))


def contents(app: App) -> dict[str, str]:
    state = writes.graph(app)
    return {str(state.nodes[i].metadata.get("name")): state.nodes[i].content for i in state.live}


def record(key: str, content: str) -> NodeRecord:
    return NodeRecord(key, "fact", content, ["kind:x"], {"name": key})


def test_a_key_given_again_in_later_chunks_keeps_its_first_place_and_takes_its_last_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stage, "CHUNK", 2)  # every two items a flush: the repeats fall in other chunks
    too_long = "x" * (MAX_CONTENT_CHARS + 1)
    given = [
        ("A", "first"),
        ("B", too_long),  # refused, then given again fine
        ("C", "c"),
        ("A", "second"),
        ("D", "d"),
        ("B", "b fixed"),
        ("A", "third"),
        ("C", too_long),  # fine, then given again refused
    ]
    with stage.Stage(tmp_path, "server-memory") as staged:
        at = staged.file("memory.json")
        for key, content in given:
            staged.add(at, record(key, content))
        staged.finish()
        rows = list(staged.nodes())
        assert staged.repeated == 4
    assert [row[0] for row in rows] == [stage.node_id("server-memory", key) for key in "ABCD"]
    by_key = {str(row[4]["metadata"]["name"]) if row[4] else "C": row for row in rows}
    assert by_key["A"][4] is not None and by_key["A"][4]["content"] == "third"
    assert by_key["B"][4] is not None and by_key["B"][4]["content"] == "b fixed" and by_key["B"][5] == ""
    assert by_key["C"][4] is None and "item 'C'" in by_key["C"][5]
    assert by_key["A"][7] == jsonio.dumps(by_key["A"][4])  # its JSON, to be stored as it is


def test_private_text_is_never_stored_even_in_a_key_given_again(app: App, tmp_path: Path) -> None:
    """The last record of a key holds `<private>` text its first did not: the staged JSON (of the first
    record's kind, storable as it is) must not be taken for the last record's."""
    lines = [entity(f"e{n}", f"fact {n}") for n in range(40)]
    lines += [entity("e3", "now <private>hidden-words</private> shown"), entity("e50", "<private>gone</private> kept")]
    run_import(app, str(memory_file(tmp_path, lines)))
    stored = logs(app)
    assert b"hidden-words" not in stored and b"gone" not in stored and b"<private>" not in stored
    found = contents(app)
    assert found["e3"] == "e3 (person)\n- now  shown" and found["e50"] == "e50 (person)\n-  kept"
    assert found["e7"] == "e7 (person)\n- fact 7"


def test_secrets_in_any_observation_are_redacted_among_many_items(app: App, tmp_path: Path) -> None:
    """Enough items for the batch scan (`secrets.suspects`), a secret in a later observation of some of them:
    a token format, and a Cloudant credential whose rule runs only where its words are."""
    lines = [entity(f"e{n}", f"plain fact {n}", "second observation") for n in range(300)]
    lines[17] = entity("e17", "plain fact", "deploys with " + TOKEN)
    lines[250] = entity("e250", "plain fact", f"cloudant_password = {CLOUDANT}")
    run_import(app, str(memory_file(tmp_path, lines)))
    stored = logs(app)
    assert TOKEN.encode() not in stored and CLOUDANT.encode() not in stored
    found = contents(app)
    assert "[REDACTED:GitHub token]" in found["e17"] and "[REDACTED:" in found["e250"]
    assert found["e18"] == "e18 (person)\n- plain fact 18\n- second observation"


def test_a_second_import_of_a_large_file_stores_nothing(app: App, tmp_path: Path) -> None:
    """Over a stage chunk of nodes and edges, a key given twice: the second import finds them all present."""
    lines = [entity(f"e{n}", f"fact {n}") for n in range(2_500)] + [entity("e5", "given again")]
    lines += [
        {"type": "relation", "from": f"e{n}", "to": f"e{n * 7 % 2_500}", "relationType": "calls"} for n in range(300)
    ]
    source = memory_file(tmp_path, lines)
    first = run_import(app, str(source))
    assert dict(first.stored) == {"node": 2_500, "edge": 300} and first.skipped == {"repeated item": 1}
    before = logs(app)
    again = run_import(App.open(), str(source))
    assert not again.stored and again.present == {"node": 2_500, "edge": 300}
    assert logs(app) == before


def test_the_collector_passes_less_often_during_an_import_and_as_before_after_it(
    app: App, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threshold, during = gc.get_threshold(), []
    planned = run._run

    def watched(*args: Any) -> Any:
        during.append(gc.get_threshold())
        return planned(*args)

    monkeypatch.setattr(run, "_run", watched)
    run_import(app, str(memory_file(tmp_path, [entity("a", "b")])))
    assert gc.get_threshold() == threshold
    with pytest.raises(NotFoundError, match="no such file"):
        run_import(app, str(tmp_path / "missing.json"))
    assert gc.get_threshold() == threshold
    assert during == [(max(threshold[0], run.YOUNG_COLLECTED), *threshold[1:])] * 2
