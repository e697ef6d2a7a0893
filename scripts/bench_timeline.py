#!/usr/bin/env python3
"""The session start's open threads on a large timeline, this checkout beside another code tree.

Writes one store of --threads threads and --thoughts thoughts (plus status changes, thought updates and
tangents), builds each tree's derived tables in full (time and size printed), then times `hook
session-start` per tree (and `python -c pass`), interleaved, --reps times: CPU seconds, wall seconds
and peak RSS (/usr/bin/time), medians. Prints figures; asserts nothing.

    scripts/bench_timeline.py --before /tmp/cf-main      (`git archive main | tar -x -C /tmp/cf-main`)
    scripts/bench_timeline.py --thoughts 50000 --threads 500 --reps 5

Everything lives in a temporary folder (HOME, store, state); the real home is never touched.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
if (VENV / "bin" / "python").exists() and Path(sys.prefix).resolve() != VENV.resolve():
    os.execv(str(VENV / "bin" / "python"), [str(VENV / "bin" / "python"), __file__, *sys.argv[1:]])
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

import argparse  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from benchlib.procs import timed  # noqa: E402

from contextflow.core.events import Event, encode  # noqa: E402
from contextflow.core.ids import new_id  # noqa: E402

OPEN_THREADS = b"Open threads"  # what each timed session start must show
BUILD = (
    "from contextflow.app import App\nfrom contextflow.core.tables import BUILD_WAIT_S\n"
    "app = App.open()\nassert app.tables().update(BUILD_WAIT_S, foreground=True) >= 0\n"
    "assert app.tables().current()\napp.close()\n"
)


def write_store(store: Path, threads: int, thoughts: int, seed: int = 7) -> int:
    """A timeline of `threads` threads and `thoughts` thoughts in one log; returns its event count."""
    rng = random.Random(seed)
    store.mkdir(parents=True)
    hlc = (int(time.time() * 1000) - 86_400_000) << 16
    ids: list[str] = []
    made: list[str] = []
    lines: list[bytes] = []

    def add(kind: str, data: dict[str, object]) -> str:
        nonlocal hlc
        hlc += 1 << 16
        event_id = new_id()
        lines.append(encode(Event(event_id, "bench-gen", len(lines) + 1, hlc, kind, data)))
        return event_id

    for n in range(thoughts + threads):
        if n % (thoughts // threads + 1) == 0 and len(ids) < threads:
            data: dict[str, object] = {"name": f"thread {len(ids)}", "status": "active", "agent": "bench"}
            if made and rng.random() < 0.1:
                data["parent_thought_id"] = rng.choice(made[-200:])
            ids.append(add("timeline.thread", data))
            continue
        thread = rng.choice(ids[-50:])  # work moves on: recent threads take most thoughts
        text = f"thought {n}: " + "step taken and what came of it " * rng.randint(1, 6)
        made.append(add("timeline.thought", {"thread_id": thread, "content": text, "thought_type": "progress"}))
        if rng.random() < 0.05:
            add("timeline.thought_update", {"thought_id": rng.choice(made[-100:]), "status": "resolved"})
        if rng.random() < 0.01:
            status = rng.choice(["completed", "paused", "abandoned", "active"])
            add("timeline.thread_update", {"thread_id": rng.choice(ids), "status": status})
    (store / "events.bench-gen.jsonl").write_bytes(b"".join(lines))
    return len(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, help="another code tree (a copy of main) to time beside this one")
    parser.add_argument("--threads", type=int, default=500)
    parser.add_argument("--thoughts", type=int, default=50_000)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    trees = {"this checkout": ROOT, **({"before": args.before.resolve()} if args.before else {})}
    with tempfile.TemporaryDirectory(prefix="cf-bench-timeline-") as folder:
        work = Path(folder)
        events = write_store(work / "store", args.threads, args.thoughts)
        print(f"store: {events:,} events ({args.thoughts:,} thoughts over {args.threads} threads)")
        envs: dict[str, dict[str, str]] = {}
        for name, code in trees.items():
            home = work / name / "home"
            home.mkdir(parents=True)
            envs[name] = {
                **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},  # as installed: .pyc files
                "HOME": str(home),
                "CONTEXTFLOW_STORE": str(work / "store"),
                "CONTEXTFLOW_STATE": str(work / name / "state"),
                "CONTEXTFLOW_WRITER": f"bench-{name.split()[-1]}",
                "PYTHONPATH": str(code),
            }
            began = time.perf_counter()
            subprocess.run([sys.executable, "-c", BUILD], env=envs[name], check=True, timeout=3600, cwd=work)
            size = sum(p.stat().st_size for p in (work / name / "state").rglob("views.sqlite3*"))
            print(f"{name}: derived tables built in {time.perf_counter() - began:.1f} s, {size / 1e6:.0f} MB")
        payload = json.dumps({"session_id": "bench", "cwd": str(work)}).encode()
        samples: dict[str, list[tuple[float, float, float]]] = {}
        for env in envs.values():  # once untimed: each tree's .pyc files written
            timed([sys.executable, "-m", "contextflow", "hook", "session-start"], env, payload, work, OPEN_THREADS)
        for _ in range(args.reps):
            samples.setdefault("python -c pass", []).append(
                timed([sys.executable, "-c", "pass"], envs["this checkout"], b"", work)
            )
            for name, env in envs.items():
                command = [sys.executable, "-m", "contextflow", "hook", "session-start"]
                samples.setdefault(f"{name}: hook session-start", []).append(
                    timed(command, env, payload, work, OPEN_THREADS)
                )
        floor = statistics.median(s[0] for s in samples["python -c pass"])
        for label, found in samples.items():
            cpu, wall, rss = (statistics.median(s[i] for s in found) for i in range(3))
            print(
                f"{label:36} CPU {cpu * 1000:6.0f} ms ({cpu / floor:5.1f}x)  wall {wall * 1000:6.0f} ms  {rss:5.0f} MB"
            )


if __name__ == "__main__":
    main()
