"""A line stamped far in the future (in range, so not a bad line) cannot pin a record, a handoff or
the order of entries: the next local write bounds it (it orders just before that write, on every
machine alike), and a write readers would still not see is an error naming who blocks it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextflow.adapters import hooks
from contextflow.adapters.cli import main
from contextflow.admin.diagnose import problems, store_info
from contextflow.app import App
from contextflow.core import ahead
from contextflow.core.clock import COUNTER_BITS, stamp_from_ms
from contextflow.core.events import Event
from contextflow.core.scan import BOUND_KIND
from tests.conftest import connect, open_app, text_of
from tests.folding import all_views, fold
from tests.hostile.helpers import line, plant
from tests.sync.workload import differences, picture

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("shared_project")]  # `shared` data, read from the tmp folder

YEAR_9000 = stamp_from_ms(221_845_392_000_000)  # 9000-01-01


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def plant_future(store: Path, *, count: int = 1, key: str = "fact:x", session: str = "s1") -> None:
    lines = [
        line(writer="evil", seq=n, hlc=YEAR_9000 + n, kind="context.set", data={"key": key, "value": {"evil": n}})
        for n in range(1, count + 1)
    ]
    lines.append(
        line(
            writer="evil", seq=count + 1, hlc=YEAR_9000, kind="handoff", data={"summary": "EVIL", "session_id": session}
        )
    )
    lines.append(line(writer="evil", seq=count + 2, hlc=YEAR_9000, data={"text": "evil note", "session_id": session}))
    plant(store, "events.evil.jsonl", *lines)


def every_machine_agrees() -> None:
    """This machine, another one and a fresh fold see the same views."""
    here = App.open()
    here.store.refresh()
    here.close()
    fresh = picture(App.open(shares_state=False))
    for other in (App.open(), open_app("writer-b"), open_app("writer-c", CONTEXTFLOW_STATE=os.environ["HOME"])):
        assert differences(fresh, picture(other)) == []


def test_a_later_set_and_delete_win_over_a_year_9000_record(store_dir, capsys):
    plant_future(store_dir)
    code, out, _ = run(capsys, "context", "set", "fact:x", '{"mine": 1}')
    assert code == 0 and "Saved" in out
    code, out, _ = run(capsys, "context", "get", "fact:x", "--format", "json")
    assert json.loads(out)["value"] == {"mine": 1}
    code, out, _ = run(capsys, "context", "delete", "fact:x")
    assert code == 0 and "Deleted" in out
    assert run(capsys, "context", "get", "fact:x")[0] == 3
    every_machine_agrees()


async def test_over_mcp_a_set_after_a_year_9000_record_is_what_get_returns(app, store_dir):
    plant_future(store_dir)
    async with connect(app) as client:
        saved = await client.call_tool("context_set", {"key": "fact:x", "value": {"mine": 2}})
        assert not saved.is_error, text_of(saved)
        got = await client.call_tool("context_get", {"key": "fact:x", "format": "json"})
    assert got.structured_content["value"] == {"mine": 2}


def test_a_year_9000_handoff_is_no_longer_the_latest_once_one_is_written_here(store_dir, capsys):
    plant_future(store_dir)
    assert run(capsys, "use", "s1")[0] == 0
    assert run(capsys, "handoff", "mine", "--session", "s1")[0] == 0
    code, out, _ = run(capsys, "latest", "--session", "s1")
    assert code == 0 and "mine" in out and "EVIL" not in out
    code, out, _ = run(capsys, "resume", "s1", "--format", "json")
    assert json.loads(out)["latest_handoff"]["summary"] == "mine"
    context = json.loads(hooks.run("session-start", b"{}"))["hookSpecificOutput"]["additionalContext"]
    assert "mine" in context and "EVIL" not in context
    every_machine_agrees()


def test_a_year_9000_note_orders_before_the_notes_written_after_it(store_dir, capsys):
    plant_future(store_dir)
    assert run(capsys, "note", "first of mine", "--session", "s1")[0] == 0
    assert run(capsys, "note", "second of mine", "--session", "s1")[0] == 0
    _, out, _ = run(capsys, "read", "--session", "s1", "--format", "json")
    texts = [entry.get("text") or entry.get("summary") for entry in json.loads(out)["entries"]]
    assert texts[-2:] == ["first of mine", "second of mine"]
    entries = json.loads(out)["entries"]
    assert all(entry["ts"] < "2100" for entry in entries), "a bounded event shows the time it orders at"


def test_a_write_readers_would_not_see_is_an_error_naming_the_writer(store_dir, capsys, monkeypatch):
    monkeypatch.setattr(ahead, "MAX_BOUND_IDS", 1)  # a bound names one event: eight outlast three tries
    plant_future(store_dir, count=8)
    code, out, err = run(capsys, "context", "set", "fact:x", '{"mine": 1}')
    assert code == 4 and "Saved" not in out
    assert "evil" in err and "contextflow doctor" in err and "Traceback" not in err
    info = store_info(App.open())
    assert [w["writer"] for w in info["future_stamped"]] == ["evil"]


def test_doctor_reports_future_stamped_events_per_writer_before_and_after_they_are_bounded(store_dir, capsys):
    plant_future(store_dir, count=2)
    plant(store_dir, "events.fine.jsonl", line(writer="fine"))
    before = store_info(App.open())
    assert before["future_stamped"] == [{"writer": "evil", "bounded": 0, "waiting": 4}]
    assert any("evil" in problem and "wait" in problem for problem in problems(before))
    assert run(capsys, "note", "bounds them")[0] == 0
    after = store_info(App.open())
    assert after["future_stamped"] == [{"writer": "evil", "bounded": 4, "waiting": 0}]
    assert any("evil" in problem and "bounded" in problem for problem in problems(after))


def test_a_forged_bound_cannot_pin_a_record_either(app, store_dir, capsys):
    first = app.store.append("context.set", {"key": "fact:y", "project": "shared", "value": {"v": 1}})
    plant(
        store_dir,
        "events.evil.jsonl",
        line(writer="evil", hlc=1 << COUNTER_BITS, kind=BOUND_KIND, data={"ids": [first.id]}),
    )
    assert run(capsys, "context", "set", "fact:y", '{"v": 2}')[0] == 0
    _, out, _ = run(capsys, "context", "get", "fact:y", "--format", "json")
    assert json.loads(out)["value"] == {"v": 2}
    every_machine_agrees()


# -- bounds fold the same in any order ---------------------------------------------------------


def fold_exactly(events: list[Event]) -> dict[str, Any]:
    """What the store's scan does: fold; when a bound came after an event it lowers, fold again knowing it."""
    return fold(all_views(), events)


row = st.tuples(
    st.sampled_from(("alpha", "beta", "evil")),
    st.sampled_from(("note", "handoff", "context.set", BOUND_KIND)),
    st.integers(min_value=0, max_value=6),  # key / session
    st.one_of(st.integers(min_value=1_600_000_000_000, max_value=1_600_000_100_000), st.just(221_845_392_000_000)),
    st.lists(st.integers(min_value=0, max_value=20), max_size=4),  # which events a bound names
)


def to_events(rows: list[tuple[str, str, int, int, list[int]]]) -> list[Event]:
    events = []
    for n, (writer, kind, slot, ms, named) in enumerate(rows):
        data: dict[str, Any] = {"project": "shared", "session_id": f"s{slot}", "text": f"t{n}", "summary": f"h{n}"}
        if kind == "context.set":
            data = {"key": f"fact:k{slot}", "value": {"n": n}}
        elif kind == BOUND_KIND:
            data = {"ids": [f"id{i}" for i in named]}
        events.append(Event(f"id{n}", writer, n + 1, stamp_from_ms(ms) + n, kind, data))
    return events


@settings(max_examples=60, deadline=None)
@given(st.lists(row, max_size=20), st.randoms(use_true_random=False))
def test_bounds_fold_to_the_same_views_in_any_order(rows, rng):
    events = to_events(rows)
    shuffled = list(events)
    rng.shuffle(shuffled)
    bounds_first = sorted(events, key=lambda event: event.kind != BOUND_KIND)
    assert fold_exactly(shuffled) == fold_exactly(events) == fold_exactly(bounds_first)


def test_compaction_keeps_the_bounds_every_fold_needs(store_dir, capsys):
    plant_future(store_dir)
    assert run(capsys, "context", "set", "fact:x", '{"mine": 1}')[0] == 0
    assert run(capsys, "context", "set", "fact:x", '{"mine": 2}')[0] == 0
    assert run(capsys, "compact")[0] == 0
    assert BOUND_KIND.encode() in (store_dir / "events.writer-a.jsonl").read_bytes()
    _, out, _ = run(capsys, "context", "get", "fact:x", "--format", "json")
    assert json.loads(out)["value"] == {"mine": 2}
    every_machine_agrees()


def test_bounds_that_name_bounds_settle_in_one_more_fold():
    """A bound acts by its stamp as written, even when another bound moves it: no chain to follow."""
    rows = [
        ("alpha", "note", 0, 221_845_392_000_000, []),
        ("alpha", BOUND_KIND, 0, 221_845_392_000_000, [0]),
        ("alpha", BOUND_KIND, 0, 1_600_000_000_001, [1]),
        ("beta", BOUND_KIND, 0, 1_600_000_000_000, [2]),
        ("beta", "note", 0, 1_600_000_000_002, []),
    ]
    events = to_events(rows)
    assert fold_exactly(events) == fold_exactly(events[::-1]) == fold_exactly(events[1:] + events[:1])
