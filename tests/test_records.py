"""Keyed context records: validation, last-writer-wins across writers, tombstones, expiry, listing."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextflow.app import App
from contextflow.core.clock import HybridClock
from contextflow.core.errors import InputError, NotFoundError
from contextflow.core.events import Event
from contextflow.records import core as records
from contextflow.records.view import RecordsView
from contextflow.timeline import core as timeline
from tests.conftest import open_app
from tests.folding import fold, view_of
from tests.table import run

T0 = datetime(2026, 2, 8, 12, 0, tzinfo=UTC)


def at(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def clocked_app(writer: str, moment: datetime, folder: Path | None = None, **env: str) -> App:
    """A writer whose wall clock is fixed at `moment` (and the store in `folder` when given)."""
    extra = {"CONTEXTFLOW_WRITER": writer, **env}
    if folder is not None:
        extra.update(CONTEXTFLOW_STORE=str(folder), CONTEXTFLOW_STATE=str(folder.parent / f"state-{writer}"))
    return App.open({**os.environ, **extra}, clock=HybridClock(lambda: at(moment)))


# -- set and get ---------------------------------------------------------------------------


def test_a_set_record_reads_back_with_its_source_machine_and_agent(app):
    records.set_record(
        app,
        key="pr:Yeraze/meshmonitor:1777",
        value={"status": "waiting"},
        category="pr",
        label="MeshCore PR #1777",
        pinned=True,
        agent="claude",
    )
    found = records.record_dict(records.get_record(app, key="pr:Yeraze/meshmonitor:1777"))
    assert found["value"] == {"status": "waiting"}
    assert (found["category"], found["label"], found["pinned"]) == ("pr", "MeshCore PR #1777", True)
    assert (found["source"], found["agent"]) == ("writer-a", "claude")
    assert found["created_at"] == found["updated_at"]


def test_category_defaults_to_the_key_prefix(app):
    records.set_record(app, key="machine:chisel", value={"ip": "10.0.0.2"})
    assert records.get_record(app, key="machine:chisel").category == "machine"


def test_an_update_keeps_fields_it_does_not_mention_and_keeps_the_created_time(app):
    first = records.set_record(app, key="fact:nas", value={"v": 1}, label="NAS", pinned=True, category="fact")
    records.set_record(app, key="fact:nas", value={"v": 2})
    record = records.get_record(app, key="fact:nas")
    assert record.data["value"] == {"v": 2}
    assert (record.data["label"], record.pinned, record.category) == ("NAS", True, "fact")
    assert record.created_key == first.key
    assert record.event_key > first.key


def test_explicit_false_and_empty_values_clear_fields(app):
    thread = timeline.create_thread(app, name="work").id
    records.set_record(app, key="fact:nas", value={}, label="NAS", pinned=True, expires_at="7d", thread_id=thread)
    records.set_record(app, key="fact:nas", value={}, label="", pinned=False, expires_at="never", thread_id="")
    record = records.get_record(app, key="fact:nas")
    assert "label" not in record.data and not record.pinned and "expires_at" not in record.data
    assert record.thread_id is None and records.linked_records(app, thread) == []


@pytest.mark.parametrize("bad", ["nocolon", "Pr:upper-prefix", "pr:", ":rest", "pr:has space", "1pr:digit", ""])
def test_a_key_that_is_not_namespaced_is_refused_with_an_example(app, bad):
    with pytest.raises(InputError, match=r"prefix:name, e\.g\. pr:owner/repo:1777"):
        records.set_record(app, key=bad, value={})
    assert app.store.event_count == 0


def test_a_value_that_is_not_an_object_is_refused(app):
    with pytest.raises(InputError, match=r"value must be a JSON object.*wrap plain text as \{\"text\""):
        run(app, "context_set", key="fact:x", value="plain text")
    assert app.store.event_count == 0


def test_a_value_over_64_kb_is_refused_and_nothing_is_stored(app):
    records.set_record(app, key="fact:big", value={"v": "small"})
    with pytest.raises(InputError, match=r"the limit is 65536 \(64 KB\)"):
        records.set_record(app, key="fact:big", value={"blob": "x" * 70_000})
    assert records.get_record(app, key="fact:big").data["value"] == {"v": "small"}


def test_a_value_just_under_the_cap_is_kept(app):
    records.set_record(app, key="fact:big", value={"blob": "x" * (64 * 1024 - 20)})
    assert len(records.get_record(app, key="fact:big").data["value"]["blob"]) == 64 * 1024 - 20


def test_an_expiry_that_is_not_text_says_what_to_pass(app):
    with pytest.raises(InputError, match=r"expires_at must be a string, got 5; pass a duration such as 24h"):
        run(app, "context_set", key="fact:x", value={}, expires_at=5)
    assert app.store.event_count == 0


def test_a_bad_category_or_pinned_flag_is_refused(app):
    with pytest.raises(
        InputError,
        match=r"category must be one of project, pr, machine, waiting, fact, clipboard.*"
        r"leave it out to use the key's prefix",
    ):
        run(app, "context_set", key="fact:x", value={}, category="Two Words")
    with pytest.raises(InputError, match="pinned must be true or false"):
        run(app, "context_set", key="fact:x", value={}, pinned="yes")
    assert app.store.event_count == 0


def test_getting_an_unknown_key_says_how_to_find_keys(app):
    with pytest.raises(NotFoundError, match="context_list with prefix='pr:'"):
        records.get_record(app, key="pr:none:1")


def test_a_thread_link_accepts_a_prefix_and_stores_the_full_id(app):
    thread = timeline.create_thread(app, name="work")
    records.set_record(app, key="fact:x", value={}, thread_id=thread.id[:6])
    assert records.get_record(app, key="fact:x").thread_id == thread.id
    with pytest.raises(NotFoundError, match="timeline_list_threads"):
        records.set_record(app, key="fact:y", value={}, thread_id="zzzzzz")


# -- expiry --------------------------------------------------------------------------------


def test_an_expired_record_disappears_from_get_and_list_at_read_time(app):
    now = datetime.now(UTC)
    records.set_record(app, key="clipboard:key", value={"k": "ssh-ed25519 AAAA"}, expires_at="1h", now=now)
    assert records.get_record(app, key="clipboard:key", now=now + timedelta(minutes=59))
    later = now + timedelta(hours=2)
    with pytest.raises(NotFoundError, match="expired at"):
        records.get_record(app, key="clipboard:key", now=later)
    assert records.list_records(app, now=later) == []
    assert records.list_records(app, now=now)[0].key == "clipboard:key"


def test_clipboard_records_expire_after_24_hours_by_default(app):
    now = datetime.now(UTC)
    records.set_record(app, key="clipboard:ssh", value={"k": "x"}, now=now)
    record = records.get_record(app, key="clipboard:ssh", now=now)
    assert record.data["expires_at"] == (now + timedelta(hours=24)).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z"
    )


def test_an_iso_expiry_is_stored_in_utc(app):
    now = datetime.now(UTC)
    future = (now + timedelta(days=2)).replace(microsecond=0)
    records.set_record(app, key="fact:x", value={}, expires_at=future.isoformat(), now=now)
    assert records.get_record(app, key="fact:x", now=now).data["expires_at"] == future.strftime(
        "%Y-%m-%dT%H:%M:%S.000Z"
    )


@pytest.mark.parametrize("bad", ["soon", "24x", "0h", "2020-01-01T00:00:00Z", "PT"])
def test_a_bad_or_past_expiry_is_refused_and_nothing_is_stored(app, bad):
    with pytest.raises(InputError, match="expires_at"):
        records.set_record(app, key="fact:x", value={}, expires_at=bad)
    assert app.store.event_count == 0


# -- delete --------------------------------------------------------------------------------


def test_a_deleted_record_is_gone_and_a_later_set_revives_it_with_a_new_created_time(app):
    records.set_record(app, key="fact:x", value={"v": 1})
    records.delete_record(app, key="fact:x")
    with pytest.raises(NotFoundError, match=r"was deleted at .* set it again"):
        records.get_record(app, key="fact:x")
    assert records.list_records(app) == []
    revived = records.set_record(app, key="fact:x", value={"v": 2})
    record = records.get_record(app, key="fact:x")
    assert record.data["value"] == {"v": 2} and record.created_key == revived.key


def test_deleting_an_unknown_or_deleted_key_is_an_error(app):
    with pytest.raises(NotFoundError, match="no context record"):
        records.delete_record(app, key="fact:nothing")
    records.set_record(app, key="fact:x", value={})
    records.delete_record(app, key="fact:x")
    with pytest.raises(NotFoundError, match="was deleted"):
        records.delete_record(app, key="fact:x")


# -- listing -------------------------------------------------------------------------------


def test_list_filters_by_category_thread_pinned_and_prefix(app):
    thread = timeline.create_thread(app, name="work")
    records.set_record(app, key="pr:a/b:1", value={}, pinned=True)
    records.set_record(app, key="pr:a/c:2", value={}, thread_id=thread.id)
    records.set_record(app, key="machine:chisel", value={}, pinned=True)

    def keys(**filters: object) -> list[str]:
        return [r.key for r in records.list_records(app, **filters)]  # type: ignore[arg-type]

    assert keys() == ["machine:chisel", "pr:a/c:2", "pr:a/b:1"]
    assert keys(category="pr") == ["pr:a/c:2", "pr:a/b:1"]
    assert keys(pinned_only=True) == ["machine:chisel", "pr:a/b:1"]
    assert keys(thread_id=thread.id[:5]) == ["pr:a/c:2"]
    assert keys(prefix="pr:a/b") == ["pr:a/b:1"]
    assert keys(prefix="pr:", pinned_only=True) == ["pr:a/b:1"]
    assert keys(limit=1) == ["machine:chisel"]


def test_list_shows_only_records_updated_within_since_days(tmp_path):
    old = clocked_app("writer-a", T0 - timedelta(days=10))
    records.set_record(old, key="fact:old", value={}, now=T0 - timedelta(days=10))
    old.close()
    fresh = clocked_app("writer-a", T0)
    records.set_record(fresh, key="fact:new", value={}, now=T0)
    assert [r.key for r in records.list_records(fresh, now=T0)] == ["fact:new"]
    assert [r.key for r in records.list_records(fresh, since_days=30, now=T0)] == ["fact:new", "fact:old"]
    assert [r.key for r in records.list_records(fresh, since_days=0, now=T0)] == ["fact:new", "fact:old"]
    fresh.close()


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ({"since_days": -1}, "since_days"),
        ({"limit": 0}, "limit"),
        ({"category": "A B"}, "category"),
        ({"pinned_only": "yes"}, "pinned_only"),
        ({"thread_id": "nope"}, "no thread id"),
    ],
)
def test_list_refuses_bad_filters(app, filters, message):
    with pytest.raises(InputError, match=message):
        run(app, "context_list", **filters)


# -- across writers ------------------------------------------------------------------------


def test_a_record_set_on_one_writer_is_read_by_another_on_the_same_folder(app):
    records.set_record(app, key="machine:chisel", value={"fp": "SHA256:abc"})
    other = open_app("writer-b")
    try:
        assert records.get_record(other, key="machine:chisel").writer == "writer-a"
        records.set_record(other, key="machine:chisel", value={"fp": "SHA256:def"})
    finally:
        other.close()
    record = records.get_record(app, key="machine:chisel")
    assert (record.data["value"], record.writer) == ({"fp": "SHA256:def"}, "writer-b")


def test_a_write_after_reading_wins_even_when_that_machines_clock_is_behind(tmp_path):
    folder = tmp_path / "shared"
    ahead = clocked_app("ahead", T0 + timedelta(minutes=10), folder)
    behind = clocked_app("behind", T0, folder)
    records.set_record(ahead, key="fact:x", value={"v": "ahead"}, now=T0)
    records.set_record(behind, key="fact:x", value={"v": "behind, later"}, now=T0)
    for reader in (ahead, behind):
        assert records.get_record(reader, key="fact:x", now=T0).data["value"] == {"v": "behind, later"}
        reader.close()


def test_disconnected_writes_resolve_the_same_on_both_machines_after_the_logs_meet(tmp_path):
    a = clocked_app("alpha", T0 + timedelta(seconds=5), tmp_path / "a")
    b = clocked_app("beta", T0, tmp_path / "b")
    records.set_record(a, key="fact:x", value={"from": "alpha"}, now=T0)
    records.set_record(b, key="fact:x", value={"from": "beta"}, now=T0)
    records.set_record(b, key="fact:only-b", value={}, now=T0)
    records.delete_record(a, key="fact:x")  # a's tombstone is the latest write of all
    shutil.copy(tmp_path / "a" / "events.alpha.jsonl", tmp_path / "b")
    shutil.copy(tmp_path / "b" / "events.beta.jsonl", tmp_path / "a")
    for app in (a, b):
        with pytest.raises(NotFoundError, match="deleted"):
            records.get_record(app, key="fact:x", now=T0)
        assert [r.key for r in records.list_records(app, now=T0)] == ["fact:only-b"]
    assert view_of(a.store, "records") == view_of(b.store, "records")
    a.close()
    b.close()


# -- order independence --------------------------------------------------------------------

WRITERS = ("alpha", "beta", "gamma")
operation = st.tuples(
    st.sampled_from(WRITERS),
    st.sampled_from(("set", "set", "delete")),
    st.sampled_from(("fact:a", "fact:b", "waiting:c")),
    st.sampled_from((None, "fact", "waiting")),
    st.booleans(),
    st.sampled_from((None, "t1", "t2")),
    st.integers(min_value=0, max_value=6),  # few distinct clock values: ties across writers happen
    st.sampled_from((None, "2026-02-08T12:00:00Z", "2026-03-01T00:00:00.000Z")),
)


def record_events(rows: list[tuple]) -> list[Event]:
    seqs: dict[str, int] = {}
    out = []
    for n, (writer, op, key, category, pinned, thread, tick, expires) in enumerate(rows):
        seqs[writer] = seqs.get(writer, 0) + 1
        if op == "delete":
            data: dict = {"key": key, "agent": writer}
            kind = "context.delete"
        else:
            data = {"key": key, "value": {"n": n}, "pinned": pinned, "agent": writer}
            optional = (("category", category), ("thread_id", thread), ("expires_at", expires))
            data.update({name: value for name, value in optional if value})
            kind = "context.set"
        out.append(Event(f"e{n}", writer, seqs[writer], (1_770_000_000_000 + tick) << 16, kind, data))
    return out


def fold_records(events: list[Event]) -> object:
    return fold([RecordsView()], events)["records"]


@settings(max_examples=150, deadline=None)
@given(st.lists(operation, max_size=25), st.randoms(use_true_random=False))
def test_the_records_view_does_not_depend_on_event_order_across_writers(rows, rng):
    events = record_events(rows)
    shuffled = list(events)
    rng.shuffle(shuffled)
    assert fold_records(shuffled) == fold_records(events)


@settings(max_examples=100, deadline=None)
@given(st.lists(operation, min_size=1, max_size=25))
def test_the_latest_write_by_clock_order_wins_for_every_key(rows):
    events = record_events(rows)
    state = fold_records(events)
    for key in {e.data["key"] for e in events}:
        latest = max((e for e in events if e.data["key"] == key), key=lambda e: e.key)
        record = state.records[("shared", key)]  # type: ignore[attr-defined]
        assert (record.event_id, record.deleted) == (latest.id, latest.kind == "context.delete")
        live = [k for (_, k), r in state.records.items() if not r.deleted]  # type: ignore[attr-defined]
        assert (key in live) == (latest.kind == "context.set")
