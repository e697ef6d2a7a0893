"""A search right after a write commits nothing: the events past the index's last commit (the tail,
search/tail.py) are ranked beside the index, the same as once committed, and a commit comes once the
tail passes its bound."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from typing import Any

import orjson
import pytest

from contextflow.app import App
from contextflow.core.log import log_path
from contextflow.search import derived, retrieval
from contextflow.search.disk import DiskIndex
from contextflow.search.retrieval import Query, rank
from contextflow.search.tail import NORMS, TailedIndex, norm
from contextflow.search.tokens import query_terms
from tests import search_oracle

NOW = 1_900_000_000_000
WORDS = ("deploy", "token", "refresh", "websocket", "cache", "flaky", "review", "schema", "budget", "retry")


def refs(app: App, query: str, **more: Any) -> list[str]:
    return [shown.hit.doc.ref for shown in retrieval.get_context(app, query=query, limit=50, **more).shown]


def committed(app: App) -> dict[str, Any]:
    """The read positions state.json records (what the index has committed)."""
    state = orjson.loads((app.store.state_dir / derived.FOLDER / derived.STATE_FILE).read_bytes())
    return {name: entry["cursor"][4] for name, entry in state["segments"].items()}


def ranked(index: Any, text: str, **more: Any) -> list[tuple[str, float]]:
    return [(hit.doc.doc_id, hit.score) for hit in rank(index, Query(text=text, limit=20, **more), NOW)]


def note(n: int, **more: Any) -> dict[str, Any]:
    """A note of 2 to 12 words (few equal scores: ties at a pool's edge fall as the index orders them)."""
    pick = random.Random(n)
    words = " ".join(pick.choice(WORDS) for _ in range(pick.randint(1, 8))) + " filler" * pick.randint(0, 3)
    return {"project": "p" if n % 3 else "q", "text": f"{words} item{n}", **more}


QUERIES = (
    ("websocket token", {}),
    ("flaky review budget", {}),
    ("deploy cache", {"project": "p"}),
    ("retry schema", {"kinds": frozenset({"note"})}),
)


def test_tantivys_length_table():
    assert NORMS[:41] == list(range(41)) and NORMS[41:44] == [42, 44, 46] and NORMS[-1] == 2013265944
    assert norm(41) == 40 and norm(43) == 42 and norm(2**40) == NORMS[-1]


def raw_pool(index: Any, text: str, near: bool = True, **more: Any) -> dict[str, float]:
    """The raw BM25 pool of a query by document id (the candidates before the levers)."""
    terms = query_terms(text)
    pool = index.pool(terms, 200, more.get("kinds", ()), more.get("project"), near)
    return {hit.doc.doc_id: hit.score for hit in index.hits([(c.raw, c) for c in pool])}


def test_a_document_in_the_tail_scores_as_tantivy_scores_it_committed(app):
    """The same terms committed and in the tail (each record put again with its value, each thought
    updated with its text): the statistics are the same, so the scores must be too."""
    records, thoughts = [], []
    for n in range(30):
        value = note(n)["text"] + (" filler words" * (20 + n) if n % 5 == 0 else "")  # long: one-byte norms
        record = {"key": f"k{n}", "value": value, "project": "p" if n % 3 else "q"}
        app.store.append("context.set", record)
        content = note(n + 7)["text"]
        thought = app.store.append("timeline.thought", {"thread_id": f"t{n % 3}", "agent": "maria", "content": content})
        if n % 4 == 0:
            app.store.append("timeline.thought_update", {"thought_id": thought.id, "content": content})
        records.append(record)
        thoughts.append((thought.id, content))
    search = derived.search_for(app.store)
    disk = search.index()
    queries = [(text, more) for text, more in QUERIES] + [("websocket token", {"near": False})]
    before = {text + str(more): raw_pool(disk, text, **more) for text, more in queries}
    for record in records[1::2]:
        app.store.append("context.set", record)
    for thought_id, content in thoughts[::2]:
        app.store.append("timeline.thought_update", {"thought_id": thought_id, "content": content})
    tailed = search.searchable()
    assert isinstance(tailed, TailedIndex) and len(tailed) > 15
    compared = 0
    for text, more in queries:
        after = raw_pool(tailed, text, **more)
        assert set(after) == set(before[text + str(more)]), text
        assert after == pytest.approx(before[text + str(more)], rel=1e-5), text
        compared += len(set(after) & set(tailed.pending))
    assert compared > 20  # tail documents were compared, not only committed ones


def test_a_search_ranks_the_tail_as_once_committed(app):
    for n in range(300):
        app.store.append("note", note(n))
    search = derived.search_for(app.store)
    search.index()
    before = committed(app)
    for n in range(300, 306):
        app.store.append("note", note(n))
    tailed = search.searchable()
    assert isinstance(tailed, TailedIndex) and len(tailed) == 6
    queries = (*QUERIES, ("item302 item305 websocket token", {}))
    found = {text: ranked(tailed, text, **more) for text, more in queries}
    raw = {text: raw_pool(tailed, text, **more) for text, more in queries}
    assert committed(app) == before  # nothing committed on the way
    index = search.index()  # commits the tail
    assert committed(app) != before and isinstance(search.searchable(), DiskIndex)
    shown = set()
    for text, more in queries:
        # a tail document's raw score is tantivy's once committed
        mine = {d: score for d, score in raw[text].items() if d in tailed.pending}
        assert mine == pytest.approx({d: raw_pool(index, text, **more)[d] for d in mine}, rel=1e-5), text
        shown |= set(mine)
        # the commit adds the tail to the statistics the committed documents are scored with (as every
        # commit moves them): the final scores move a little, so only near ties trade places at the edge
        again, first = dict(ranked(index, text, **more)), dict(found[text])
        both = set(again) & set(first)
        assert len(both) >= 18, text
        assert {d: again[d] for d in both} == pytest.approx({d: first[d] for d in both}, rel=0.05), text
    assert len(shown) >= 3  # tail documents among them


def test_an_update_or_delete_in_the_tail_hides_the_committed_version(app):
    app.store.append("context.set", {"key": "k1", "value": "alpha websocket"})
    app.store.append("context.set", {"key": "k2", "value": "gamma websocket"})
    assert sorted(refs(app, "websocket")) == ["k1", "k2"]
    before = committed(app)
    app.store.append("context.set", {"key": "k1", "value": "beta websocket"})
    app.store.append("context.delete", {"key": "k2"})
    assert refs(app, "alpha") == [] and refs(app, "gamma") == []
    assert refs(app, "beta") == ["k1"] and refs(app, "websocket") == ["k1"]
    assert committed(app) == before
    assert isinstance(derived.search_for(app.store).searchable(), TailedIndex)


def test_a_write_then_a_search_finds_it_without_a_commit_and_the_bound_commits(app, monkeypatch):
    app.store.append("note", {"project": "p", "text": "websocket first"})
    assert refs(app, "websocket")
    before = committed(app)
    monkeypatch.setattr(derived, "TAIL_EVENTS", 5)
    for n in range(5):
        app.store.append("note", {"project": "p", "text": f"websocket more{n}"})
        assert refs(app, f"more{n}")
        assert committed(app) == before
    app.store.append("note", {"project": "p", "text": "websocket sixth"})
    assert len(refs(app, "websocket")) == 7
    assert committed(app) != before  # six events past the commit: over the bound
    assert isinstance(derived.search_for(app.store).searchable(), DiskIndex)
    monkeypatch.setattr(derived, "TAIL_BYTES", 200)
    app.store.append("note", {"project": "p", "text": "websocket " + "long " * 60})
    after = committed(app)
    assert len(refs(app, "websocket")) == 8 and committed(app) != after  # over the bytes bound


PEER = r"""
import os, signal, sys
from contextflow.app import App
from contextflow.search import derived, retrieval
app = App.open()
if sys.argv[1] == "write":
    app.store.append("note", {"project": "p", "text": "zeppelin from another process"})
    found = retrieval.get_context(app, query="zeppelin")
    print(len(found.shown), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # killed after its search, before anything committed the tail
else:
    print(",".join(shown.hit.doc.ref for shown in retrieval.get_context(app, query=sys.argv[2]).shown))
"""


def test_another_process_sees_the_tail_and_a_kill_before_the_commit_loses_nothing(app):
    app.store.append("note", {"project": "p", "text": "websocket here"})
    assert refs(app, "websocket")
    before = committed(app)
    done = subprocess.run([sys.executable, "-c", PEER, "write"], capture_output=True, text=True, timeout=120)
    assert done.returncode == -9 and done.stdout.strip() == "1"
    assert committed(app) == before  # its search committed nothing
    assert len(refs(app, "zeppelin")) == 1
    app.store.append("note", {"project": "p", "text": "airship written here"})
    read = subprocess.run([sys.executable, "-c", PEER, "read", "airship"], capture_output=True, text=True, timeout=120)
    assert read.returncode == 0 and len(read.stdout.strip().split(",")) == 1
    assert committed(app) == before
    derived.search_for(app.store).index()  # committed now: the same documents as a fold of the logs
    memory = App.open()
    on_disk = {doc.doc_id: doc for doc in derived.search_for(app.store).index().all_docs()}
    assert on_disk == dict(search_oracle.memory_index(memory.store).docs)


def test_bad_lines_in_the_tail_are_skipped_and_counted(app):
    app.store.append("note", {"project": "p", "text": "websocket first"})
    assert refs(app, "websocket")
    before = committed(app)
    path = log_path(app.store.folder, app.store.writer)
    with open(path, "ab") as log:
        log.write(b'{"not": "an event"}\n\xff\xfe undecodable\n')
    app.store.append("note", {"project": "p", "text": "websocket after the bad lines"})
    assert len(refs(app, "websocket")) == 2
    assert committed(app) == before
    assert app.store.health().bad_line_count == 2
    derived.search_for(app.store).index()
    assert len(refs(app, "websocket")) == 2 and committed(app) != before


def test_a_commit_by_another_handle_replaces_the_tail(app, tmp_path):
    app.store.append("note", {"project": "p", "text": "websocket first"})
    assert refs(app, "websocket")
    app.store.append("note", {"project": "p", "text": "websocket second"})
    assert len(refs(app, "websocket")) == 2
    other = App.open(dict(os.environ))
    derived.search_for(other.store).index()  # another handle (as another process) commits the tail
    other.close()
    search = derived.search_for(app.store)
    assert isinstance(search.searchable(), DiskIndex)
    app.store.append("note", {"project": "p", "text": "websocket third"})
    assert len(refs(app, "websocket")) == 3
    assert isinstance(search.searchable(), TailedIndex) and len(search.searchable()) == 1


WRITER = r"""
from contextflow.app import App
from contextflow.search import derived, retrieval
derived.TAIL_EVENTS = 3  # this process commits every few events
app = App.open()
for n in range(40):
    app.store.append("note", {"project": "p", "text": f"storm item{n} websocket"})
    retrieval.get_context(app, query="websocket")
    print(n, flush=True)
"""


def test_searches_stay_whole_while_another_process_commits(app):
    app.store.append("note", {"project": "p", "text": "websocket first"})
    assert refs(app, "websocket")
    child = subprocess.Popen([sys.executable, "-c", WRITER], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        seen = 0
        for line in child.stdout:  # after each of its commits or tail reads, this process searches
            written = int(line) + 1
            found = len(refs(app, "websocket"))
            assert found >= written + 1 and found >= seen  # everything written so far, never fewer
            seen = found
        assert child.wait(timeout=120) == 0
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    assert len(refs(app, "websocket")) == 41
    fresh = App.open()
    on_disk = {doc.doc_id: doc for doc in derived.search_for(app.store).index().all_docs()}
    assert on_disk == dict(search_oracle.memory_index(fresh.store).docs)
