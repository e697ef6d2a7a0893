#!/usr/bin/env python3
"""Derived tables on disk (core/tables.py): build, a new process's first read, reads, and catching up.

For each store size (benchlib.storegen: notes and handoffs) it prints: building every derived table
from the logs (time, peak RSS, file size), a new process's first feed page and its peak RSS beside
`python -c pass` and a process that only opens the store, feed pages with and without filters (p50,
p95), facets, and a read right after another process appended 10 events. Prints figures only.

    scripts/bench_views.py                  100k events
    scripts/bench_views.py --sizes 1000000  choose the sizes

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
sys.path[:0] = [str(Path(__file__).resolve().parent), str(ROOT)]

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from benchlib.storegen import generate_store  # noqa: E402

CHILD = r"""
import json, sys, time
began = time.perf_counter()
from contextflow.app import App
app = App.open()
what = sys.argv[1]
if what == "build":
    from contextflow.core.tables import BUILD_WAIT_S
    read = app.tables().update(BUILD_WAIT_S, foreground=True)
    out = {"read": read}
elif what == "feed":
    from contextflow.feed.core import recent
    out = {"items": len(recent(app, limit=50))}
elif what == "append":
    for n in range(10):
        app.store.append("note", {"project": "bench", "agent": "b", "text": f"appended {n}"})
    out = {}
elif what == "pages":
    from contextflow.feed.core import facets, recent
    recent(app)
    times = {}
    cases = {"newest 50": {}, "project": {"project": sys.argv[2]}, "agent+kind": {"agent": "codex", "kind": "handoff"},
             "session": {"session_id": sys.argv[3]}, "page 3": None}
    for name, filters in cases.items():
        samples = []
        for _ in range(30):
            t = time.perf_counter()
            if filters is None:
                page = recent(app)
                page = recent(app, before=page[-1].id)
                recent(app, before=page[-1].id)
            else:
                recent(app, **filters)
            samples.append(time.perf_counter() - t)
        times[name] = sorted(samples)
    samples = []
    for _ in range(30):
        t = time.perf_counter()
        facets(app)
        samples.append(time.perf_counter() - t)
    times["facets"] = sorted(samples)
    out = {"times": times}
else:
    out = {}
app.close()
out["seconds"] = time.perf_counter() - began
status = open("/proc/self/status").read()  # (VmHWM: this process image's peak, not its parent's before exec)
out["rss_mb"] = int(status.split("VmHWM:")[1].split()[0]) / 1024
print(json.dumps(out))
"""


def child(env: dict[str, str], *args: str) -> dict[str, object]:
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, *args], env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode:
        raise SystemExit(done.stderr)
    found: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    found["wall"] = time.perf_counter() - began
    return found


def floor(env: dict[str, str]) -> float:
    samples = []
    for _ in range(5):
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
        samples.append(time.perf_counter() - began)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cf-bench-views-"))
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            root = work / str(size)
            env = {
                **os.environ,
                "HOME": str(root / "home"),
                "CONTEXTFLOW_STORE": str(root / "store"),
                "CONTEXTFLOW_STATE": str(root / "state"),
                "CONTEXTFLOW_WRITER": "bench-reader",
                "PYTHONPATH": str(ROOT),
            }
            (root / "home").mkdir(parents=True)
            store = generate_store(root / "store", size)
            project = next(iter(store.sessions))
            session = store.sessions[project][0]
            print(f"\n## {size:,} events ({store.bytes / 1e6:.0f} MB of logs)")
            base = floor(env)
            print(f"python -c pass: {base * 1000:.0f} ms")
            built = child(env, "build")
            db = sum(p.stat().st_size for p in (root / "state").rglob("views.sqlite3*"))
            size_mb = db / 1e6
            print(
                f"build every derived table: {built['wall']:.1f} s, peak RSS {built['rss_mb']:.0f} MB, {size_mb:.0f} MB"
            )
            opened = [child(env, "none") for _ in range(3)]
            first = [child(env, "feed") for _ in range(3)]
            wall = statistics.median(float(f["wall"]) for f in first)  # type: ignore[arg-type]
            rss = max(float(f["rss_mb"]) for f in first)  # type: ignore[arg-type]
            open_wall = statistics.median(float(f["wall"]) for f in opened)  # type: ignore[arg-type]
            print(
                f"new process, open the store only: {open_wall * 1000:.0f} ms ({open_wall / base:.1f}x python -c pass)"
            )
            times = f"{wall * 1000:.0f} ms ({wall / base:.1f}x python -c pass)"
            print(f"new process, first feed page: {times}, peak RSS {rss:.0f} MB")
            child({**env, "CONTEXTFLOW_WRITER": "bench-other"}, "append")
            after = child(env, "feed")
            print(f"new process, first feed page after another appended 10: {float(after['wall']) * 1000:.0f} ms")  # type: ignore[arg-type]
            pages = child(env, "pages", project, session)
            for name, samples in pages["times"].items():  # type: ignore[union-attr]
                p50, p95 = samples[len(samples) // 2], samples[int(len(samples) * 0.95)]
                print(f"  {name}: p50 {p50 * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
