"""The on-disk search index (contextflow/derived.py, search/disk.py): incremental updates equal a
rebuild and the in-memory fold, damage and version changes rebuild, processes share one index."""

from __future__ import annotations

import itertools
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextflow.app import App
from contextflow.core.clock import COUNTER_BITS
from contextflow.core.compact import compact
from contextflow.core.events import Event, encode
from contextflow.core.log import log_path
from contextflow.core.progress import Progress
from contextflow.records import core as records
from contextflow.search import derived, retrieval
from contextflow.search.disk import DiskIndex
from contextflow.search.docs import Doc
from tests import search_oracle

WORDS = ("deploy", "token", "refresh", "websocket", "cache", "flaky", "review", "schema", "budget", "retry")
text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
REFS = ("k1", "k2", "n1", "n2")
speaker = st.sampled_from(["maria", "claude"])
payloads = st.one_of(
    st.tuples(st.just("note"), st.fixed_dictionaries({"project": st.sampled_from(["p", "q"]), "text": text})),
    st.tuples(
        st.just("note"),
        st.fixed_dictionaries(
            {"project": st.just("p"), "agent": speaker, "text": text, "session_id": st.sampled_from(["s1", "s2"])}
        ),
    ),
    st.tuples(
        st.just("timeline.thought"),
        st.fixed_dictionaries({"thread_id": st.just("t"), "agent": speaker, "content": text}),
    ),
    st.tuples(
        st.just("timeline.thought_update"),
        st.fixed_dictionaries({"thought_id": st.sampled_from([f"e{n:04d}" for n in range(6)]), "content": text}),
    ),
    st.tuples(
        st.just("context.set"), st.fixed_dictionaries({"key": st.sampled_from(REFS[:2]), "value": text, "label": text})
    ),
    st.tuples(st.just("context.delete"), st.fixed_dictionaries({"key": st.sampled_from(REFS[:2])})),
    st.tuples(
        st.just("graph.node_update"), st.fixed_dictionaries({"node": st.sampled_from(REFS[2:]), "content": text})
    ),
    st.tuples(
        st.sampled_from(["graph.tag", "graph.untag"]),
        st.fixed_dictionaries(
            {"node": st.sampled_from(REFS[2:]), "tags": st.lists(st.sampled_from(["a", "project:p", "b"]), min_size=1)}
        ),
    ),
    st.tuples(st.just("graph.node_delete"), st.fixed_dictionaries({"node": st.sampled_from(REFS[2:])})),
)
# (writer, clock stamp, kind, data): stamps from a small range, so later lines often order before earlier ones
events = st.lists(st.tuples(st.sampled_from(["w-a", "w-b"]), st.integers(1, 40), payloads), min_size=1, max_size=30)


NOW = 1_900_000_000_000


def open_app(root: Path, writer: str = "writer-a", state: str = "state") -> App:
    env = {
        **os.environ,
        "CONTEXTFLOW_STORE": str(root / "store"),
        "CONTEXTFLOW_STATE": str(root / state),
        "CONTEXTFLOW_WRITER": writer,
    }
    return App.open(env)


def on_disk(app: App) -> dict[str, Doc]:
    index = derived.search_for(app.store).index()
    return {doc.doc_id: doc for doc in index.all_docs()}


def in_memory(app: App) -> dict[str, Doc]:
    return dict(search_oracle.memory_index(app.store).docs)


def write_lines(folder: Path, plan: list[tuple[str, int, tuple[str, dict[str, Any]]]], start: int) -> None:
    """Append the planned events straight to each writer's log (what another machine's sync brings)."""
    folder.mkdir(parents=True, exist_ok=True)
    for n, (writer, stamp, (kind, data)) in enumerate(plan, start):
        event = Event(f"e{n:04d}", writer, n + 1, stamp << COUNTER_BITS, kind, data)
        with open(log_path(folder, writer), "ab") as log:
            log.write(encode(event))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=events, cuts=st.lists(st.integers(0, 30), max_size=3))
def test_updating_after_each_chunk_equals_a_rebuild_and_the_in_memory_fold(plan, cuts):
    """Neighbour fields included: sessions' notes and a thread's thoughts from two writers, in any order."""
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        app = open_app(root)
        edges = sorted({0, len(plan), *(min(cut, len(plan)) for cut in cuts)})
        for begin, end in itertools.pairwise(edges):
            write_lines(root / "store", plan[begin:end], begin)
            derived.search_for(app.store).index()  # folds only what this chunk added
        incremental = on_disk(app)
        rebuilt = on_disk(open_app(root, state="state-2"))
        assert incremental == rebuilt == in_memory(app)


def stock(app: App) -> None:
    app.store.append("note", {"project": "web", "text": "the websocket reconnect drops queued messages"})
    app.store.append("note", {"project": "api", "text": "token refresh retries once before failing"})
    app.store.append("context.set", {"key": "deploy.target", "value": {"host": "blue"}, "label": "deploy target"})


def refs(app: App, query: str, **options: Any) -> list[str]:
    return [shown.hit.doc.ref for shown in retrieval.get_context(app, query=query, **options).shown]


def test_search_reads_the_index_on_disk_not_a_folded_view(app):
    stock(app)
    assert not app.store.scanned
    assert len(refs(app, "websocket messages")) == 1
    assert DiskIndex.exists(derived.search_for(app.store).index_folder())
    assert refs(app, "deploy target", project="web") == ["deploy.target"]  # no project: in every project
    assert refs(app, "websocket token", kinds=["context"]) == []


def test_results_match_the_in_memory_ranking(app):
    stock(app)
    for n in range(30):
        app.store.append("note", {"project": "web", "text": f"retry budget {n} " + " ".join(WORDS[: n % 9 + 1])})
        app.store.append("note", {"project": "api", "text": f"deploy {n} " + " ".join(WORDS[-(n % 5 + 1) :])})
    now = 1_900_000_000_000
    for query in ("retry budget", "websocket token deploy", "flaky review schema"):
        for project in (None, "web"):
            wanted = retrieval.Query(query, 10, project=project)
            oracle = [hit.doc.ref for hit in retrieval.rank(search_oracle.memory_index(app.store), wanted, now)]
            assert refs(app, query, project=project, limit=10, now_ms=now) == oracle


def test_a_grant_limited_to_some_projects_searches_the_shared_index_within_them(app):
    from contextflow.adapters.server.auth import Grant
    from contextflow.adapters.server.http import grant_app

    app.store.append("note", {"project": "A", "text": "zebra quartz plan for A"})
    app.store.append("note", {"project": "B", "text": "zebra quartz secret of B"})
    app.store.append("note", {"text": "zebra quartz in the default project"})
    records.set_record(app, key="fact:zebra", value={"text": "zebra quartz, a record of no project"})
    assert len(refs(app, "zebra quartz")) == 4
    for read, expected in (({"A"}, 1), ({"A", "B"}, 2), ({"A", "shared"}, 3)):
        granted = grant_app(app, Grant("t", b"", frozenset(read), frozenset()))
        try:
            assert not granted.store.scanned  # no read of every log: the index, within its projects
            found = retrieval.get_context(granted, query="zebra quartz").shown
            assert len(found) == expected
            assert ("secret of B" in " ".join(shown.hit.doc.text("text") for shown in found)) == ("B" in read)
            only_a = retrieval.get_context(granted, query="zebra quartz", project="A").shown
            no_project = ["fact:zebra"] if "shared" in read else []  # in every project, seen with the default one
            assert only_a[0].hit.doc.text("text") == "zebra quartz plan for A"
            assert [shown.hit.doc.ref for shown in only_a[1:]] == no_project
        finally:
            granted.close()


def test_a_grant_is_told_nothing_of_another_projects_words_by_how_strong_its_matches_are(app, tmp_path):
    from contextflow.adapters.server.auth import Grant
    from contextflow.adapters.server.http import grant_app

    app.store.append("note", {"project": "A", "text": "zebra quartz plan", "agent": "claude"})
    app.store.append("note", {"project": "B", "text": "flamingo secret flamingo", "agent": "maria"})
    only_a = open_app(tmp_path / "only-a")  # what A's reader should see: a store holding A's events alone
    only_a.store.append("note", {"project": "A", "text": "zebra quartz plan", "agent": "claude"})
    granted = grant_app(app, Grant("t", b"", frozenset({"A"}), frozenset()))
    try:
        for query in ("zebra flamingo", "what did maria say about zebra", "zebra"):
            seen = retrieval.get_context(granted, query=query).as_dict()
            alone = retrieval.get_context(only_a, query=query).as_dict()
            assert (seen["weak"], seen["count"]) == (alone["weak"], alone["count"]), query
            assert [r["weak"] for r in seen["results"]] == [r["weak"] for r in alone["results"]], query
        assert retrieval.get_context(granted, query="zebra flamingo").weak  # flamingo: unknown to A
    finally:
        granted.close()
        only_a.close()


def test_a_grants_scores_do_not_move_with_another_projects_words(app):
    from contextflow.adapters.server.auth import Grant
    from contextflow.adapters.server.http import grant_app

    app.store.append("note", {"project": "A", "text": "zebra quartz plan"})
    app.store.append("note", {"project": "A", "text": "ocean harbour lights"})
    granted = grant_app(app, Grant("t", b"", frozenset({"A"}), frozenset()))

    def scores() -> list[float]:
        return [s.hit.score for s in retrieval.get_context(granted, query="zebra quartz", now_ms=NOW).shown]

    try:
        before = scores()
        words = ("alpha", "bravo", "delta", "kilo")  # as long as A's notes: the average length stays (the one
        # statistic of the whole index a grant's scores keep: BM25's length normalisation)
        app.store.append_many([("note", {"project": "B", "text": f"zebra quartz {word}"}) for word in words])
        assert scores() == pytest.approx(before, rel=1e-6)
        unscoped = [s.hit.score for s in retrieval.get_context(app, query="zebra quartz", now_ms=NOW).shown]
        assert min(unscoped) < 0.8 * before[0]  # B's words do lower the scores of a reader of every project
    finally:
        granted.close()


def test_a_search_while_another_process_holds_the_write_lock_says_its_answer_is_partial(app):
    stock(app)
    assert len(refs(app, "websocket messages")) == 1
    holder = sqlite3.connect(app.store.state_dir / "views.sqlite3", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process, writing (or stuck) inside a transaction
    try:
        app.store.append("note", {"project": "web", "text": "zeppelin hangar written while the store is locked"})
        result = retrieval.get_context(app, query="websocket messages")
        assert result.text.splitlines()[1].startswith("PARTIAL: another process holds the derived store's write")
        assert "MB indexed" in result.partial and result.as_dict()["partial"] == result.partial
        assert len(result.shown) == 1  # what the index held is found
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    result = retrieval.get_context(app, query="zeppelin hangar")
    assert not result.partial and len(result.shown) == 1


def test_a_search_far_behind_answers_from_what_is_indexed_while_a_detached_process_builds(app, monkeypatch):
    from contextflow.core import catchup

    stock(app)
    assert len(refs(app, "websocket messages")) == 1
    app.store.append("note", {"project": "web", "text": "zeppelin hangar synced from another machine"})
    monkeypatch.setattr(catchup, "BACKGROUND_BYTES", 0)  # every backlog is a large one
    started: list[int] = []
    monkeypatch.setattr(catchup, "in_background", lambda work: started.append(1))
    result = retrieval.get_context(app, query="websocket messages zeppelin hangar")
    assert started == [1]  # the build runs elsewhere: this search did not fold the backlog
    assert result.text.splitlines()[1].startswith("PARTIAL: the search index is being built on this machine (")
    assert ["websocket" in shown.hit.doc.text("text") for shown in result.shown] == [True]  # what is indexed
    assert "% of " in result.partial and "MB indexed" in result.partial
    derived.search_for(app.store).update()  # what the detached process does
    result = retrieval.get_context(app, query="websocket messages zeppelin hangar")
    assert not result.partial and len(result.shown) == 2


def test_a_detached_build_runs_behind_the_agents_calls(tmp_path):
    """The detached builder lowers its CPU priority: beside a client's calls it takes what they leave."""
    from contextflow.core import catchup

    told = tmp_path / "niceness"

    def build() -> None:  # (written whole, then renamed: the test never reads half of it)
        (tmp_path / "partial").write_text(str(os.nice(0)))
        os.replace(tmp_path / "partial", told)

    catchup.in_background(build)
    deadline = time.monotonic() + 120
    while not told.exists():  # the grandchild runs detached: its file is the event waited for
        assert time.monotonic() < deadline, "the detached build never ran"
        time.sleep(0.01)
    assert int(told.read_text()) == min(os.nice(0) + catchup.BUILD_NICENESS, 19)


def test_a_new_machines_first_search_says_nothing_is_indexed_yet_instead_of_no_match(tmp_path, monkeypatch):
    from contextflow.core import catchup

    first = open_app(tmp_path)
    stock(first)
    first.close()
    monkeypatch.setattr(catchup, "BACKGROUND_BYTES", 0)
    monkeypatch.setattr(catchup, "in_background", lambda work: None)
    fresh = open_app(tmp_path, state="new-machine")
    try:
        result = retrieval.get_context(fresh, query="websocket messages")
        assert result.shown == [] and result.partial.startswith("PARTIAL: the search index is being built")
        assert "Nothing found in what could be searched" in result.text and "0% of " in result.partial
        derived.search_for(fresh.store).update()
        assert len(retrieval.get_context(fresh, query="websocket messages").shown) == 1
    finally:
        fresh.close()


def test_a_damaged_index_is_detected_and_rebuilt(app):
    stock(app)
    assert refs(app, "websocket")
    folder = derived.search_for(app.store).index_folder()
    for path in folder.iterdir():
        if path.is_file():
            path.write_bytes(b"\0garbage")  # a torn or overwritten file
    fresh = App.open()
    assert len(refs(fresh, "websocket")) == 1
    assert on_disk(fresh) == in_memory(fresh)


@pytest.mark.parametrize("suffix", [".store", ".idx", ".term", "meta.json"])
def test_a_damaged_file_of_the_index_is_detected_when_read_and_rebuilt(app, suffix):
    stock(app)
    assert refs(app, "websocket")
    for path in derived.search_for(app.store).index_folder().iterdir():
        if path.name.endswith(suffix):
            path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])  # torn in the middle
    for reader in (app, App.open()):  # a process with the index open, and a new one
        assert len(refs(reader, "websocket")) == 1
    assert on_disk(app) == in_memory(app)


def test_a_version_change_rebuilds(app, monkeypatch):
    stock(app)
    assert refs(app, "websocket")
    before = derived.search_for(app.store).index_folder()
    monkeypatch.setattr(derived, "version_key", lambda: {"engine": "another tantivy"})
    assert len(refs(App.open(), "websocket")) == 1
    after = derived.search_for(app.store).index_folder()
    assert after != before and not before.exists()


def test_a_crash_between_the_index_commit_and_the_read_positions_replays_to_a_fresh_builds_answers(app, monkeypatch):
    """tantivy commits a chunk's documents before the SQLite transaction records its read positions: a crash
    in between (simulated: the transaction fails after the index committed) replays the chunk next time."""
    from contextflow.core import catchup

    stock(app)
    assert refs(app, "websocket")
    app.store.append("context.set", {"key": "deploy.target", "value": {"host": "green"}, "label": "deploy target"})
    app.store.append("note", {"project": "web", "text": "zeppelin hangar"})
    real = catchup.CatchUp._read

    def crash(self: Any, db: Any, *args: Any) -> Any:
        real(self, db, *args)  # the index committed, the positions not yet
        raise KeyboardInterrupt("killed before the transaction commits")

    monkeypatch.setattr(catchup.CatchUp, "_read", crash)
    with pytest.raises(KeyboardInterrupt):
        derived.search_for(app.store).update()
    monkeypatch.setattr(catchup.CatchUp, "_read", real)
    replayed = App.open()
    assert refs(replayed, "zeppelin") and refs(replayed, "green") == ["deploy.target"]
    fresh = open_app(app.store.folder.parent, state="fresh")
    assert on_disk(replayed) == in_memory(replayed) == on_disk(fresh)
    assert refs(fresh, "zeppelin") == refs(replayed, "zeppelin")


def test_deleting_the_derived_folder_is_safe(app):
    stock(app)
    assert refs(app, "websocket")
    shutil.rmtree(app.store.state_dir / derived.FOLDER)
    assert len(refs(app, "websocket")) == 1


def test_a_rewritten_log_rebuilds_and_keeps_every_visible_record(app):
    stock(app)
    for n in range(5):
        app.store.append("context.set", {"key": "deploy.target", "value": {"host": f"green-{n}"}})
    assert refs(app, "deploy target")
    compact(app.store, app.unneeded())
    assert on_disk(app) == in_memory(app)
    assert refs(app, "green") == ["deploy.target"]


def test_an_update_reads_only_the_new_events(app):
    stock(app)
    search = derived.search_for(app.store)
    search.index()
    app.store.append("note", {"project": "web", "text": "one more"})
    assert search.update() == 1
    assert search.update() == 0


PEER = r"""
import sys
from contextflow.app import App
from contextflow.search import derived
app = App.open()
app.store.append("note", {"project": "web", "text": "written and indexed by another process: " + sys.argv[1]})
print(derived.search_for(app.store).update())
"""


def test_another_process_updates_and_this_one_reads_what_it_wrote(app, monkeypatch):
    stock(app)
    assert refs(app, "websocket")
    done = subprocess.run([sys.executable, "-c", PEER, "zeppelin"], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "1"
    search = derived.search_for(app.store)
    monkeypatch.setattr(search, "update", lambda rebuild=False: pytest.fail("the index was already current"))
    assert len(refs(app, "zeppelin")) == 1


STORM = r"""
import sys
from contextflow.app import App
from contextflow.search import derived
app = App.open()
search = derived.search_for(app.store)
for n in range(1000):
    app.store.append_many([("note", {"project": "web", "text": f"storm {sys.argv[1]} {n} websocket"})] * 20)
    print("appended", flush=True)
    search.update()
"""


def test_killing_the_process_that_updates_the_index_loses_nothing(app):
    rng = random.Random(5)
    stock(app)
    for round_ in range(6):
        child = subprocess.Popen([sys.executable, "-c", STORM, str(round_)], stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None
        for _ in range(rng.randint(1, 4)):
            child.stdout.readline()
        child.send_signal(signal.SIGKILL)  # lands inside an update (or an append) at a random point
        child.wait()
        child.stdout.close()
    fresh = App.open()
    assert on_disk(fresh) == in_memory(fresh)


def test_progress_is_shown_only_on_a_terminal(capsys, monkeypatch):
    quiet = Progress(1000)
    quiet.update(500, 10, force=True)
    quiet.finish(10)
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    shown = Progress(1000)
    shown.update(500, 10, force=True)
    shown.finish(20)
    err = capsys.readouterr().err
    assert "10 events" in err and "s left" in err and "indexed 20 events" in err


def test_a_build_of_many_chunks_equals_the_in_memory_fold(app, monkeypatch):
    rng = random.Random(3)
    items = []
    for n in range(600):  # documents touched in many chunks: notes, records set again and deleted, tags
        key = f"fact:k{rng.randint(0, 30)}"
        items.append(
            rng.choice(
                [
                    ("note", {"project": rng.choice(["web", "api"]), "text": f"note {n} " + rng.choice(WORDS)}),
                    (
                        "note",
                        {
                            "project": "web",
                            "session_id": rng.choice(["s1", "s2"]),
                            "agent": rng.choice(["maria", "tom"]),
                            "text": f"turn {n} " + rng.choice(WORDS),
                        },
                    ),
                    ("context.set", {"key": key, "value": {"n": n}, "label": rng.choice(WORDS)}),
                    ("context.delete", {"key": key}),
                    ("graph.tag", {"node": f"n{rng.randint(0, 5)}", "tags": [rng.choice(["a", "b"])]}),
                ]
            )
        )
    other = open_app(app.store.folder.parent, writer="writer-b", state="state-b")  # another machine, same sessions
    for start in range(0, len(items), 50):
        (app if start % 100 else other).store.append_many(items[start : start + 50])
    from contextflow.core import catchup

    monkeypatch.setattr(catchup, "READ_BYTES", 4096)  # many chunks, each committed
    assert derived.search_for(app.store).update(rebuild=True) == 600
    docs = on_disk(app)
    assert docs == in_memory(app)
    index = derived.search_for(app.store).index()
    assert len(index.all_docs()) == len(docs)  # one index document each: none written twice across commits
    assert sum(doc.near[0] != "" and doc.near[1] != "" for doc in docs.values()) > 100  # sessions interleave two logs


def test_late_lines_inside_a_long_session_give_only_their_neighbours_new_near_fields(app):
    """A session of 60 notes indexed, then another machine's lines land between some of them: the
    sink reads only the entries beside them, and the result equals a rebuild and the in-memory fold."""
    root = app.store.folder.parent
    plan = [
        (
            "w-a",
            10 * n,
            ("note", {"project": "p", "session_id": "s", "agent": "maria", "text": f"{WORDS[n % 10]} turn {n}"}),
        )
        for n in range(1, 61)
    ]
    write_lines(root / "store", plan, 0)
    derived.search_for(app.store).index()
    late = [
        ("w-b", stamp, ("note", {"project": "p", "session_id": "s", "agent": "tom", "text": f"late {stamp}"}))
        for stamp in (15, 16, 305, 600, 601)
    ]
    write_lines(root / "store", late, 100)
    derived.search_for(app.store).index()
    docs = on_disk(app)
    assert docs == on_disk(open_app(root, state="state-2")) == in_memory(app)
    late_ids = {f"note:e{n:04d}" for n in range(100, 105)}
    assert {docs["note:e0000"].near[1], docs["note:e0001"].near[0]} <= late_ids  # turns 1 and 2 now border late lines


def test_threads_of_one_process_search_and_update_one_handle(app):
    from concurrent.futures import ThreadPoolExecutor

    stock(app)

    def work(n: int) -> int:
        app.store.append("note", {"project": "web", "text": f"threaded websocket note {n}"})
        return len(refs(app, "threaded", limit=50))

    with ThreadPoolExecutor(4) as pool:
        assert all(found >= 1 for found in pool.map(work, range(12)))
    assert len(refs(app, "threaded", limit=50)) == 12
    assert on_disk(app) == in_memory(app)


def test_a_build_that_commits_midway_writes_each_document_once(tmp_path):
    """A build commits each chunk: a document whose events straddle a commit is read back and replaced,
    not written a second time beside its older version."""
    from contextflow.search.sink import SearchSink

    index = DiskIndex(tmp_path / "search")
    sink = SearchSink(index, fresh=True)
    sink.apply(Event("e1", "w", 1, 1 << COUNTER_BITS, "context.set", {"key": "k", "value": {"v": "one"}}))
    sink.commit()
    sink.apply(Event("e2", "w", 2, 2 << COUNTER_BITS, "context.set", {"key": "k", "value": {"v": "two"}}))
    sink.commit()
    assert [doc.text("value") for doc in index.all_docs()] == ["v: two"]


def test_the_index_reads_events_through_the_same_shape_checks_as_every_view(app):
    """A note whose `tags` is a string, not a list, has that field left out by every view (fields.conform):
    the index on disk and the in-memory fold (the reference) alike, so its word is not found."""
    write_lines(app.store.folder, [("w-x", 5, ("note", {"text": "ordinary words", "tags": "zebra"}))], 0)
    write_lines(app.store.folder, [("w-x", 6, ("note", {"text": "zebra crossing", "tags": ["street"]}))], 1)
    disk, memory = on_disk(app), in_memory(app)
    assert {k: d.fields for k, d in disk.items()} == {k: d.fields for k, d in memory.items()}
    assert "tags.zebra" not in str(disk["note:e0000"].fields) and "zebra" not in str(disk["note:e0000"].fields)
    assert refs(app, "zebra") == ["e0001"]
    assert app.store.health().bad_fields == {"note.tags": 1}


def test_one_background_build_builds_the_tables_and_the_index(tmp_path, monkeypatch):
    from contextflow.core import catchup

    first = open_app(tmp_path)
    stock(first)
    first.close()
    monkeypatch.setattr(catchup, "BACKGROUND_BYTES", 0)  # every backlog is built in the background
    builds: list[int] = []

    def build_here(work: Any) -> None:  # the detached process's work, run before the search goes on
        builds.append(1)
        work()

    monkeypatch.setattr(catchup, "in_background", build_here)
    fresh = open_app(tmp_path, state="new-machine")
    try:
        result = retrieval.get_context(fresh, query="websocket messages")
        assert builds == [1] and result.partial.startswith("PARTIAL: the search index is being built")
        assert fresh.tables().current()  # the tables too, by the same build
        result = retrieval.get_context(fresh, query="websocket messages")
        assert not result.partial and len(result.shown) == 1 and builds == [1]
    finally:
        fresh.close()
