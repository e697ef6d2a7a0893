#!/usr/bin/env python3
"""A large imported knowledge graph read by new processes, this checkout beside another code tree.

Imports one server-memory `memory.json` of --nodes entities and as many relations into a store, builds
each tree's derived tables in full (and this checkout's graph tables: time and peak RSS printed), then
times a new process's first graph call per tree (`status`, `query`, `compose`, `show`, `edges`,
`related`, `tags`, `add`) and `hook session-start`, with `python -c pass` and `contextflow --version`
beside them, interleaved, --reps times: CPU seconds, wall seconds and peak RSS (/usr/bin/time),
medians. Then a new MCP server's first call of each graph tool, beside the SDK's no-op server started
right after it (spawn to the first answer, peak RSS; medians). Prints figures; asserts nothing.

    scripts/bench_graph_disk.py --before /tmp/cf-main      (`git archive main | tar -x -C /tmp/cf-main`)
    scripts/bench_graph_disk.py --nodes 100000 --reps 3

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
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from bench_import import server_memory  # noqa: E402
from benchlib.procs import cold_start, timed  # noqa: E402

BUILD = (
    "from contextflow.app import App\nfrom contextflow.core.tables import BUILD_WAIT_S\n"
    "app = App.open()\nassert app.tables().update(BUILD_WAIT_S, foreground=True) >= 0\n"
    "assert app.tables().current()\napp.close()\n"
)
FOLD = (  # the graph's tables, on a tree that folds them after a build (later trees fold them during it: a no-op)
    "from contextflow.app import App\nfrom contextflow.core.tables import BUILD_WAIT_S\napp = App.open()\n"
    "fold = getattr(app.tables(), 'fold_stages', None)\nfold and fold(BUILD_WAIT_S)\napp.close()\n"
)
FIRST_ID = (
    "from contextflow.app import App\nfrom contextflow.graph import explore\n"
    "print(explore.run_query(App.open(), 'e17 (service)', 1)[0][0].id)\n"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, help="another code tree (a copy of main) to time beside this one")
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    trees = {"this checkout": ROOT, **({"before": args.before.resolve()} if args.before else {})}
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="cf-bench-graph-") as folder:
        work = Path(folder)
        envs: dict[str, dict[str, str]] = {}
        for name, code in trees.items():
            (work / name / "home").mkdir(parents=True)
            envs[name] = {
                **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},  # as installed: .pyc files
                "HOME": str(work / name / "home"),
                "CONTEXTFLOW_STORE": str(work / "store"),
                "CONTEXTFLOW_STATE": str(work / name / "state"),
                "CONTEXTFLOW_WRITER": f"bench-{name.split()[-1]}",
                "PYTHONPATH": str(code),
            }
        memory = server_memory(work, args.nodes, args.nodes)
        began = time.perf_counter()
        importer = {**envs["this checkout"], "CONTEXTFLOW_WRITER": "bench-import"}
        subprocess.run([python, "-m", "contextflow", "import", str(memory)], env=importer, check=True, cwd=work)
        print(f"imported {args.nodes:,} entities and {args.nodes:,} relations in {time.perf_counter() - began:.1f} s")
        for name, env in envs.items():
            began = time.perf_counter()
            subprocess.run([python, "-c", BUILD], env=env, check=True, timeout=3600, cwd=work)
            built = time.perf_counter() - began
            cpu, wall, rss = timed([python, "-c", FOLD], env, b"", work)
            size = sum(p.stat().st_size for p in (work / name / "state").rglob("views.sqlite3*"))
            print(
                f"{name}: derived tables built in {built:.1f} s; graph tables folded in {wall:.1f} s "
                f"({cpu:.1f} CPU s, {rss:.0f} MB peak); {size / 1e6:.0f} MB on disk"
            )
        node = (
            subprocess.run(
                [python, "-c", FIRST_ID], env=envs["this checkout"], capture_output=True, check=True, cwd=work
            )
            .stdout.decode()
            .strip()
        )
        calls = {
            "status": ["status"],
            "query": ["query", "retry AND ledger", "--limit", "10"],
            "compose": ["compose"],
            "show": ["show", node],
            "edges": ["edges", node],
            "related": ["related", node],
            "tags": ["tags"],
            "add": ["add", "--type", "fact", "a new fact about the retry service"],
            "hook session-start": ["hook", "session-start"],
        }
        payload = json.dumps({"session_id": "bench", "cwd": str(work)}).encode()
        for env in envs.values():  # once untimed: each tree's .pyc files written
            timed([python, "-m", "contextflow", "status"], env, b"", work)
        samples: dict[str, list[tuple[float, float, float]]] = {}
        for _ in range(args.reps):
            floors = {
                "python -c pass": [python, "-c", "pass"],
                "contextflow --version": [python, "-m", "contextflow", "--version"],
            }
            for label, command in floors.items():
                samples.setdefault(label, []).append(timed(command, envs["this checkout"], b"", work))
            for call, argv in calls.items():
                for name, env in envs.items():
                    stdin = payload if call.startswith("hook") else b""
                    found = timed([python, "-m", "contextflow", *argv], env, stdin, work)
                    samples.setdefault(f"{name}: {call}", []).append(found)
        floor = statistics.median(s[0] for s in samples["python -c pass"])
        for label, found in samples.items():
            cpu, wall, rss = (statistics.median(s[i] for s in found) for i in range(3))
            print(
                f"{label:36} CPU {cpu * 1000:6.0f} ms ({cpu / floor:5.1f}x)  wall {wall * 1000:6.0f} ms  {rss:5.0f} MB"
            )
        servers(envs, node, args.reps, work)


def servers(envs: dict[str, dict[str, str]], node: str, reps: int, work: Path) -> None:
    """A new server's first call of each graph tool per tree, beside a no-op server's right after it."""
    tools = {
        "graph_recall": {"query": "retry AND ledger"},
        "graph_status": {},
        "graph_compose": {"query": "retry"},
        "graph_remember": {"content": "a new fact about the ledger service", "agent": "bench"},
        "graph_update": {"id": node, "summary": "updated by the benchmark"},
    }
    floor = [sys.executable, "-m", "benchlib.floor_server"]
    errlog = work / "server.err"
    os.chdir(work)  # (`python -m contextflow` imports the package in its working folder ahead of PYTHONPATH's)
    print("\nfirst call in a new MCP server (spawn to answer), beside the SDK's no-op server:")
    for tool, arguments in tools.items():
        for name, env in envs.items():
            floor_env = {**env, "PYTHONPATH": str(ROOT / "scripts")}
            found, floors = [], []
            for _ in range(reps):
                serving = {**env, "CONTEXTFLOW_TOOLS": "graph"}
                found.append(
                    cold_start([sys.executable, "-m", "contextflow", "serve"], serving, tool, arguments, errlog)
                )
                floors.append(cold_start(floor, floor_env, "noop", {}, errlog))
            wall = statistics.median(run.to_first_call for run in found)
            ratio = wall / statistics.median(run.to_first_call for run in floors)
            mb = max(run.peak_rss_kb for run in found) / 1024
            print(f"{name + ': ' + tool:36} {wall * 1000:6.0f} ms ({ratio:4.1f}x the no-op server), {mb:4.0f} MB peak")


if __name__ == "__main__":
    main()
