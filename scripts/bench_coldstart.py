#!/usr/bin/env python3
"""Cold start: a new server process, spawned on a big store, to its first answered tool call.

For each store size (default 100k and 1M events: notes and handoffs from benchlib.storegen plus
1% context records from another writer) it prints, on a new machine (no derived state: the tables are
built in the background) and with the derived tables built: spawn -> initialize, spawn -> first
answered call, the server's peak RSS, and how long the server takes to exit. With the tables built
two first calls are timed: `read_shared_context` and `context_get`. Beside them the floor: a no-op
tool server on the same SDK (benchlib.floor_server). Also the tables' size and an in-process breakdown
(a first sessions query of the tables versus folding the sessions view). Prints figures; asserts nothing.

Run it from the repository root (the server is `python -m contextflow serve` in this checkout).

    scripts/bench_coldstart.py                 100k and 1M events (about 20 minutes on 2 cores)
    scripts/bench_coldstart.py --sizes 20000   choose the sizes
    scripts/bench_coldstart.py --reps 5        cold starts per variant (median shown)

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
import resource  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Mapping  # noqa: E402

from benchlib.mcp_timing import server_command  # noqa: E402
from benchlib.procs import ColdStart, cold_start  # noqa: E402
from benchlib.storegen import generate_store  # noqa: E402

from contextflow.core.clock import COUNTER_BITS  # noqa: E402
from contextflow.core.events import Event, encode  # noqa: E402
from contextflow.core.ids import new_id  # noqa: E402

CALLS = {  # first call -> the view it needs
    "read_shared_context": ({"project": "shared", "limit": 20}, "sessions index sidecar, else the sessions"),
    "context_get": ({"key": "machine:bench-7"}, "records"),
}
RECORD_SHARE = 0.01  # of the events: context records (sets, overwrites, deletes) beside the notes


def add_context_records(folder: Path, count: int) -> None:
    """A log of `count` context.set/delete events from another writer, written as the store writes them."""
    writer, lines, hlc = "phone-5c0ffe", [], (time.time_ns() // 1_000_000) << COUNTER_BITS
    for n in range(count):
        hlc += 1
        key = f"machine:bench-{n % max(1, count // 4)}"
        if n % 10 == 9:
            kind, data = "context.delete", {"key": key}
        else:
            kind, data = "context.set", {"key": key, "value": {"ip": f"10.0.{n % 256}.{n % 200}", "n": n}}
        lines.append(encode(Event(new_id(), writer, n + 1, hlc, kind, data)))
    (folder / f"events.{writer}.jsonl").write_bytes(b"".join(lines))


def env_for(root: Path) -> dict[str, str]:
    home = root / "home"
    home.mkdir(exist_ok=True)
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("CONTEXTFLOW_", "MCP_SHARED_CONTEXT_", "XDG_"))},
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "CONTEXTFLOW_STORE": str(root / "store"),
        "CONTEXTFLOW_STATE": str(root / "state"),
        "CONTEXTFLOW_WRITER": "bench",
        "MCP_SHARED_CONTEXT_PROJECT": "shared",
        "CONTEXTFLOW_TOOLS": "default,context",
    }


def derived_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / "state").rglob("views.sqlite3*") if p.is_file())


def in_process(env: Mapping[str, str], fold: bool) -> tuple[float, float]:
    """(seconds to import, open and query the tables or scan every log (doctor's), the biggest; peak RSS MB)."""
    read = "app.store.refresh()" if fold else "app.tables().query('SELECT count(*) FROM sessions_entries')"
    code = (
        "import time, resource; t = time.perf_counter()\n"
        "from contextflow.app import App\n"
        "app = App.open()\n"
        f"{read}\n"
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=dict(env), capture_output=True, check=True, timeout=3600, cwd=env["HOME"]
    )
    seconds, rss = done.stdout.split()
    return float(seconds), float(rss)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def row(label: str, runs: list[ColdStart]) -> str:
    return (
        f"  {label:<26} initialize {median([r.to_initialized for r in runs]):6.2f} s   "
        f"first call {median([r.to_first_call for r in runs]):6.2f} s   "
        f"peak RSS {max(r.peak_rss_kb for r in runs) / 1024:7.0f} MB   "
        f"exit {median([r.exit_seconds for r in runs]):6.2f} s"
    )


def measure(size: int, reps: int, keep: bool) -> None:
    root = Path(tempfile.mkdtemp(prefix=f"cf-cold-{size}-"))
    try:
        began = time.perf_counter()
        store = generate_store(root / "store", size - int(size * RECORD_SHARE))
        add_context_records(root / "store", int(size * RECORD_SHARE))
        env = env_for(root)
        errlog = root / "server-stderr.log"
        took = time.perf_counter() - began
        print(
            f"\n== {size:,} events: notes and handoffs, {RECORD_SHARE:.0%} context records "
            f"({store.bytes / 1e6:.0f} MB of notes, generated in {took:.0f} s)"
        )

        without: list[ColdStart] = []
        for _ in range(max(1, reps // 2)):
            for path in derived_files(root):
                path.unlink()
            without.append(
                cold_start(server_command(False), env, "read_shared_context", CALLS["read_shared_context"][0], errlog)
            )
        build = "from contextflow.app import App; a = App.open(); a.tables().update(3600, foreground=True)"
        subprocess.run([sys.executable, "-c", build], env=env, check=True, timeout=3600, cwd=env["HOME"])
        built = {
            tool: [cold_start(server_command(False), env, tool, arguments, errlog) for _ in range(reps)]
            for tool, (arguments, _) in CALLS.items()
        }
        tables_bytes = sum(p.stat().st_size for p in derived_files(root))
        floor = [cold_start(server_command(True), env, "noop", {}, errlog) for _ in range(reps)]

        print(row("floor (no-op SDK server)", floor) + "   [imports and handshake only]")
        print(row("new machine", without) + "   [read_shared_context]")
        for tool, runs in built.items():
            print(row("tables built", runs) + f"   [{tool}: reads the {CALLS[tool][1]} tables]")
        print(f"  derived tables on disk: {tables_bytes / 1e6:.0f} MB")
        load, load_rss = in_process(env, False)
        refold, refold_rss = in_process(env, True)
        print(
            f"  in-process: a first sessions query of the tables {load:.2f} s ({load_rss:.0f} MB), "
            f"the sessions view folded {refold:.2f} s ({refold_rss:.0f} MB)"
        )
        for tool, runs in built.items():
            first = median([r.to_first_call for r in runs])
            verdict = "met" if first < 1.0 else "NOT met"
            print(f"  target: first {tool} with the tables built under 1 s -> {verdict} ({first:.2f} s)")
    finally:
        if keep:
            print(f"  kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000", help="comma-separated event counts")
    parser.add_argument("--reps", type=int, default=3, help="cold starts with the tables built per size (median)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary stores")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; bench process peak RSS is not the server's")
    for size in (int(s) for s in args.sizes.split(",")):
        measure(size, args.reps, args.keep)
    print(f"\n(bench process peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
