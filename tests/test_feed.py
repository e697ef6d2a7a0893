"""The activity feed and the derived tables under it (core/tables.py): newest first, filters, paging,
incremental updates from the logs' new bytes, rebuilds on damage, version changes and rewritten logs."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import pytest

from contextflow.app import App
from contextflow.core.errors import InputError
from contextflow.core.log import log_path
from contextflow.core.tables import DB_FILE, tables_for
from contextflow.features import all_projections
from contextflow.feed import projection as feed_table
from contextflow.feed.core import FeedItem, facets, recent
from tests.conftest import open_app
from tests.table import run


def fill(app: App) -> None:
    store = app.store
    store.append("note", {"project": "web", "agent": "claude", "session_id": "s1", "text": "first note"})
    store.append("handoff", {"project": "web", "agent": "claude", "session_id": "s1", "summary": "done with login"})
    store.append("clock.tick", {"nothing": "a kind no person follows"})
    store.append("graph.node", {"project": "api", "agent": "codex", "type": "decision", "content": "use sqlite"})
    store.append("context.set", {"project": "api", "key": "db", "value": {"engine": "sqlite"}})
    store.append(
        "capture.turn",
        {
            "project": "web",
            "agent": "claude",
            "session_id": "s2",
            "turn_id": "t1",
            "turn": {"request": "fix", "final": "fixed"},
        },
    )


def test_recent_lists_what_people_follow_newest_first(app: App) -> None:
    fill(app)
    items = recent(app)
    assert [item.kind for item in items] == ["capture.turn", "context.set", "graph.node", "handoff", "note"]
    assert items[0] == FeedItem(
        items[0].id, items[0].at, "web", "claude", "writer-a", "capture.turn", "s2", "fix -> fixed"
    )
    assert items[1].text == 'db: {"engine":"sqlite"}'
    assert items[2].text == "[decision] use sqlite"
    assert items[0].at.endswith("Z") and items[0].at >= items[-1].at


def test_filters_and_facets(app: App) -> None:
    fill(app)
    assert [i.kind for i in recent(app, project="api")] == ["context.set", "graph.node"]
    assert [i.text for i in recent(app, agent="codex")] == ["[decision] use sqlite"]
    assert [i.kind for i in recent(app, session_id="s1")] == ["handoff", "note"]
    assert [i.kind for i in recent(app, kind="note", project="web")] == ["note"]
    assert recent(app, machine="writer-b") == []
    assert len(recent(app, machine="writer-a")) == 5
    assert facets(app) == {
        "projects": ["api", "web"],
        "agents": ["claude", "codex"],
        "machines": ["writer-a"],
        "kinds": ["capture.turn", "context.set", "graph.node", "handoff", "note"],
    }


def test_paging_with_before(app: App) -> None:
    for n in range(7):
        app.store.append("note", {"project": "p", "text": f"note {n}"})
    first = recent(app, limit=3)
    second = recent(app, limit=3, before=first[-1].id)
    third = recent(app, limit=3, before=second[-1].id)
    assert [i.text for i in first + second + third] == [f"note {n}" for n in range(6, -1, -1)]
    assert recent(app, before="1970-01-02T00:00:00Z") == []
    assert len(recent(app, before="9999-01-01T00:00:00Z")) == 7


def test_bad_arguments_say_what_to_pass(app: App) -> None:
    fill(app)
    with pytest.raises(InputError, match="limit must be from 1 to 500, got 0"):
        run(app, "recent_activity", limit=0)
    with pytest.raises(InputError, match="limit must be a whole number, got True"):
        run(app, "recent_activity", limit=True)
    with pytest.raises(InputError, match="before must be the id of a feed item"):
        run(app, "recent_activity", before="yesterday-ish")
    with pytest.raises(InputError, match="project must be a string"):
        run(app, "recent_activity", project=3)
    assert len(recent(app)) == 5  # nothing stored was touched


def test_text_is_cleaned_and_bounded(app: App) -> None:
    app.store.append("note", {"project": "p", "text": "\x1b[31mred\x1b[0m line\nnext <!-- x --> " + "w" * 2000})
    (item,) = recent(app)
    assert item.text.startswith("red line next < !-- x -- > ")
    assert len(item.text) == feed_table.TEXT_CHARS and item.text.endswith("...")


def test_a_turn_captured_twice_is_listed_once(app: App) -> None:
    turn = {"project": "p", "session_id": "s", "turn_id": "same", "turn": {"request": "r"}}
    first = app.store.append("capture.turn", turn)
    other = open_app("writer-b")
    try:
        other.store.append("capture.turn", turn)
        assert [i.id for i in recent(other)] == [first.id]
        assert [i.id for i in recent(app)] == [first.id]
    finally:
        other.close()


def test_another_process_appends_and_only_the_new_bytes_are_read(app: App) -> None:
    fill(app)
    assert len(recent(app)) == 5
    tables = app.tables()
    before = tables.caught_up
    other = open_app("writer-b")
    try:
        other.store.append("note", {"project": "web", "agent": "gemini", "text": "from b"})
        items = recent(app)
        assert items[0].text == "from b" and items[0].machine == "writer-b"
        assert tables.caught_up - before == 1  # only writer-b's one new line was read
        assert "writer-b" in facets(app)["machines"]
        assert recent(other)[0].text == "from b"
        assert tables_for(other.store, all_projections).caught_up == 0  # the other process found it current
    finally:
        other.close()


def rows(app: App) -> list[tuple[object, ...]]:
    return app.tables().query("SELECT id, hlc, w, seq, kind, project, agent, session_id, text FROM feed ORDER BY id")


def test_equal_to_a_fresh_rebuild(app: App, tmp_path: Path) -> None:
    other = open_app("writer-b")
    try:
        for n in range(30):
            (app if n % 3 else other).store.append("note", {"project": f"p{n % 4}", "text": f"n{n}"})
            if n % 7 == 0:
                recent(app)  # read in between: incremental
        incremental = rows(app)
    finally:
        other.close()
    app.tables().close()
    db = tmp_path / "state"
    for found in db.rglob(DB_FILE + "*"):
        found.unlink()
    assert rows(app) == incremental and len(incremental) == 30


def test_a_damaged_database_is_rebuilt(app: App) -> None:
    fill(app)
    recent(app)
    path = app.tables().path
    app.tables().close()
    path.write_bytes(b"this is not a database" * 100)
    assert len(recent(app)) == 5


def test_a_rewritten_log_rebuilds(app: App, store_dir: Path) -> None:
    fill(app)
    assert len(recent(app)) == 5
    log = log_path(store_dir, "writer-a")
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:2]))  # as compaction would: the file no longer continues
    assert [i.kind for i in recent(app)] == ["handoff", "note"]


def test_a_version_change_rebuilds_only_that_format(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    fill(app)
    recent(app)
    tables = app.tables()
    tables.query("UPDATE feed SET text = 'stale'")  # what a format built by older code would hold
    assert recent(app)[0].text == "stale"  # same version: kept
    table_set = tables.sets["feed"]
    bumped = table_set._replace(format=table_set.format._replace(version=table_set.format.version + 1))
    monkeypatch.setitem(tables.sets, "feed", bumped)
    assert recent(app)[0].text == "fix -> fixed"
    assert tables.query("SELECT version FROM formats WHERE name = 'feed'") == [(table_set.format.version + 1,)]


def test_a_clock_bound_lowers_an_event_whichever_is_read_first(app: App) -> None:
    from contextflow.core.clock import stamp_from_ms
    from contextflow.core.events import Event, encode

    early = app.store.append("note", {"project": "p", "text": "early"})
    future = Event(
        "F" * 16, "writer-z", 1, stamp_from_ms(253_000_000_000_000), "note", {"project": "p", "text": "year 9987"}
    )
    bound = Event("B" * 16, "writer-z", 2, early.hlc + 10, "clock.bound", {"ids": [future.id]})
    log = log_path(app.store.folder, "writer-z")
    log.write_bytes(encode(future))
    assert recent(app)[0].text == "year 9987"  # read before its bound
    with log.open("ab") as handle:
        handle.write(encode(bound))
    later = app.store.append("note", {"project": "p", "text": "later"})
    assert [i.text for i in recent(app)] == ["later", "year 9987", "early"]
    assert later.hlc > early.hlc + 10


def test_a_reader_does_not_wait_for_a_stuck_writer(app: App) -> None:
    fill(app)
    recent(app)
    holder = sqlite3.connect(app.tables().path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process updating (or stuck)
    try:
        app.store.append("note", {"project": "web", "text": "new"})
        done = threading.Event()
        found: list[FeedItem] = []

        def read() -> None:
            found.extend(recent(app))
            done.set()

        worker = threading.Thread(target=read, daemon=True)
        worker.start()
        assert done.wait(30), "the read waited without end"
        assert len(found) == 6 and found[0].text == "new"  # the tables as they are, and the logs' bytes past them
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert recent(app)[0].text == "new"


def test_a_grant_sees_only_its_projects(app: App) -> None:
    fill(app)

    class Grant:
        read = frozenset({"api"})

    app.store.grant = Grant()  # type: ignore[attr-defined]
    assert {i.project for i in recent(app)} == {"api"}
    assert recent(app, project="web") == []
    assert facets(app)["projects"] == ["api"]


def test_an_upgrade_that_changes_no_format_keeps_the_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    import contextflow

    first = App.open()
    fill(first)
    recent(first)
    first.close()
    monkeypatch.setattr(contextflow, "__version__", "99.0")  # another release, the same formats
    upgraded = App.open()
    try:
        assert len(recent(upgraded)) == 5
        assert upgraded.tables().caught_up == 0  # nothing rebuilt
    finally:
        upgraded.close()


def test_while_another_process_makes_the_database_a_reader_answers_from_the_logs(app: App) -> None:
    fill(app)
    path = app.tables().path
    path.parent.mkdir(parents=True, exist_ok=True)
    builder = sqlite3.connect(path, isolation_level=None)
    builder.execute("PRAGMA journal_mode=WAL")
    builder.execute("BEGIN IMMEDIATE")  # a first build under way: nothing committed yet
    try:
        # answered from the logs' bytes the tables do not hold yet: nothing deleted or built twice
        assert len(recent(app)) == 5 and facets(app)["kinds"] != []
        assert app.tables().caught_up == 0
    finally:
        builder.execute("ROLLBACK")
        builder.close()
    assert path.exists() and len(recent(app)) == 5


def test_a_big_backlog_is_built_by_one_background_process_while_readers_answer(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    from contextflow.core import catchup

    fill(app)
    monkeypatch.setattr(catchup, "BACKGROUND_BYTES", 100)  # as if the logs were big
    told: list[str] = []
    app.store.progress = told.append
    first = recent(app)  # answered at once: what is built so far and the logs' bytes past it
    assert len(first) == 5 and told and "in the background" in told[0]
    deadline = time.monotonic() + 60
    while not app.tables().current():  # the background builder's work arrives
        assert time.monotonic() < deadline, "the background build did not finish"
        time.sleep(0.05)
    assert len(recent(app)) == 5 and app.tables().caught_up == 0  # this process read nothing itself
    assert app.tables().differing() == []


# -- the `feed` command (the operations table's row the page calls too) ----------------------------


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from contextflow.adapters.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_feed_command_lists_newest_first_with_provenance(capsys: pytest.CaptureFixture[str]) -> None:
    _cli(capsys, "note", "parser done", "--session", "s1", "--project", "web", "--agent", "codex")
    _cli(capsys, "handoff", "tests pass", "--session", "s1", "--project", "web", "--agent", "codex")
    code, out, _ = _cli(capsys, "feed", "--project", "web")
    assert code == 0
    assert out.index("> tests pass") < out.index("> parser done"), out
    assert "agent=codex" in out and "session=s1" in out and "project=web" in out
    code, out, _ = _cli(capsys, "feed", "--kind", "note", "--format", "json")
    data = __import__("json").loads(out)
    assert code == 0 and [item["text"] for item in data["items"]] == ["parser done"]
    assert "web" in data["facets"]["projects"]


def test_the_feed_command_pages_with_before(capsys: pytest.CaptureFixture[str]) -> None:
    for n in range(3):
        _cli(capsys, "note", f"note {n}", "--session", "s1", "--project", "web")
    code, out, _ = _cli(capsys, "feed", "--limit", "2", "--kind", "note")
    assert code == 0 and "Older: pass before=" in out
    position = out.rsplit("before=", 1)[1].strip().rstrip(".")
    code, out, _ = _cli(capsys, "feed", "--kind", "note", "--before", position)
    assert code == 0 and "> note 0" in out and "> note 2" not in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("feed", "--limit", "0"), "--limit"),
        (("feed", "--limit", "9999"), "--limit"),
        (("feed", "--before", "not a time"), "ISO time"),
    ],
)
def test_the_feed_command_refuses_bad_input_and_says_why(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], message: str
) -> None:
    code, _, err = _cli(capsys, *argv)
    assert code == 2 and message in err, err


def test_an_empty_feed_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli(capsys, "feed", "--agent", "nobody")
    assert code == 0 and "nothing matches" in out


def test_the_feed_command_refuses_an_unknown_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        _cli(capsys, "feed", "--bogus")
    assert refused.value.code == 2 and "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_nodes_and_timeline_items_made_in_a_repository_are_filed_under_its_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As search files them: a node by its `project:` tag, a thread and a thought by where they were made."""
    from contextflow.adapters.cli import main
    from tests.conftest import git_checkout

    monkeypatch.chdir(git_checkout(tmp_path / "shop", "git@github.com:acme/shop.git"))
    assert main(["add", "--type", "fact", "made in the shop"]) == 0
    capsys.readouterr()
    assert main(["timeline", "create", "shop work", "--format", "json"]) == 0
    thread = json.loads(capsys.readouterr().out)["id"]
    assert main(["timeline", "add", thread, "first step"]) == 0
    assert main(["note", "a note", "--agent", "me"]) == 0
    app = App.open()
    try:
        app.store.append("graph.node", {"type": "fact", "content": "old node", "tags": ["project:acme/shop"]})
        shop = recent(app, project="acme/shop")
        assert sorted(item.kind for item in shop) == [
            "graph.node",
            "graph.node",
            "note",
            "timeline.thought",
            "timeline.thread",
        ]
        assert recent(app, project="shared") == []
    finally:
        app.close()


def test_a_text_another_table_keeps_is_not_stored_again_and_shows_the_same(app: App) -> None:
    """A note's, a handoff's and a captured turn's line is made from the sessions' or the captured turns'
    row when read; a turn those do not keep under its id (no session, a turn id "") keeps its own text."""
    turn = {"project": "web", "turn": {"request": "ask", "final": "answered"}}
    fill(app)
    app.store.append("capture.turn", {**turn, "turn_id": "no-session"})
    app.store.append("capture.turn", {**turn, "session_id": "s3", "turn_id": "", "turn": {"request": "one"}})
    app.store.append("capture.turn", {**turn, "session_id": "s3", "turn_id": "", "turn": {"request": "two"}})
    app.store.append("capture.turn", {**turn, "session_id": " ", "turn_id": "blank"})
    stored = dict(app.tables().query("SELECT id, text FROM feed"))
    items = recent(app)
    assert [item.text for item in items[:5]] == ["ask -> answered", "two", "one", "ask -> answered", "fix -> fixed"]
    assert [stored[item.id] for item in items[:5]] == ["ask -> answered", "two", "one", "ask -> answered", None]
    assert [stored[item.id] for item in items if item.kind in ("note", "handoff")] == [None, None]
    assert [item.text for item in items if item.kind in ("note", "handoff")] == ["done with login", "first note"]


def test_a_turn_first_captured_without_its_session_keeps_its_text(app: App) -> None:
    turn = {"project": "web", "turn_id": "t9", "turn": {"request": "r", "final": "f"}}
    first = app.store.append("capture.turn", turn)
    other = open_app("writer-b")
    try:
        other.store.append("capture.turn", {**turn, "session_id": "s1"})
        assert [(i.id, i.text) for i in recent(other)] == [(first.id, "r -> f")]
    finally:
        other.close()
