"""The scale rows of issue 20 (search on the shared on-disk index), for scripts/bench and scripts/bench_index.py.

Per store: the derived index build (child process: seconds, peak RSS of the builder and of a worker),
warm `get_context` p50 over stdio beside the floor's no-op call, the server's peak RSS after its
searches, append p50/p95, a search right after an append, N servers started together with the state
present (time until all answered a first search, summed peak RSS, against N floor servers) and on a
fresh machine (first read, first search), and `note --stdin` items a second.
"""

from __future__ import annotations

import asyncio
import resource
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlib.mcp_timing import Call, call_once, server_command, stdio_client, time_calls
from benchlib.procs import child_pids, cold_start, vm_hwm_kb

QUERIES = (
    "token refresh websocket",
    "flaky test fixture ordering",
    "terraform module review",
    "gradient checkpointing GPU",
    "search endpoint latency index",
)
BUILD = (
    "import resource, sys, time\nfrom contextflow.app import App\nfrom contextflow.search import derived\n"
    "app = App.open(); t = time.perf_counter(); n = derived.search_for(app.store).update(rebuild=True)\n"
    "workers = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "own = int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0])  # ru_maxrss keeps the forker's\n"
    "print(n, time.perf_counter() - t, own // 1024, workers.ru_maxrss // 1024)"
)


def p50(values: list[float]) -> float:
    return statistics.median(values) * 1000


def build(env: dict[str, str]) -> tuple[int, float, int, int] | None:
    """The derived index built from scratch in a child process: events, seconds, the builder's peak MB and a
    worker's (0 without workers); None when the checkout has no derived index."""
    done = subprocess.run([sys.executable, "-c", BUILD], env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        return None
    events, seconds, peak_mb, worker_mb = done.stdout.split()
    return int(events), float(seconds), int(peak_mb), int(worker_mb)


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
        found |= {
            "append50": p50(appends["append"]),
            "append95": p95(appends["append"]),
            "floor95": p95(appends["floor"]),
        }
        after = await time_calls([Call("append", cf, "append_shared_note", note), calls[0], noop], reps, warmup=1)
        found["after_append"] = p50(after["q0"])
        # the same with the client's turn between (50 ms): the server commits meanwhile; beside the same search
        # with no append before it, in turn with them (the index as it is then, the same pause before it)
        paused: list[float] = []
        alone: list[float] = []
        for _ in range(reps):
            await asyncio.sleep(0.05)
            alone.append((await call_once(calls[0]))[0])
            await call_once(Call("append", cf, "append_shared_note", note))
            await asyncio.sleep(0.05)
            paused.append((await call_once(calls[0]))[0])
        found["after_pause"], found["alone"] = p50(paused), p50(alone)
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
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "contextflow", "note", "--stdin", "--agent", "bench"],
        input=lines,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return items / wall, items / (after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime)


@dataclass(frozen=True)
class Row:
    label: str
    value: str
    target: str = ""  # the target, when this row has one
    met: bool | None = None


def size_rows(size: int, env: dict[str, str], log: Path, reps: int, servers: int, fresh: bool) -> list[Row]:
    big = size >= 1_000_000
    rows: list[Row] = []
    built = build(env)
    if built is not None:
        events, seconds, peak, worker = built
        total = peak + 2 * worker
        rows.append(
            Row(
                f"{size:,}: index build",
                f"{seconds:.1f} s, peak {peak} MB + {worker} MB a worker, {events:,} events",
                "<= 60 s and 2 GB at 1M" if big else "",
                (seconds <= 60 and total <= 2048) if big else None,
            )
        )
    warm = asyncio.run(warm_calls(env, reps))
    floor = warm["floor"]
    ratio = warm["search"] / floor
    rows.append(
        Row(
            f"{size:,}: search p50 (project filter)",
            f"{warm['search']:.1f} ms = {ratio:.1f}x floor ({floor:.2f} ms)",
            f"<= {10 if big else 5}x floor",
            ratio <= (10 if big else 5),
        )
    )
    rows.append(
        Row(
            f"{size:,}: server peak RSS after its searches",
            f"{warm['peak']} MB",
            "<= 500 MB at 1M" if big else "",
            warm["peak"] <= 500 if big else None,
        )
    )
    rows.append(
        Row(
            f"{size:,}: search right after an append",
            f"{warm['after_append']:.1f} ms = {warm['after_append'] / floor:.1f}x floor",
        )
    )
    rows.append(
        Row(
            f"{size:,}: search 50 ms after an append",
            f"{warm['after_pause']:.1f} ms = {warm['after_pause'] / warm['alone']:.2f}x the same search alone "
            f"({warm['alone']:.1f} ms, in turn with it)",
            "<= 1.2x a search alone",
            warm["after_pause"] <= 1.2 * warm["alone"],
        )
    )
    append = warm["append95"] / warm["floor95"]
    rows.append(
        Row(
            f"{size:,}: append p50 / p95",
            f"{warm['append50']:.1f} / {warm['append95']:.1f} ms = "
            f"{append:.1f}x floor p95; server peak after appends {warm['peak_all']} MB",
            "p95 <= 3x floor",
            append <= 3,
        )
    )
    if not servers:
        return rows
    ask = {"query": QUERIES[0], "project": "shared"}
    first, rss = together(env, servers, False, "get_context", ask, log)
    first_floor, rss_floor = together(env, servers, True, "noop", {}, log)
    time_ratio, rss_ratio = first / first_floor, rss / max(rss_floor, 1)
    rows.append(
        Row(
            f"{size:,}: {servers} servers, first search",
            f"{first:.2f} s = {time_ratio:.1f}x floor, {rss} MB = {rss_ratio:.1f}x floor",
            "<= 3x floor, time and RSS",
            time_ratio <= 3 and rss_ratio <= 3,
        )
    )
    if fresh:
        shutil.rmtree(Path(env["CONTEXTFLOW_STATE"]), ignore_errors=True)  # a fresh machine: no derived state
        first_read, _ = together(env, servers, False, "read_shared_context", {"limit": 5}, log)
        shutil.rmtree(Path(env["CONTEXTFLOW_STATE"]), ignore_errors=True)
        fresh_search, fresh_rss = together(env, servers, False, "get_context", ask, log)
        read_ratio, search_ratio = first_read / first_floor, fresh_search / first_floor
        rows.append(
            Row(
                f"{size:,}: fresh machine, {servers} servers",
                f"first read {first_read:.2f} s = "
                f"{read_ratio:.1f}x, first search {fresh_search:.2f} s = {search_ratio:.1f}x floor, "
                f"{fresh_rss} MB summed",
                "read <= 5x, search <= 10x",
                read_ratio <= 5 and search_ratio <= 10,
            )
        )
    return rows


def batch_row(env: dict[str, str], items: int = 10_000) -> Row:
    rate, cpu_rate = batch_rate(env, items)
    return Row(
        "note --stdin",
        f"{rate:,.0f} items/s wall, {cpu_rate:,.0f} per CPU second ({items:,} items, one process, start-up included)",
        ">= 10,000 items/s",
        rate >= 10_000,
    )
