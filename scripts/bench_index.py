#!/usr/bin/env python3
"""The scale issue's rows: search over the shared on-disk index, against the SDK's no-op floor.

    .venv/bin/python scripts/bench_index.py [--sizes 100000,1000000] [--reps 40] [--servers 4] [--workdir DIR]

Per store size (storegen's synthetic stores): the derived index build (time, peak RSS of the
building process), warm `get_context` p50 over stdio beside the floor's no-op call (interleaved),
the server's peak RSS after its searches, N servers started together with the index present
(time until all answered a first search, summed peak RSS) and on a fresh machine (no derived
state: first read and first search), and `note --stdin` items a second.
Everything lives in the work folder; ratios are taken in one run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from benchlib.index_rows import Row, batch_row, size_rows  # noqa: E402
from benchlib.phases import store_env  # noqa: E402
from benchlib.storegen import generate_store  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--servers", type=int, default=4, help="0 skips the many-servers rows")
    parser.add_argument("--no-batch", action="store_true")
    parser.add_argument("--no-fresh", action="store_true", help="skip the fresh-machine row")
    parser.add_argument("--workdir")
    options = parser.parse_args()
    work = Path(options.workdir or tempfile.mkdtemp(prefix="cf-bench-index-"))
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CONTEXTFLOW_", "MCP_SHARED_CONTEXT_"))}
    rows: list[Row] = []
    for size in (int(s) for s in options.sizes.split(",")):
        root = work / f"store-{size}"
        if not (root / "store").exists():
            generate_store(root / "store", size)
        print(f"== {size:,} events", file=sys.stderr)
        env = {**base, "HOME": str(work), **store_env(root)}
        rows += size_rows(size, env, root / "servers-stderr.log", options.reps, options.servers, not options.no_fresh)
    if not options.no_batch:
        rows.append(batch_row({**base, "HOME": str(work), **store_env(work / "batch")}))
    width = max(len(row.label) for row in rows)
    print(f"load average: {os.getloadavg()[0]:.1f} (2 cores shared)")
    for row in rows:
        met = "" if row.met is None else f"   target {row.target}: {'met' if row.met else 'MISSED'}"
        print(f"{row.label.ljust(width)}  {row.value}{met}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
