"""Synced logs are input from other machines: a hostile or broken line is skipped, counted and
reported, never fatal, never deleted; it never blocks this writer and never splits the views
of a running process from a fresh rebuild."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextflow.adapters.cli import main
from contextflow.admin.diagnose import problems, store_info
from contextflow.app import App
from contextflow.core.clock import COUNTER_BITS, MAX_DRIFT_MS, stamp_ms, system_ms
from tests.folding import view_of
from tests.hostile.helpers import line, now_stamp, plant, replace_file
from tests.sync.workload import differences, picture

pytestmark = pytest.mark.usefixtures("shared_project")  # stored in `shared`, read from the plain tmp folder

YEAR_10000_MS = 253402300800000
TEN_YEARS_MS = 10 * 365 * 24 * 3600 * 1000


def fresh_picture() -> dict:
    return picture(App.open(shares_state=False))


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- 1. out-of-range stamps, sequence numbers and ids ------------------------------------------

BAD_LINES = {
    "hlc past 64 bits": line(hlc=18446744073709551615),
    "hlc past year 9999": line(hlc=YEAR_10000_MS << COUNTER_BITS),
    "negative hlc": line(hlc=-5),
    "seq past 64 bits": line(seq=18446744073709551615),
    "negative seq": line(seq=-1),
    "huge id": line(id="x" * 5000),
    "id with a newline": line(id="abc\ndef"),
    "writer with a slash": line(writer="../etc"),
}


def test_out_of_range_stamps_seqs_and_ids_are_bad_lines_and_appends_still_work(app, store_dir, capsys):
    path = plant(store_dir, "events.evil.jsonl", line(seq=1), *BAD_LINES.values())
    before = path.read_bytes()
    event = app.store.append("note", {"project": "shared", "text": "mine"})
    assert stamp_ms(event.hlc) <= system_ms() + MAX_DRIFT_MS
    assert app.store.health().bad_line_count == len(BAD_LINES)
    code, out, err = run(capsys, "read", "--format", "json")
    assert code == 0 and "Traceback" not in err
    assert {entry["text"] for entry in json.loads(out)["entries"]} == {"from evil #1", "mine"}
    assert run(capsys, "note", "later")[0] == 0
    assert path.read_bytes() == before  # never deleted from disk


def test_doctor_and_the_info_resource_report_out_of_range_stamps(app, store_dir):
    plant(store_dir, "events.evil.jsonl", BAD_LINES["hlc past 64 bits"], BAD_LINES["hlc past year 9999"])
    info = store_info(app)
    assert info["bad_lines"] == 2
    assert all("clock stamp" in sample["reason"] for sample in info["bad_line_samples"])
    assert any("clock stamp" in problem for problem in problems(info))


# -- 2. one fast clock does not drag every machine -------------------------------------------


@pytest.mark.parametrize("read_first", [True, False], ids=["after a read", "first thing"])
def test_a_clock_ten_years_ahead_moves_the_local_clock_at_most_the_drift_bound(store_dir, read_first):
    plant(store_dir, "events.fast.jsonl", line(writer="fast", hlc=now_stamp(TEN_YEARS_MS)))
    app = App.open()
    if read_first:
        app.store.refresh()
    mine = app.store.append("note", {"project": "shared", "text": "mine"})
    assert stamp_ms(mine.hlc) <= system_ms() + MAX_DRIFT_MS
    again = App.open().store.append("note", {"project": "shared", "text": "mine again"})
    assert stamp_ms(again.hlc) <= system_ms() + MAX_DRIFT_MS
    texts = [e.data["text"] for e in view_of(App.open(shares_state=False).store, "sessions").project_entries("shared")]
    # nothing dropped; the first local write bounded the fast writer's note, which orders just before it
    assert texts == ["from fast #1", "mine", "mine again"]


def test_doctor_names_the_writer_whose_clock_runs_ahead(app, store_dir):
    plant(store_dir, "events.fast.jsonl", line(writer="fast", hlc=now_stamp(TEN_YEARS_MS)))
    plant(store_dir, "events.fine.jsonl", line(writer="fine"))
    info = store_info(app)
    assert [w["writer"] for w in info["writers_ahead"]] == ["fast"]
    assert any("fast" in problem and "ahead" in problem for problem in problems(info))


# -- 3. a line claiming this writer's id -------------------------------------------------------


@pytest.mark.parametrize("read_first", [True, False], ids=["after a read", "first thing"])
def test_a_foreign_line_claiming_this_writers_id_with_a_huge_seq_does_not_block_appends(store_dir, capsys, read_first):
    plant(store_dir, "events.evil.jsonl", line(writer="writer-a", seq=2**53 - 1))
    app = App.open()
    if read_first:
        app.store.refresh()
    first = app.store.append("note", {"project": "shared", "text": "mine"})
    second = app.store.append("note", {"project": "shared", "text": "mine too"})
    assert (first.seq, second.seq) == (1, 2)
    assert run(capsys, "note", "from the cli")[0] == 0
    fresh = App.open(shares_state=False).store
    assert fresh.health().bad_line_count == 0
    texts = {e.data["text"] for e in view_of(fresh, "sessions").project_entries("shared")}
    assert {"mine", "mine too", "from the cli"} <= texts


# -- 4. an oversized line in another writer's log ----------------------------------------------


def test_an_oversized_foreign_line_never_breaks_sessions_the_tables_or_the_exit_code(store_dir, capsys):
    plant(
        store_dir,
        "events.big.jsonl",
        line(writer="big", seq=1),
        line(writer="big", seq=2, data={"text": "x" * (5 * 1024 * 1024)}),
    )
    code, _, err = run(capsys, "note", "stored", "--session", "s1")
    assert code == 0 and "Traceback" not in err
    code, out, err = run(capsys, "sessions", "--format", "json")
    assert code == 0 and "s1" in out
    app = App.open()
    assert app.store.health().bad_line_count == 1
    assert any("oversized" in problem or "over the size limit" in problem for problem in problems(store_info(app)))
    assert app.tables().bad_lines() == 1 and app.tables().current()
    app.close()
    assert differences(fresh_picture(), picture(App.open())) == []


# -- 5. a log replaced by a repaired (or damaged) copy -----------------------------------------


def _log_lines(count: int, writer: str = "remote") -> list[bytes]:
    return [
        line(writer=writer, seq=n, hlc=now_stamp() + n, data={"text": f"entry {n} " + "y" * 300})
        for n in range(1, count + 1)
    ]


def _torn(raw: bytes) -> bytes:
    """The line's second half zeroed, its length kept (as a sync tool's unfilled blocks leave it)."""
    half = len(raw) // 2
    return raw[:half] + b"\0" * (len(raw) - half - 1) + b"\n"


SCENARIOS = {
    "repaired longer copy": (lambda ls: [ls[0], _torn(ls[1]), *ls[2:30]], lambda ls: ls[:31]),
    "repaired copy, same mtime": (lambda ls: [ls[0], _torn(ls[1]), *ls[2:30]], lambda ls: ls[:30]),
    "damaged copy replaces a good one": (lambda ls: ls[:30], lambda ls: [ls[0], _torn(ls[1]), *ls[2:30]]),
    "damaged longer copy replaces a good one": (lambda ls: ls[:30], lambda ls: [ls[0], _torn(ls[1]), *ls[2:31]]),
    "middle line rewritten": (lambda ls: ls[:30], lambda ls: [ls[0], ls[2], ls[1], *ls[3:31]]),
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_after_a_log_is_replaced_running_and_new_processes_views_equal_a_fresh_rebuild(store_dir, scenario):
    before, after = SCENARIOS[scenario]
    lines = _log_lines(31)
    path = plant(store_dir, "events.remote.jsonl", *before(lines))
    running = App.open()
    running.store.append("note", {"project": "shared", "text": "mine"})
    running.store.refresh()
    replace_file(path, b"".join(after(lines)), keep_mtime="mtime" in scenario)
    expected = fresh_picture()
    assert differences(expected, picture(running)) == []
    assert differences(expected, picture(App.open())) == []  # a new process


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    count=st.integers(min_value=14, max_value=40),
    torn=st.integers(min_value=0, max_value=12),
    grow=st.integers(min_value=0, max_value=3),
    damage_first=st.booleans(),
)
def test_any_replacement_of_a_log_converges_to_a_fresh_rebuild(tmp_path_factory, count, torn, grow, damage_first):
    store = Path(tmp_path_factory.mktemp("store"))
    env_store = {"CONTEXTFLOW_STORE": str(store), "CONTEXTFLOW_STATE": str(tmp_path_factory.mktemp("state"))}
    lines = _log_lines(count + grow)
    damaged = [*lines[:torn], _torn(lines[torn]), *lines[torn + 1 : count]]
    good = lines[: count + grow]
    first, second = (damaged, good) if damage_first else (good, damaged)
    path = plant(store, "events.remote.jsonl", *first)
    import os

    env = {**os.environ, **env_store}
    running = App.open(env)
    running.store.refresh()
    replace_file(path, b"".join(second))
    expected = picture(App.open(env, shares_state=False))
    assert differences(expected, picture(running)) == []
    assert differences(expected, picture(App.open(env))) == []
