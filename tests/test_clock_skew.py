"""Clock skew: a write made after reading another machine's write orders after it, even when
this machine's clock is minutes behind (the hybrid logical clock in contextflow/core/clock.py).

Checked twice: with injected clocks in one process, and with a real process whose clock is
ten minutes behind under `faketime` (Debian package `faketime`; skipped when it is missing).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from contextflow.app import App
from contextflow.core.clock import HybridClock, stamp_ms
from contextflow.core.project import settings_for
from contextflow.core.store import Store
from tests.folding import view_of

MINUTE_MS = 60_000
NOW_MS = 1_800_000_000_000


def fixed(ms: int) -> Callable[[], int]:
    return lambda: ms


def machine(writer: str, now_ms: Callable[[], int]) -> App:
    """A writer on the shared store whose wall clock reads `now_ms()`."""
    env = {**os.environ, "CONTEXTFLOW_WRITER": writer}
    store = Store.open(env, clock=HybridClock(now_ms), shares_state=False)
    return App(store, settings_for(store.state_dir, env))


def test_a_write_after_reading_orders_after_it_when_the_clock_is_minutes_behind():
    ahead = machine("ahead", fixed(NOW_MS))
    behind = machine("behind", fixed(NOW_MS - 10 * MINUTE_MS))
    first = ahead.store.append("note", {"text": "from the machine with the right time", "session_id": "s"})
    second = behind.store.append("note", {"text": "written after reading it", "session_id": "s"})
    assert second.key > first.key
    assert stamp_ms(second.hlc) == NOW_MS  # carried forward to the observed time, not back to its own clock


def test_each_write_orders_after_the_other_machines_newest_one_as_they_take_turns():
    """The other logs' newest stamps are looked at again whenever a log changed, also by a process that wrote
    before (it keeps what it read of the unchanged ones)."""
    start = int(time.time() * 1000) - 30 * MINUTE_MS  # (within the drift bound: no write reads the other log)
    ahead = machine("ahead", lambda: start + len(written) * MINUTE_MS)  # its clock moves a minute a write
    behind = machine("behind", fixed(start - 10 * MINUTE_MS))
    written: list[Any] = []
    for turn in range(6):
        writer = ahead if turn % 2 == 0 else behind
        written.append(writer.store.append("note", {"text": f"turn {turn}", "session_id": "s"}))
        for log in Path(os.environ["CONTEXTFLOW_STORE"]).glob("*.jsonl"):  # (changed long ago, by its time)
            os.utime(log, ns=(log.stat().st_atime_ns, log.stat().st_mtime_ns - 60 * 10**9))
    assert [event.key for event in written] == sorted(event.key for event in written)
    assert stamp_ms(written[-1].hlc) >= start + 4 * MINUTE_MS  # the behind machine followed each new minute


def test_a_later_context_set_from_a_slow_clock_wins_on_every_machine():
    ahead = machine("ahead", fixed(NOW_MS))
    behind = machine("behind", fixed(NOW_MS - 10 * MINUTE_MS))
    ahead.store.append("context.set", {"key": "status:build", "value": "red"})
    behind.store.append("context.set", {"key": "status:build", "value": "green"})
    for app in (ahead, behind):
        assert view_of(app.store, "records").records[("shared", "status:build")].data["value"] == "green"


def test_stamps_never_repeat_or_go_back_when_the_wall_clock_steps_backwards():
    readings = iter([NOW_MS, NOW_MS - 5 * MINUTE_MS, NOW_MS - 5 * MINUTE_MS, NOW_MS + 1])
    clock = HybridClock(lambda: next(readings))
    stamps = [clock.tick() for _ in range(4)]
    assert stamps == sorted(set(stamps))


def test_without_having_read_the_other_write_the_order_follows_the_clocks():
    # documented limit: causality needs the read; unrelated concurrent writes order by wall clock
    behind = machine("behind", fixed(NOW_MS - 10 * MINUTE_MS))
    early = behind.store.append("note", {"text": "written before any sync", "session_id": "s"})
    ahead = machine("ahead", fixed(NOW_MS))
    later = ahead.store.append("note", {"text": "reads the first, then writes", "session_id": "s"})
    assert later.key > early.key


FAKETIME = shutil.which("faketime")
needs_faketime = pytest.mark.skipif(
    FAKETIME is None, reason="faketime is not installed (Debian: apt-get install faketime); scripts/test installs it"
)


def run_cli(args: list[str], writer: str, skew: str | None = None) -> Any:
    command = [sys.executable, "-m", "contextflow", *args, "--format", "json"]
    if skew is not None:
        assert FAKETIME is not None
        command = [FAKETIME, "-f", skew, *command]
    env = {**os.environ, "CONTEXTFLOW_WRITER": writer}
    done = subprocess.run(command, env=env, capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return orjson.loads(done.stdout)


def _clock_of(skew: str) -> int:
    assert FAKETIME is not None
    code = "import time; print(time.time_ns() // 1_000_000)"
    command = [FAKETIME, "-f", skew, sys.executable, "-c", code]
    done = subprocess.run(command, capture_output=True, timeout=30, check=True)
    return int(done.stdout)


def _log_lines(store_dir: Path, writer: str) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in (store_dir / f"events.{writer}.jsonl").read_bytes().splitlines()]


@needs_faketime
def test_a_real_process_ten_minutes_behind_orders_its_reply_after_what_it_read(store_dir: Path):
    behind_ms = _clock_of("-10m")
    assert abs(behind_ms - (stamp_ms(HybridClock().tick()) - 10 * MINUTE_MS)) < MINUTE_MS  # faketime took effect

    run_cli(["note", "the build is red", "--session", "s"], writer="ahead")
    run_cli(["note", "fixed it after reading that", "--session", "s"], writer="behind", skew="-10m")
    first = _log_lines(store_dir, "ahead")[0]
    reply = _log_lines(store_dir, "behind")[0]
    assert (reply["hlc"], reply["w"]) > (first["hlc"], first["w"])
    assert isinstance(reply["hlc"], int) and isinstance(first["hlc"], int)
    assert stamp_ms(reply["hlc"]) >= stamp_ms(first["hlc"])  # not ten minutes in the past

    # oldest first on the other machine too
    read = run_cli(["read", "--session", "s"], writer="ahead")
    assert [entry["writer"] for entry in read["entries"]] == ["ahead", "behind"]


@needs_faketime
def test_a_real_skewed_process_overwrites_a_context_record_and_wins_everywhere(store_dir: Path):
    run_cli(["context", "set", "status:deploy", '{"state": "blocked"}'], writer="ahead")
    run_cli(["context", "set", "status:deploy", '{"state": "shipped"}'], writer="behind", skew="-10m")
    for writer, skew in (("ahead", None), ("behind", "-10m")):
        shown = run_cli(["context", "get", "status:deploy"], writer=writer, skew=skew)
        assert "shipped" in orjson.dumps(shown).decode()


def test_the_newest_stamp_of_a_log_is_read_from_its_tail(tmp_path: Path):
    from contextflow.core.events import Event, encode
    from contextflow.core.log import last_stamp

    log = tmp_path / "events.w.jsonl"
    assert last_stamp(log) is None
    log.write_bytes(b"")
    assert last_stamp(log) is None
    big = Event("a" * 16, "w", 1, 5 << 16, "note", {"text": "x" * 200_000})
    log.write_bytes(encode(Event("b" * 16, "w", 1, 3 << 16, "note", {})) + encode(big))
    assert last_stamp(log) == 5 << 16
    log.write_bytes(log.read_bytes() + b'{"v": 1, "id": "torn", "hlc": 999999999999999')  # no newline yet
    assert last_stamp(log) == 5 << 16
    log.write_bytes(b'{"id": "x", "ts": "2024-01-01T00:00:00Z", "kind": "note"}\n')  # legacy: no stamp
    assert last_stamp(log) is None
