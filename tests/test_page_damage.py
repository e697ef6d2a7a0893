"""One 4 KB page of `views.sqlite3` zeroed (the first page of a table or an index, found with SQLite's
`dbstat`): the read that meets it answers as a fresh rebuild answers (or says it is partial when more of the
logs is left than a call reads), never "not found" or an empty list from the empty new file; `doctor` names
the damaged file and rebuilds it."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from contextflow.app import App
from contextflow.core import rest
from tests.test_derived_damage import cli, hook
from tests.test_own_writes_while_building import building_elsewhere

PAGE = 4096


def fill() -> None:
    """Sessions of two projects (enough entries for their tables to span pages), graph nodes, a thread."""
    lines = [
        json.dumps(
            {"text": f"note {n} " + "word " * 40, "project": ("alpha", "beta")[n % 2], "session_id": f"s{n % 3}"}
        )
        for n in range(300)
    ]
    assert cli("note", "--stdin", stdin="\n".join(lines).encode())[0] == 0
    for n in range(3):
        assert cli("handoff", f"handoff {n}", "--project", "alpha", "--session", f"s{n}", "--agent", "claude")[0] == 0
    for n in range(3):
        assert cli("add", "--type", "fact", f"fact number {n}")[0] == 0
    assert cli("timeline", "create", "the journey")[0] == 0


READS: dict[str, tuple[str, ...]] = {
    "latest": ("latest", "--project", "alpha"),
    "read": ("read", "--project", "alpha", "--session", "s1", "--limit", "200"),
    "sessions": ("sessions", "--project", "alpha"),
    "graph": ("list",),
    "whereami": ("whereami",),
    "search": ("search", "handoff"),
}


def answer(name: str) -> tuple[int, Any]:
    code, text = cli("--format", "json", *READS[name])
    found = json.loads(text)
    if isinstance(found, dict):
        found.pop("now", None)  # (whereami's clock)
    return code, found


def views() -> Path:
    return App.open().store.state_dir / "views.sqlite3"


def zero_first_page(db: Path, name: str) -> None:
    """Write zeros over the first page of table or index `name` (every commit checkpointed into the file first)."""
    with contextlib.closing(sqlite3.connect(db)) as con:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (page,) = con.execute("SELECT min(pageno) FROM dbstat WHERE name = ?", (name,)).fetchone()
    assert page, f"no page of {name}"
    with db.open("r+b") as file:
        file.seek((page - 1) * PAGE)
        file.write(bytes(PAGE))


def rebuilt(name: str) -> tuple[int, Any]:
    """The answer of a fresh rebuild (the database deleted first)."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{views()}{suffix}").unlink(missing_ok=True)
    return answer(name)


CASES = [
    ("sessions_marks", "latest"),
    ("sessions_entries", "read"),
    ("sessions", "sessions"),
    ("graph_node_text", "graph"),
    ("graph_nodes", "graph"),
    ("graph_edges_dst", "graph"),
    ("records_key", "whereami"),
    ("sessions_handoffs", "latest"),
    ("search_files", "search"),
    ("search_state", "search"),
]


@pytest.mark.parametrize(("table", "read"), CASES)
def test_a_zeroed_page_answers_as_a_fresh_rebuild(table: str, read: str) -> None:
    fill()
    want = answer(read)
    zero_first_page(views(), table)
    got = answer(read)
    assert got == want, f"{read} with the first page of {table} zeroed"
    assert rebuilt(read) == want


@pytest.mark.parametrize("table", ["graph_nodes_dedupe", "sessions_handoffs", "timeline_threads"])
def test_a_session_start_meeting_a_zeroed_page_answers_as_a_fresh_rebuild(
    table: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook reads every table of the session start in one catch-up (`Tables.as_of_now`): a damaged page
    met there is read again from the rebuilt tables, never an empty answer."""
    fill()
    monkeypatch.setenv("MCP_SHARED_CONTEXT_PROJECT", "alpha")
    payload = {"session_id": "s-next", "cwd": str(tmp_path), "hook_event_name": "SessionStart"}
    want = hook("session-start", payload)
    assert "handoff 2" in want
    zero_first_page(views(), table)
    assert hook("session-start", payload) == want


def test_a_zeroed_page_over_the_rest_s_bound_says_partial(monkeypatch: pytest.MonkeyPatch) -> None:
    fill()
    zero_first_page(views(), "sessions_marks")
    monkeypatch.setattr(rest, "REST_BYTES", 0)  # (as if the logs were larger than a call reads,
    building_elsewhere(monkeypatch)  # and built in the background)
    code, text = cli(*READS["latest"])
    assert code == 0, text
    assert "handoff 2" in text and "% of" in text and "indexed" in text, text


def test_doctor_names_a_damaged_views_file_and_rebuilds_it() -> None:
    fill()
    want = answer("latest")
    zero_first_page(views(), "sessions_entries")
    code, text = cli("doctor", "--format", "json")
    info = json.loads(text[: text.rindex("}") + 1])
    assert info["tables"]["damaged"], info["tables"]
    assert any("views.sqlite3" in problem and "damaged" in problem for problem in info["problems"])
    assert code != 0
    code, text = cli("doctor", "--format", "json")
    info = json.loads(text[: text.rindex("}") + 1])
    assert not info["tables"]["damaged"] and info["tables"]["current"]
    assert not any("damaged" in problem for problem in info["problems"])
    assert answer("latest") == want


def test_doctor_quick_names_a_damaged_views_file_and_fix_rebuilds_it() -> None:
    fill()
    want = answer("sessions")
    zero_first_page(views(), "sqlite_autoindex_sessions_entries_1")
    code, text = cli("doctor", "--quick")
    assert code != 0 and "views.sqlite3 is damaged" in text and "doctor --fix" in text, text
    code, text = cli("doctor", "--quick", "--fix")
    assert "deleted and rebuilt" in text, text
    code, text = cli("doctor", "--quick", "--format", "json")
    info = json.loads(text[: text.rindex("}") + 1])
    assert not info["tables"]["damaged"] and info["tables"]["current"]
    assert answer("sessions") == want


def meets_an_impossible_row(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The next query's reader meets a row that cannot be (as when an index page SQLite does not flag names a
    row that is not there): a KeyError, once."""
    real = rest.Reading.query
    met: list[str] = []

    def query(self: rest.Reading, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        if not met:
            met.append(sql)
            raise KeyError("a row an index names is not there")
        return real(self, sql, params)

    monkeypatch.setattr(rest.Reading, "query", query)
    return met


def test_a_reader_meeting_an_impossible_row_of_a_damaged_file_answers_from_the_rebuilt_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fill()
    want = answer("latest")
    zero_first_page(views(), "feed_facets")  # (a page `latest` never reads)
    met = meets_an_impossible_row(monkeypatch)
    assert answer("latest") == want and met
    _, text = cli("doctor", "--quick")
    assert "damaged" not in text, text


def test_a_reader_s_error_over_an_intact_file_is_not_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    fill()
    meets_an_impossible_row(monkeypatch)
    with pytest.raises(KeyError):
        answer("latest")


def test_a_tool_meeting_an_impossible_row_of_a_damaged_file_answers_from_the_rebuilt_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from contextflow.adapters.server.app import ContextflowServer

    fill()
    app = App.open()
    server = ContextflowServer(app)
    want = server.call("get_latest_handoff", {"project": "alpha"})
    zero_first_page(views(), "feed_facets")  # (a page the call never reads)
    met = meets_an_impossible_row(monkeypatch)
    got = server.call("get_latest_handoff", {"project": "alpha"})
    app.close()
    assert met and not got.is_error and got.content == want.content, got.content
