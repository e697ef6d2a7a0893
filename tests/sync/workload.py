"""A mixed workload of every record kind, and a comparable picture of every view.

`write_round(app, i)` writes one round through the core functions (notes, handoffs, context
records set/overwritten/deleted, timeline threads and thoughts, graph nodes, tags and edges,
conversation saves), reading between writes like an agent would. Two writers running it
concurrently overwrite the same shared context keys, so last-writer-wins is exercised.

`picture(app)` is every view's state plus search results for a few queries; two machines
with the same events must produce equal pictures.

Run as a script (`python -m tests.sync.workload ROUNDS [PAUSE_S]`) it writes ROUNDS rounds
as the writer CONTEXTFLOW_WRITER into CONTEXTFLOW_STORE.
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Any

from contextflow.app import App
from contextflow.conversations import core as conversations
from contextflow.core.errors import NotFoundError
from contextflow.graph import writes as graph_ops
from contextflow.records import core as records
from contextflow.search.tokens import query_terms
from contextflow.sessions import core as sessions
from contextflow.timeline import core as timeline
from tests.folding import view_of
from tests.search_oracle import search_index

VIEW_NAMES = ("sessions", "records", "timeline", "graph", "conversations")
QUERIES = ("build", "deploy cache", "decision", "thought", "node", "shared", "release")
SHARED_KEYS = ("shared:build", "shared:deploy", "shared:cache", "shared:release")


def write_round(app: App, i: int) -> None:
    w = app.store.writer
    project = "sync-proj"
    sessions.append_note(app, agent=w, text=f"{w} note {i} about the build", project=project, session_id="shared")
    if i % 3 == 0:
        sessions.write_handoff(
            app,
            agent=w,
            summary=f"{w} handoff {i}: deploy cache warmed",
            next_steps=[f"step {i}"],
            open_questions=None,
            files=None,
            project=project,
            session_id=f"{w}-session",
            task="sync test",
        )
    records.set_record(app, key=SHARED_KEYS[i % 4], value={"by": w, "round": i, "text": f"release {i}"})
    records.set_record(app, key=f"machine:{w}", value={"round": i}, pinned=True)
    if i % 4 == 2:
        records.set_record(app, key=f"clip:{w}:{i}", value={"tmp": i}, expires_at="1h", category="clipboard")
    if i % 5 == 4:
        with contextlib.suppress(NotFoundError):  # the other machine deleted it first
            records.delete_record(app, key=SHARED_KEYS[(i + 1) % 4], agent=w)
    thread = _own_thread(app)
    thought = timeline.add_thought(app, thread_id=thread, content=f"{w} thought {i} on the release", agent=w)
    if i % 3 == 1:
        timeline.update_thought(app, thought_id=thought.id, status="resolved")
    if i % 4 == 3:
        timeline.update_thread(app, thread_id=thread, description=f"{w} at round {i}")
    node = graph_ops.add_node(app, type="fact", content=f"{w} node {i}: the deploy cache is shared", agent=w)
    if i % 2 == 1:
        graph_ops.update_node(app, node.id, content=f"{w} node {i} updated: decision made")
        graph_ops.tag(app, node.id, ["tier:pinned"])
    previous = _previous_node(app, node.id)
    if previous is not None:
        graph_ops.link(app, node.id, previous, "RELATES_TO")
        if i % 4 == 0:
            graph_ops.untag(app, previous, ["tier:pinned"])
    if i % 2 == 0:
        conversations.save_conversation(
            app,
            {
                "conversation_id": f"conv-{w}",
                "topic": "release planning",
                "summary": f"{w} decided at round {i} to ship the release with the shared cache",
                "decisions": [{"decision": f"ship at round {i}", "reasoning": "tests pass", "status": "chosen"}],
                "source": w,
                "project": project,
            },
        )


def _own_thread(app: App) -> str:
    w = app.store.writer
    state = view_of(app.store, "timeline")  # (the whole fold: a test's oracle)
    for thread in state.threads.values():
        if thread.created is not None and thread.writer == w:
            return thread.id
    return timeline.create_thread(app, name=f"{w} main line", description="sync test", agent=w).id


def _previous_node(app: App, exclude: str) -> str | None:
    state = graph_ops.graph(app)
    own = [n for n in state.nodes.values() if n.id != exclude and n.id in state.live and n.writer == app.store.writer]
    return max(own, key=lambda n: n.created_key).id if own else None


def picture(app: App) -> dict[str, Any]:
    """Every view's state and the search results for QUERIES: equal on machines with equal events."""
    found: dict[str, Any] = {name: view_of(app.store, name) for name in VIEW_NAMES}
    index = search_index(app)
    # ties rank by arrival order, which differs between machines: compare (score, id) sorted
    found["search"] = {
        query: sorted((round(hit.score, 9), hit.doc.doc_id) for hit in index.search(query_terms(query), 10_000, _one))
        for query in QUERIES
    }
    found["search.visible"] = sorted(
        (doc.doc_id, sorted(doc.field_texts()), doc.project) for doc in index.docs.values() if doc.visible
    )
    return found


def _one(doc: Any) -> float:
    return 1.0


def differences(left: dict[str, Any], right: dict[str, Any]) -> list[str]:
    return [name for name in left if left[name] != right.get(name)]


def main(argv: list[str]) -> int:
    rounds = int(argv[0])
    pause = float(argv[1]) if len(argv) > 1 else 0.0
    app = App.open()
    try:
        for i in range(rounds):
            write_round(app, i)
            if pause:
                time.sleep(pause)
    finally:
        app.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
