"""Seed 003 (`ctx`) users: its global flags and variable work as the spec says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextflow.adapters.cli import main


@pytest.mark.parametrize(
    "argv",
    [
        ["compose", "--format", "markdown"],
        ["--format", "markdown", "compose"],
        ["--format=markdown", "sessions"],
        ["sessions", "--format", "markdown"],
        ["--format", "markdown", "show", "NODE"],
    ],
)
def test_format_markdown_is_accepted_on_every_command(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["add", "--type", "fact", "parser uses JSONL", "--format", "json"]) == 0
    node = json.loads(capsys.readouterr().out)["id"]
    assert main([node if word == "NODE" else word for word in argv]) == 0
    out = capsys.readouterr().out
    assert not out.lstrip().startswith("{")  # the document, not JSON


def test_a_global_format_json_gives_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--format", "json", "sessions"]) == 0
    assert "sessions" in json.loads(capsys.readouterr().out)


def test_an_unknown_format_is_still_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        main(["sessions", "--format", "yaml"])
    assert refused.value.code == 2 and "markdown" in capsys.readouterr().err


def test_db_flag_names_the_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "ctx-store"
    assert main(["--db", str(other), "note", "kept here", "--agent", "a", "--session", "s"]) == 0
    assert list(other.glob("events.*.jsonl"))
    assert not (tmp_path / "store").exists()


def test_ctx_db_names_the_store_when_contextflow_store_is_unset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "ctx-store"
    monkeypatch.delenv("CONTEXTFLOW_STORE")
    monkeypatch.setenv("CTX_DB", str(other))
    assert main(["note", "kept here", "--agent", "a", "--session", "s"]) == 0
    assert list(other.glob("events.*.jsonl"))
    capsys.readouterr()
    assert main(["doctor", "--format", "json"]) in (0, 1)
    assert json.loads(capsys.readouterr().out)["chosen_by"] == "CTX_DB"


def test_a_plain_import_fails_on_a_conflicting_node_and_merge_keeps_the_local_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["add", "--type", "fact", "cache TTL is 5 minutes", "--format", "json"]) == 0
    node = json.loads(capsys.readouterr().out)["id"]
    export = tmp_path / "graph.json"
    assert main(["export", "-o", str(export)]) == 0
    assert main(["update", node, "--content", "cache TTL is 10 minutes"]) == 0
    capsys.readouterr()
    assert main(["import", str(export)]) == 2
    assert "a plain import stops on a conflict" in capsys.readouterr().err
    assert main(["import", str(export), "--merge"]) == 0
    assert "node differing here, kept (--merge) (1)" in capsys.readouterr().out
    assert main(["show", node]) == 0
    assert "10 minutes" in capsys.readouterr().out
    assert main(["import", str(export)]) == 2  # still a conflict: nothing was changed by --merge


def test_importing_an_unchanged_export_again_is_already_present(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["add", "--type", "fact", "cache TTL is 5 minutes"]) == 0
    export = tmp_path / "graph.json"
    assert main(["export", "-o", str(export)]) == 0
    capsys.readouterr()
    assert main(["import", str(export)]) == 0
    assert "Already present: 1 node." in capsys.readouterr().out


def test_ingest_splits_a_file_over_the_node_limit_into_parts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from contextflow.app import App
    from contextflow.graph.model import MAX_CONTENT_CHARS
    from contextflow.graph.writes import graph

    big = tmp_path / "big.md"
    line = "a line of the design notes, long enough to matter\n"
    big.write_text(line * (MAX_CONTENT_CHARS // len(line) * 2 + 10))
    assert main(["ingest", str(big), "--format", "json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["created"] and len(done["parts"]) == 2
    assert main(["ingest", str(big), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == {**done, "created": False, "parts": []} | {"supersedes": None}
    big.write_text("short now\n")
    assert main(["ingest", str(big), "--format", "json"]) == 0
    again = json.loads(capsys.readouterr().out)
    app = App.open()
    try:
        state = graph(app)
        kept = "\n".join(state.nodes[i].content for i in [done["id"], *done["parts"]])
        assert kept == (line * (MAX_CONTENT_CHARS // len(line) * 2 + 10)).strip()  # nothing lost between parts
        assert all(state.superseded_by(i) for i in [done["id"], *done["parts"]])
        assert state.nodes[again["id"]].content == "short now"
    finally:
        app.close()
