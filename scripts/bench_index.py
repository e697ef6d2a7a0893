#!/usr/bin/env python3
"""The scale issue's rows: search over the shared on-disk index, against the SDK's no-op floor.

    .venv/bin/python scripts/bench_index.py [--sizes 100000,1000000] [--reps 40] [--servers 4] [--workdir DIR]

Per store size (storegen's synthetic stores): the derived index build (time, peak RSS of the
building process), warm `get_context` p50 over stdio beside the floor's no-op call (interleaved),
the server's peak RSS after its searches, N servers started together with the index present
(time until all answered a first search, summed peak RSS) and on a fresh machine (no derived
state, no snapshot: first read and first search), and `note --stdin` items a second.
Everything lives in the work folder; ratios are taken in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from benchlib.mcp_timing import Call, server_command, stdio_client, time_calls  # noqa: E402
from benchlib.phases import store_env  # noqa: E402
from benchlib.procs import child_pids, cold_start, vm_hwm_kb  # noqa: E402
from benchlib.storegen import generate_store  # noqa: E402

QUERIES = ("token refresh websocket", "flaky test fixture ordering", "terraform module review",
           "gradient checkpointing GPU", "search endpoint latency index")
BUILD = ("import resource, sys, time\nfrom contextflow.app import App\nfrom contextflow import derived\n"
         "app = App.open(); t = time.perf_counter(); n = derived.search_for(app.store).update(rebuild=True)\n"
         "print(n, time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)")


def p50(values: list[float]) -> float:
    return statistics.median(values) * 1000


def build(env: dict[str, str]) -> tuple[int, float, int] | None:
    """The derived index built from scratch in a child process; None when this checkout has none."""
    done = subprocess.run([sys.executable, "-c", BUILD], env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        return None
    events, seconds, peak_mb = done.stdout.split()
    return int(events), float(seconds), int(peak_mb)


def p95(values: list[float]) -> float:
    return sorted(values)[int(0.95 * (len(values) - 1))] * 1000


async def warm_calls(env: dict[str, str], reps: int) -> dict[str, float]:
    """Search p50, then append p50/p95 and a search right after an append, each beside the floor."""
    async with stdio_client(server_command(False), env) as cf, stdio_client(server_command(True), env) as floor:
        noop = Call("floor", floor, "noop", {})
        calls = [Call(f"q{n}", cf, "get_context", {"query": q, "project": "shared"}) for n, q in enumerate(QUERIES)]
        samples = await time_calls([*calls, noop], reps, warmup=2)
        found = {"search": p50([v for call in calls for v in samples[call.label]]), "floor": p50(samples["floor"])}
        pids = child_pids("contextflow serve")
        found["peak"] = max((vm_hwm_kb(pid) for pid in pids), default=0) // 1024  # searches only
        note = {"agent": "bench", "text": "bench append about the websocket", "project": "shared"}
        appends = await time_calls([Call("append", cf, "append_shared_note", note), noop], reps * 2, warmup=2)
        found |= {"append50": p50(appends["append"]), "append95": p95(appends["append"]),
                  "floor95": p95(appends["floor"])}
        after = await time_calls([Call("append", cf, "append_shared_note", note), calls[0], noop], reps, warmup=1)
        found["after_append"] = p50(after["q0"])
        found["peak_all"] = max((vm_hwm_kb(pid) for pid in pids), default=0) // 1024
        return found


def together(
    env: dict[str, str], servers: int, floor: bool, tool: str, args: dict[str, Any], log: Path
) -> tuple[float, int]:
    """N servers started at once: seconds until the last answered its first call, summed peak RSS (MB)."""
    with ThreadPoolExecutor(servers) as pool:
        runs = list(pool.map(lambda _: cold_start(server_command(floor), env, tool, args, log), range(servers)))
    return max(run.to_first_call for run in runs), sum(run.peak_rss_kb for run in runs) // 1024


def batch_rate(env: dict[str, str], items: int = 10_000) -> tuple[float, float]:
    """Items a second of `note --stdin`, by wall time and by the process's CPU time (a loaded machine)."""
    lines = "".join(f'{{"text": "batch note {n} about websocket retries", "project": "web"}}\n' for n in range(items))
    import resource

    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "contextflow", "note", "--stdin", "--agent", "bench"], input=lines,
                   env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return items / wall, items / (after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime)


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
    rows: list[tuple[str, str]] = []
    for size in (int(s) for s in options.sizes.split(",")):
        root = work / f"store-{size}"
        if not (root / "store").exists():
            generate_store(root / "store", size)
        env = {**base, "HOME": str(work), **store_env(root)}
        log = root / "servers-stderr.log"
        print(f"== {size:,} events: building the index", file=sys.stderr)
        built = build(env)
        if built is not None:
            rows.append((f"{size:,}: index build", f"{built[1]:.1f} s, {built[2]} MB peak, {built[0]:,} events"))
        print("   warm calls", file=sys.stderr)
        warm = asyncio.run(warm_calls(env, options.reps))
        floor = warm["floor"]
        rows.append((f"{size:,}: search p50 (project filter)", f"{warm['search']:.1f} ms = "
                     f"{warm['search'] / floor:.1f}x floor ({floor:.2f} ms); server peak {warm['peak']} MB"))
        rows.append((f"{size:,}: search right after an append", f"{warm['after_append']:.1f} ms = "
                     f"{warm['after_append'] / floor:.1f}x floor"))
        rows.append((f"{size:,}: append p50 / p95", f"{warm['append50']:.1f} / {warm['append95']:.1f} ms = "
                     f"{warm['append95'] / warm['floor95']:.1f}x floor p95 ({warm['floor95']:.2f} ms); server "
                     f"peak after appends {warm['peak_all']} MB"))
        n = options.servers
        if not n:
            continue
        ask = {"query": QUERIES[0], "project": "shared"}
        first, rss = together(env, n, False, "get_context", ask, log)
        first_floor, rss_floor = together(env, n, True, "noop", {}, log)
        rows.append((f"{size:,}: {n} servers, first search", f"{first:.2f} s = {first / first_floor:.1f}x floor, "
                                                             f"{rss} MB = {rss / max(rss_floor, 1):.1f}x floor"))
        if options.no_fresh:
            continue
        shutil.rmtree(Path(env["CONTEXTFLOW_STATE"]), ignore_errors=True)  # a fresh machine: no derived state
        first_read, _ = together(env, n, False, "read_shared_context", {"limit": 5}, log)
        shutil.rmtree(Path(env["CONTEXTFLOW_STATE"]), ignore_errors=True)
        fresh_search, fresh_rss = together(env, n, False, "get_context", ask, log)
        rows.append((f"{size:,}: fresh machine, {n} servers", f"first read {first_read:.2f} s = "
                     f"{first_read / first_floor:.1f}x, first search {fresh_search:.2f} s = "
                     f"{fresh_search / first_floor:.1f}x floor, {fresh_rss} MB summed"))
    if not options.no_batch:
        rate, cpu_rate = batch_rate({**base, "HOME": str(work), **store_env(work / "batch")})
        rows.append(("note --stdin", f"{rate:,.0f} items/s wall, {cpu_rate:,.0f} per CPU second "
                                     "(10,000 items, one process, start-up included)"))
    width = max(len(label) for label, _ in rows)
    print(f"load average: {os.getloadavg()[0]:.1f} (2 cores shared)")
    for label, value in rows:
        print(f"{label.ljust(width)}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
