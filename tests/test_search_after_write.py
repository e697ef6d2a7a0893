"""A search right after a write finds it: the new events are committed to the index before the search,
by this process or another, and what is committed equals a fold of the logs."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from contextflow.app import App
from contextflow.core.log import log_path
from contextflow.search import derived, retrieval
from tests import search_oracle


def refs(app: App, query: str, **more: Any) -> list[str]:
    return [shown.hit.doc.ref for shown in retrieval.get_context(app, query=query, limit=50, **more).shown]


def folded(app: App) -> None:
    """The index holds exactly the documents a fold of the logs makes."""
    on_disk = {doc.doc_id: doc for doc in derived.search_for(app.store).index().all_docs()}
    assert on_disk == dict(search_oracle.memory_index(App.open().store).docs)


def test_an_update_or_delete_right_after_a_search_hides_the_earlier_version(app):
    app.store.append("context.set", {"key": "k1", "value": "alpha websocket"})
    app.store.append("context.set", {"key": "k2", "value": "gamma websocket"})
    assert sorted(refs(app, "websocket")) == ["k1", "k2"]
    app.store.append("context.set", {"key": "k1", "value": "beta websocket"})
    app.store.append("context.delete", {"key": "k2"})
    assert refs(app, "alpha") == [] and refs(app, "gamma") == []
    assert refs(app, "beta") == ["k1"] and refs(app, "websocket") == ["k1"]


def test_each_write_is_found_by_the_search_after_it(app):
    app.store.append("note", {"project": "p", "text": "websocket first"})
    assert refs(app, "websocket")
    for n in range(5):
        app.store.append("note", {"project": "p", "text": f"websocket more{n}"})
        assert refs(app, f"more{n}")
    app.store.append("note", {"project": "p", "text": "websocket " + "long " * 60})
    assert len(refs(app, "websocket")) == 7
    folded(app)


PEER = r"""
import os, signal, sys
from contextflow.app import App
from contextflow.search import retrieval
app = App.open()
if sys.argv[1] == "write":
    app.store.append("note", {"project": "p", "text": "zeppelin from another process"})
    found = retrieval.get_context(app, query="zeppelin")
    print(len(found.shown), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # killed right after its search
else:
    print(",".join(shown.hit.doc.ref for shown in retrieval.get_context(app, query=sys.argv[2]).shown))
"""


def test_another_process_finds_a_write_and_a_kill_after_its_search_loses_nothing(app):
    app.store.append("note", {"project": "p", "text": "websocket here"})
    assert refs(app, "websocket")
    done = subprocess.run([sys.executable, "-c", PEER, "write"], capture_output=True, text=True, timeout=120)
    assert done.returncode == -9 and done.stdout.strip() == "1"
    assert len(refs(app, "zeppelin")) == 1
    app.store.append("note", {"project": "p", "text": "airship written here"})
    read = subprocess.run([sys.executable, "-c", PEER, "read", "airship"], capture_output=True, text=True, timeout=120)
    assert read.returncode == 0 and len(read.stdout.strip().split(",")) == 1
    folded(app)


def test_bad_lines_among_new_events_are_skipped_and_counted(app):
    app.store.append("note", {"project": "p", "text": "websocket first"})
    assert refs(app, "websocket")
    path = log_path(app.store.folder, app.store.writer)
    with open(path, "ab") as log:
        log.write(b'{"not": "an event"}\n\xff\xfe undecodable\n')
    app.store.append("note", {"project": "p", "text": "websocket after the bad lines"})
    assert len(refs(app, "websocket")) == 2
    assert app.store.health().bad_line_count == 2
    folded(app)


def test_a_commit_by_another_handle_is_seen_and_later_writes_too(app):
    app.store.append("note", {"project": "p", "text": "websocket first"})
    assert refs(app, "websocket")
    app.store.append("note", {"project": "p", "text": "websocket second"})
    other = App.open(dict(os.environ))
    derived.search_for(other.store).index()  # another handle (as another process) commits the new event
    other.close()
    assert len(refs(app, "websocket")) == 2
    app.store.append("note", {"project": "p", "text": "websocket third"})
    assert len(refs(app, "websocket")) == 3


WRITER = r"""
from contextflow.app import App
from contextflow.search import retrieval
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
        for line in child.stdout:  # after each of its commits, this process searches
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
    folded(app)


MEMORY_SCRIPT = """
import sys
from contextflow.app import App
from contextflow.search import retrieval

def anon_kb():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    raise SystemExit("no RssAnon")

app = App.open()
for n in range(20):
    app.store.append("note", {"project": "p", "text": f"warm up {n} websocket"})
retrieval.get_context(app, query="websocket")
before = anon_kb()
for n in range(60):
    app.store.append("note", {"project": "p", "text": f"note {n} websocket parser"})
    assert retrieval.get_context(app, query="websocket").shown
print(anon_kb() - before)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's malloc arenas, read from /proc")
def test_a_server_that_commits_before_each_search_keeps_its_memory(app):
    """Each search after a write commits, and a writer's threads start every time: glibc gave each its own
    malloc arena and kept what it freed (anonymous memory grew by about 150 MB in 60 writes and searches)."""
    grown = subprocess.run(
        [sys.executable, "-c", MEMORY_SCRIPT], env=os.environ, capture_output=True, text=True, timeout=300, check=True
    )
    assert int(grown.stdout) < 60_000, f"anonymous memory grew by {grown.stdout.strip()} kB"


def test_a_server_commits_a_write_to_the_index_while_the_client_reads_the_reply(app):
    from contextflow.adapters.server.app import ContextflowServer

    server = ContextflowServer(app)
    note = {"text": "the websocket reconnects", "session_id": "s1", "agent": "claude"}
    assert not server.call("append_shared_note", note).is_error
    assert server.indexing.thread is not None
    assert server.indexing.settle(timeout=120)
    assert derived.describe(app.store)["documents"] is None  # not built yet: that is the first search's
    assert not server.call("get_context", {"query": "websocket"}).is_error  # the index is built
    assert not server.call("append_shared_note", {**note, "text": "the websocket drops"}).is_error
    assert server.indexing.settle(timeout=120)
    about = derived.describe(app.store)
    assert about["current"] and about["documents"] == 2  # committed with no search asking
    read_only = ContextflowServer(app)
    read_only.call("get_context", {"query": "websocket"})
    assert read_only.indexing.thread is None and not read_only.indexing.waiting()  # (a search starts nothing)


def test_the_search_after_an_idle_commit_opens_nothing_the_idle_work_opened_it(app, monkeypatch):
    """A write's commit, done while the client is quiet, also checks the new files and opens their searcher:
    the search that follows reloads nothing (reloading is most of what a search after a write paid)."""
    from contextflow.adapters.server.app import ContextflowServer
    from contextflow.search.disk import DiskIndex

    server = ContextflowServer(app)
    note = {"text": "the websocket reconnects", "session_id": "s1", "agent": "claude"}
    assert not server.call("append_shared_note", note).is_error
    assert not server.call("get_context", {"query": "websocket"}).is_error  # (the first search builds the index)
    reloads: list[DiskIndex] = []
    plain = DiskIndex.reload
    monkeypatch.setattr(DiskIndex, "reload", lambda self: (reloads.append(self), plain(self))[1])
    assert not server.call("append_shared_note", {**note, "text": "the websocket drops"}).is_error
    assert server.indexing.settle(timeout=120) and reloads  # committed and reloaded while idle
    index = derived.search_for(app.store).index()
    opened, reloads[:] = index._searcher, []
    assert opened is not None
    found = server.call("get_context", {"query": "drops"})
    assert not found.is_error and "the websocket drops" in found.content[0].text
    assert reloads == [] and index._searcher is opened  # the searcher the idle work opened


def test_calls_in_a_row_wait_for_no_commit_between_them(app, monkeypatch):
    """A write's commit waits until no call has come for INDEX_IDLE_S: a client's calls in a row (parallel
    tool calls, a batch of notes) never wait for one (about 10 ms, its files synced) between them."""
    from contextflow.adapters.server import app as server_app

    commits: list[object] = []
    monkeypatch.setattr(server_app, "_index_now", commits.append)
    monkeypatch.setattr(server_app, "INDEX_IDLE_S", 60.0)  # (the calls below come well within it)
    server = server_app.ContextflowServer(app)
    note = {"text": "the websocket reconnects", "session_id": "s1", "agent": "claude"}
    try:
        for call, arguments in [
            ("append_shared_note", note),
            ("read_shared_context", {"session_id": "s1"}),
            ("append_shared_note", {**note, "text": "the websocket drops"}),
            ("unknown_tool", {}),
        ]:
            server.call(call, arguments)
            assert server.indexing.waiting(), call  # put off, still waiting
        assert commits == []
        thread = server.indexing.thread
        monkeypatch.setattr(server_app, "INDEX_IDLE_S", 0.0)
        server.call("read_shared_context", {"session_id": "s1"})  # (puts it off once more, then idle at once)
        assert server.indexing.settle(timeout=60)
        assert commits == [app]  # once idle: one commit for all of them
        assert server.indexing.thread is thread  # one thread for calls in a row, not one a write
    finally:
        server.indexing.put_off()
    reader = server_app.ContextflowServer(app)
    reader.call("read_shared_context", {"session_id": "s1"})
    assert reader.indexing.thread is None and not reader.indexing.waiting()  # (reads alone commit nothing)
