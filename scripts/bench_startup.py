#!/usr/bin/env python3
"""Start-up cost, as every hook call and every agent start pays it.

Prints medians of interleaved runs (so a loaded machine slows every contender alike) and
the ratios the targets are stated in:
- `contextflow --version` and each Claude Code hook, against a bare `python -c pass`
  (target: within 5x); the everyday commands `sessions`, `whereami`, `search` and `doctor` too;
- the time until `contextflow serve` answers `initialize`, against a no-op server on the
  same SDK (target: no slower, ratio about 1.0).

- the Stop hook with capture, in CPU time against `python -c pass`, on transcripts of 1, 5
  and 20 MB: the first call (reads the whole transcript) and the next turn (new bytes only).

    python scripts/bench_startup.py [--runs 15] [--events 2000] [--no-capture]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib.procs import cold_start
from benchlib.report import heading, table

PYTHON = sys.executable
_SCRIPT = Path(PYTHON).with_name("contextflow")  # the console script clients run, as `install` writes it
CONTEXTFLOW = [str(_SCRIPT)] if _SCRIPT.exists() else [PYTHON, "-m", "contextflow"]
FLOOR = [PYTHON, str(Path(__file__).resolve().parent / "benchlib" / "floor_server.py")]


def timed(command: list[str], env: dict[str, str], stdin: bytes = b"", ok: tuple[int, ...] = (0,)) -> float:
    began = time.perf_counter()
    done = subprocess.run(command, input=stdin, env=env, capture_output=True, timeout=120, check=False)
    elapsed = time.perf_counter() - began
    if done.returncode not in ok:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return elapsed


def initialize_time(command: list[str], env: dict[str, str], errlog: Path) -> float:
    tool = "noop" if command == FLOOR else "list_sessions"
    return cold_start(command, env, tool, {}, errlog, timeout=120).to_initialized


def seed_store(env: dict[str, str], events: int) -> None:
    """A store with `events` notes in a few sessions, written through the CLI's own core."""
    code = (
        "from contextflow.app import App\n"
        "app = App.open()\n"
        f"for n in range({events}):\n"
        "    app.store.append('note', {'project': 'shared', 'agent': 'bench', 'text': f'note {n} about the parser',"
        " 'session_id': f's{n % 7}'})\n"
        "app.close()\n"
    )
    subprocess.run([PYTHON, "-c", code], env=env, check=True, timeout=600)


FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "capture" / "claude-transcript.jsonl"
SAMPLE_CWD = "/work/research/capture/runs/claude-full/work"


def cpu_time(command: list[str], env: dict[str, str], stdin: bytes = b"") -> float:
    """User + system CPU seconds of one child process."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    timed(command, env, stdin)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def one_turn(n: int, cwd: str) -> bytes:
    """The real Claude Code sample turn, its prompt made unique (so no two turns are identical)."""
    text = FIXTURE.read_text().replace(SAMPLE_CWD, cwd)
    return text.replace("Create calc.py with an add function", f"Create calc{n}.py with an add function").encode()


def transcript_of(path: Path, megabytes: float, cwd: str) -> int:
    turns, size = 0, 0
    with open(path, "wb") as handle:
        while size < megabytes * (1 << 20):
            size += handle.write(one_turn(turns, cwd))
            turns += 1
    return turns


def capture_costs(env: dict[str, str], root: Path, runs: int) -> None:
    """The Stop hook with capture: first call on a transcript of each size, then one new turn."""
    work = root / "work"
    (work / ".git").mkdir(parents=True, exist_ok=True)
    bare = statistics.median(cpu_time([PYTHON, "-c", "pass"], env) for _ in range(runs))
    rows = []
    for megabytes in (1, 5, 20):
        first, again = [], []
        for run in range(max(1, runs // 3)):
            transcript = root / f"t-{megabytes}-{run}.jsonl"
            turns = transcript_of(transcript, megabytes, str(work))
            payload = json.dumps(
                {
                    "session_id": f"bench-{megabytes}-{run}",
                    "cwd": str(work),
                    "transcript_path": str(transcript),
                    "hook_event_name": "Stop",
                    "last_assistant_message": "done",
                }
            ).encode()
            first.append(cpu_time([*CONTEXTFLOW, "hook", "stop"], env, payload))
            with open(transcript, "ab") as handle:
                handle.write(one_turn(turns + 1, str(work)))
            again.append(cpu_time([*CONTEXTFLOW, "hook", "stop"], env, payload))
        for label, values in (("first call", first), ("next turn", again)):
            value = statistics.median(values)
            rows.append((f"{megabytes} MB transcript, {label}", f"{value * 1000:.0f} ms", f"{value / bare:.1f}x"))
    heading(f"Stop hook with capture (CPU time; python -c pass = {bare * 1000:.0f} ms)")
    table(("case", "CPU", "ratio to python -c pass (target: next turn <= 3x)"), rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="runs of each command (default 15)")
    parser.add_argument("--events", type=int, default=2000, help="notes in the store (default 2000)")
    parser.add_argument("--no-capture", dest="capture", action="store_false", help="skip the capture section")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="cf-startup-") as tmp:
        root = Path(tmp)
        env = {
            **os.environ,
            "HOME": str(root / "home"),
            "CONTEXTFLOW_STORE": str(root / "store"),
            "CONTEXTFLOW_STATE": str(root / "state"),
            "CONTEXTFLOW_WRITER": "bench",
        }
        seed_store(env, args.events)
        transcript = root / "transcript.jsonl"
        transcript.write_text("")
        payload = json.dumps(
            {
                "session_id": "s1",
                "cwd": str(root),
                "transcript_path": str(transcript),
                "prompt": "fix the parser",
                "last_assistant_message": "done",
            }
        ).encode()
        errlog = root / "server.err"
        contenders: dict[str, Callable[[], float]] = {
            "python -c pass": lambda: timed([PYTHON, "-c", "pass"], env),
            "contextflow --version": lambda: timed([*CONTEXTFLOW, "--version"], env),
            "hook session-start": lambda: timed([*CONTEXTFLOW, "hook", "session-start"], env, payload),
            "hook prompt-submit": lambda: timed([*CONTEXTFLOW, "hook", "prompt-submit"], env, payload),
            "hook stop": lambda: timed([*CONTEXTFLOW, "hook", "stop"], env, payload),
            "sessions": lambda: timed([*CONTEXTFLOW, "sessions"], env),
            "whereami": lambda: timed([*CONTEXTFLOW, "whereami"], env),
            "search parser": lambda: timed([*CONTEXTFLOW, "search", "parser"], env),
            "doctor": lambda: timed([*CONTEXTFLOW, "doctor"], env, ok=(0, 1)),  # 1: problems found, still a run
            "no-op SDK server: initialize": lambda: initialize_time(FLOOR, env, errlog),
            "contextflow serve: initialize": lambda: initialize_time([*CONTEXTFLOW, "serve"], env, errlog),
        }
        samples: dict[str, list[float]] = {name: [] for name in contenders}
        for warm_up in contenders.values():  # once each first: the page cache, .pyc files
            warm_up()
        for _ in range(args.runs):
            for name, run in contenders.items():
                samples[name].append(run())

    median = {name: statistics.median(values) for name, values in samples.items()}
    bare = median["python -c pass"]
    floor = median["no-op SDK server: initialize"]
    heading(f"Start-up, median of {args.runs} interleaved runs, store of {args.events} events")
    rows = []
    for name, value in median.items():
        if name.endswith("initialize"):
            rows.append((name, f"{value * 1000:.0f} ms", f"{value / floor:.2f}x the no-op server", "ratio <= 1.0"))
        else:
            rows.append(
                (
                    name,
                    f"{value * 1000:.0f} ms",
                    f"{value / bare:.1f}x python -c pass",
                    "" if name.startswith("python") else "<= 5x",
                )
            )
    table(("command", "median", "ratio", "target"), rows)
    if args.capture:
        with tempfile.TemporaryDirectory(prefix="cf-capture-") as tmp:
            root = Path(tmp)
            env = {
                **os.environ,
                "HOME": str(root / "home"),
                "CONTEXTFLOW_STORE": str(root / "store"),
                "CONTEXTFLOW_STATE": str(root / "state"),
                "CONTEXTFLOW_WRITER": "bench",
            }
            seed_store(env, args.events)
            capture_costs(env, root, args.runs)


if __name__ == "__main__":
    main()
