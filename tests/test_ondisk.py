"""Views read from their projections on disk (contextflow/ondisk.py; the records' and conversations' queries)
equal the store's in-memory fold."""

from __future__ import annotations

import contextlib
import os
import random

import pytest

from contextflow.app import App
from contextflow.conversations import core as conversations
from contextflow.conversations.view import ConversationsView
from contextflow.core.errors import NotFoundError
from contextflow.graph import writes
from contextflow.records import core as records
from contextflow.records.view import RecordsView
from contextflow.timeline import core as timeline
from tests.conftest import open_app
from tests.folding import view_of
from tests.graph_fold import read_rows, scratch


def in_memory() -> App:
    return App.open({**os.environ}, shares_state=False)


def stored(app: App) -> tuple[dict[object, object], dict[object, object]]:
    """Every record and conversation as their tables (and the logs' rest) hold them."""
    return dict(records.records_state(app).records), dict(conversations.conversations_state(app).records)


def folded(app: App) -> tuple[dict[object, object], dict[object, object]]:
    """Every record and conversation as the in-memory folds hold them."""
    return view_of(app.store, RecordsView).records, view_of(app.store, ConversationsView).records


def churn(app: App, other: App, rng: random.Random, rounds: int) -> None:
    for n in range(rounds):
        writer = rng.choice([app, other])
        choice = rng.random()
        if choice < 0.3:
            records.set_record(writer, key=f"fact:k{rng.randrange(5)}", value={"text": f"v{n}"})
        elif choice < 0.4:
            with contextlib.suppress(NotFoundError):  # (a key never set, or deleted already)
                records.delete_record(writer, key=f"fact:k{rng.randrange(5)}")
        elif choice < 0.7:
            writes.add_node(writer, content=f"fact {n}", type=rng.choice(["decision", "fact"]), agent="a")
        else:
            timeline.create_thread(writer, name=f"thread {n}")
        if rng.random() < 0.3:
            records.list_records(app)  # read in between: incremental


@pytest.mark.parametrize("seed", [1, 2])
def test_views_from_disk_equal_the_in_memory_fold(app: App, seed: int) -> None:
    other = open_app("writer-b")
    try:
        churn(app, other, random.Random(seed), 30)
        memory = in_memory()
        assert read_rows(app) == scratch(memory).rows()
        assert stored(app) == folded(memory)
        assert not app.store.scanned  # read from disk, not from the logs
    finally:
        other.close()


def test_a_rebuilt_table_refolds_the_view(app: App) -> None:
    records.set_record(app, key="fact:a", value={"text": "one"})
    assert ("shared", "fact:a") in stored(app)[0]
    app.tables().close()
    app.tables().path.unlink()
    records.set_record(open_app("writer-b"), key="fact:b", value={"text": "two"})
    assert stored(app) == folded(in_memory())


def test_while_another_process_builds_the_table_a_write_is_seen_by_the_read_after_it(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextflow.core import catchup
    from contextflow.core import tables as tables_module

    other = open_app("writer-b")
    try:
        churn(app, other, random.Random(3), 20)  # history in both logs (two machines), none in the tables yet
        records.set_record(other, key="fact:theirs", value={"text": "from the other machine"})
        app.tables().close()
        app.tables().path.unlink()
        monkeypatch.setattr(catchup, "BACKGROUND_BYTES", 10)  # as if the logs were big...
        monkeypatch.setattr(
            tables_module.Tables, "_build_in_background", lambda self, unread: None
        )  # ...and built elsewhere
        made = timeline.create_thread(app, name="just made")
        timeline.add_thought(app, thread_id=made.id, content="found at once")  # (NotFoundError on the built part alone)
        records.set_record(app, key="fact:new", value={"text": "set while building"})
        assert records.get_record(app, key="fact:new").data["value"] == {"text": "set while building"}
        node = writes.add_node(app, content="remembered while building", type="fact", agent="a")
        assert not app.tables().current()  # nothing was built here: this machine's log's tail answered
        assert node.id in writes.graph(app).live
        assert timeline.resolve_thread(app, made.id).name == "just made"
        # another machine's too: the logs' rest answers
        assert records.get_record(app, key="fact:theirs").data["value"] == {"text": "from the other machine"}
        assert stored(app) == folded(in_memory())
        monkeypatch.setattr(catchup, "BACKGROUND_BYTES", 1 << 40)  # the build is done: the table serves them
        assert node.id in writes.graph(app).live
        assert records.get_record(app, key="fact:theirs").data["value"] == {"text": "from the other machine"}
        assert app.tables().current()
        memory = in_memory()
        assert read_rows(app) == scratch(memory).rows()
        assert stored(app) == folded(memory)
    finally:
        other.close()
