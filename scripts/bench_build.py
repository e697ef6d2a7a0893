#!/usr/bin/env python3
"""Building all derived state from the logs, and its size on disk (the 1M-events issue's two rows).

For a storegen store (notes and handoffs, three writers) and each code tree given, in a fresh state folder:
the tables built alone (`Tables.update(foreground=True)`, as `doctor` does), then the search index built on
top of them (`DerivedSearch.update()`: only the index is left to read), each in its own child process (wall
seconds, CPU seconds, peak RSS); then `views.sqlite3` and the index folder against the logs' bytes, and
the largest tables and indexes in `views.sqlite3` (SQLite's `dbstat`). With --together, also the fresh
machine's background build (the tables and the index from one read of each chunk, one process).
Trees alternate per repetition, so a shared machine's load falls on each alike. Prints figures only.

    scripts/bench_build.py --events 200000                          this checkout
    scripts/bench_build.py --events 200000 --tree /work/wt/base     beside another checkout (its .venv)

The store is made once under --workdir (kept, reused by the next run); HOME and the state folders
live there too: the real home is never touched.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(Path(__file__).resolve().parent), str(ROOT)]

CHILD = r"""
import json, resource, sys, time
began = time.perf_counter()
import contextflow
from contextflow.app import App
app = App.open()
what = sys.argv[1]
if what == "tables":
    from contextflow.core.tables import BUILD_WAIT_S
    events = app.tables().update(BUILD_WAIT_S, foreground=True)
elif what == "index":
    from contextflow.search import derived
    events = derived.search_for(app.store).update()
else:  # the fresh machine's background builder: every projection from one read of each chunk
    from contextflow.core.tables import BUILD_WAIT_S
    tables = app.tables()
    events = tables.update(BUILD_WAIT_S, foreground=True, also=[n for n, s in tables.sets.items() if s.lazy])
app.close()
own = resource.getrusage(resource.RUSAGE_SELF)
status = open("/proc/self/status").read()
print(json.dumps({"code": contextflow.__path__[0], "events": events, "wall": time.perf_counter() - began,
                  "cpu": own.ru_utime + own.ru_stime, "peak_mb": int(status.split("VmHWM:")[1].split()[0]) / 1024}))
"""


def child(tree: Path, env: dict[str, str], what: str) -> dict[str, Any]:
    python = tree / ".venv" / "bin" / "python"
    done = subprocess.run(
        [str(python if python.exists() else sys.executable), "-c", CHILD, what],
        env={**env, "PYTHONPATH": str(tree)},
        cwd=tree,  # (`python -c` imports from its working folder first: that tree's code)
        capture_output=True,
        text=True,
        timeout=7200,
    )
    if done.returncode:
        raise SystemExit(f"{tree}: {what} failed:\n{done.stderr[-3000:]}")
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def commit_of(tree: Path) -> str:
    done = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or "?"


def folder_bytes(folder: Path) -> int:
    return sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def largest(db_path: Path, count: int = 12) -> list[tuple[str, int]]:
    """The largest tables and indexes of the database (bytes of their pages), largest first."""
    with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True) as db:
        try:
            found = db.execute(
                "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC LIMIT ?", (count,)
            ).fetchall()
        except sqlite3.OperationalError:  # (an SQLite built without dbstat)
            return []
    return [(str(name), int(size)) for name, size in found]


def run_tree(
    tree: Path, env: dict[str, str], state: Path, logs: int, together: bool, breakdown: bool, tables_only: bool
) -> None:
    shutil.rmtree(state, ignore_errors=True)
    env = {**env, "CONTEXTFLOW_STATE": str(state)}
    tables = child(tree, env, "tables")
    index = {"events": 0, "wall": 0.0, "cpu": 0.0, "peak_mb": 0.0} if tables_only else child(tree, env, "index")
    where = next(state.rglob("views.sqlite3")).parent  # (the store's own folder under the state folder)
    db = sum(p.stat().st_size for p in where.glob("views.sqlite3*"))
    search = folder_bytes(where / "derived") if (where / "derived").exists() else 0
    print(f"\n{tables['code']} at {commit_of(tree)}  (load {os.getloadavg()[0]:.1f})")
    for name, found in (("tables", tables), ("index", index)):
        print(
            f"  {name:7} {found['events']:>9,} events  wall {found['wall']:6.1f} s  cpu {found['cpu']:6.1f} s  "
            f"peak {found['peak_mb']:5.0f} MB"
        )
    print(
        f"  disk    views.sqlite3 {db / 1e6:7.1f} MB = {db / logs:.2f}x   index {search / 1e6:7.1f} MB = "
        f"{search / logs:.2f}x   together {(db + search) / logs:.2f}x the logs ({logs / 1e6:.1f} MB)"
    )
    if breakdown:
        print("  " + ", ".join(f"{name} {size / 1e6:.1f}" for name, size in largest(where / "views.sqlite3")))
    if together:
        shutil.rmtree(state, ignore_errors=True)
        both = child(tree, env, "all")
        print(
            f"  all at once (the background builder): wall {both['wall']:.1f} s  cpu {both['cpu']:.1f} s  "
            f"peak {both['peak_mb']:.0f} MB"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--tree", action="append", default=[], help="another checkout to measure beside this one")
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--together", action="store_true", help="also the one-process build of everything")
    parser.add_argument("--no-breakdown", action="store_true")
    parser.add_argument("--tables-only", action="store_true", help="the tables alone (no index, no sizes to read)")
    parser.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / "cf-bench-build"))
    options = parser.parse_args()
    from benchlib.storegen import generate_store

    work = Path(options.workdir)
    store = work / f"store-{options.events}"
    if not store.exists():
        began = time.perf_counter()
        generate_store(store, options.events)
        print(f"made a store of {options.events:,} events in {time.perf_counter() - began:.0f} s")
    logs = folder_bytes(store)
    (work / "home").mkdir(parents=True, exist_ok=True)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CONTEXTFLOW_", "MCP_SHARED_CONTEXT_"))}
    env = {**base, "HOME": str(work / "home"), "CONTEXTFLOW_STORE": str(store), "CONTEXTFLOW_WRITER": "bench"}
    trees = [ROOT, *(Path(t).resolve() for t in options.tree)]
    for rep in range(options.reps):
        for number, tree in enumerate(trees):
            state = work / f"state-{number}"
            breakdown = not options.no_breakdown and rep == 0
            run_tree(tree, env, state, logs, options.together, breakdown, options.tables_only)
            shutil.rmtree(state, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
