"""scripts/bench --quick runs end to end inside a temp folder and prints every section.

Benchmarks are slow by nature (about 30 s together): they run with `scripts/test --all` (CI), not in the
fast suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

BENCH = Path(__file__).resolve().parent.parent / "scripts" / "bench"
SECTIONS = (
    "== setup",
    "== stores",
    "== warm calls, in-memory",
    "== warm calls, stdio",
    "== append cost vs store size",
    "== read after an external append (stdio)",
    "== cold start to the first answered call at",
    "== peak RSS",
    "== tools/list size",
    "== secret scan",
    "== records and timeline tools",
    "== search on the shared on-disk index at",
    "== peers",
    "== targets",
)


def test_quick_benchmark_prints_every_section_and_exits_zero(tmp_path: Path) -> None:
    workdir = tmp_path / "bench"
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--reps", "5", "--workdir", str(workdir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for section in SECTIONS:
        assert section in done.stdout, f"missing {section!r} in:\n{done.stdout}"
    assert "floor (no-op)" in done.stdout
    assert "ContextFlowMCP" in done.stdout
    assert (workdir / "store-1000" / "store").is_dir(), "the store lives in the work folder it was given"
    assert not (tmp_path / "home" / ".local").exists(), "the benchmark never writes into the caller's HOME"


def test_the_import_benchmark_prints_a_line_per_format(tmp_path: Path) -> None:
    script = BENCH.with_name("bench_import.py")
    env = {**os.environ, "HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, str(script), "--items", "200"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    formats = ("contextflow", "server-memory", "beads", "basic-memory", "claude-mem", "claude-code", "codex")
    assert [line.split()[0] for line in done.stdout.splitlines()[2:]] == list(formats)
    assert list((tmp_path / "home").iterdir()) == [], "the benchmark never writes into the caller's HOME"


def test_the_first_write_benchmark_prints_the_writes_around_an_import(tmp_path: Path) -> None:
    script = BENCH.with_name("bench_import.py")
    env = {**os.environ, "HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, str(script), "--first-write", "--entities", "300"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = done.stdout.splitlines()[2:]
    assert [row.split("  ")[0] for row in rows] == [
        "note (before the import)",
        "import",
        "note (the first write after it)",
        "note (the next)",
    ]
    assert "Stored 300 nodes, 300 edges" in rows[1]


def test_the_graph_on_disk_benchmark_prints_each_commands_first_call(tmp_path: Path) -> None:
    script = BENCH.with_name("bench_graph_disk.py")
    env = {**os.environ, "HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, str(script), "--nodes", "200", "--reps", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "graph tables folded in" in done.stdout
    lines = [line for line in done.stdout.splitlines() if line.startswith("this checkout: ")]
    calls = [line.split(":")[1].split("CPU")[0].strip() for line in lines if " CPU " in line and "built" not in line]
    assert calls == ["status", "query", "compose", "show", "edges", "related", "tags", "add", "hook session-start"]
    served = [line.split(":")[1].split()[0] for line in lines if "the no-op server" in line]
    assert served == ["graph_recall", "graph_status", "graph_compose", "graph_remember", "graph_update"]


def test_the_capture_store_generator_writes_a_year_of_readable_captured_sessions(tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCH.parent))
    try:
        from benchlib.capturegen import generate_capture_store
    finally:
        sys.path.remove(str(BENCH.parent))
    from contextflow.core.events import decode
    from contextflow.core.log import read_whole

    made = generate_capture_store(tmp_path / "store", 800)
    kinds: dict[str, int] = {}
    for log in (tmp_path / "store").glob("events.*.jsonl"):
        for number, line in read_whole(log)[1]:
            event = decode(line, number)
            kinds[event.kind] = kinds.get(event.kind, 0) + 1
    assert sum(kinds.values()) == made.events == 800
    assert kinds["capture.turn"] > 0.8 * made.events and kinds["handoff"] and kinds["conversation.save"]
    assert "shared" in made.sessions and made.bytes > 800 * 700  # records of about a kilobyte each
