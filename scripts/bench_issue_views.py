#!/usr/bin/env python3
"""The hot paths the derived tables serve, this checkout beside another (say main) in one interleaved run.

For each store size (benchlib.storegen) and each code tree, with derived state present and another
process having appended 10 events before each call: `hook session-start`, the Stop hook capturing
one new turn, and a new server's first `read_shared_context` (beside the no-op SDK server's). Wall
time and peak RSS, medians of --reps, ratios to `python -c pass` and to the no-op server. Also a
fresh machine's first `hook session-start` (no state at all), and (benchlib.issue_rows, once each)
four new servers' first reads beside four no-op servers, a new server's first call of each tool,
and a host that listed prompts calling list_sessions after new bytes. Prints figures; asserts nothing.

    scripts/bench_issue_views.py --before /tmp/cf-main          compare with a copy of main
    scripts/bench_issue_views.py --sizes 100000 --reps 5

(`git archive main | tar -x -C /tmp/cf-main` makes such a copy without touching any worktree; --after
takes another such copy, so editing this checkout during a long run changes nothing measured.)
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

from benchlib import issue_rows  # noqa: E402
from benchlib.procs import ProbeError, cold_start  # noqa: E402
from benchlib.storegen import generate_store  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "capture" / "claude-transcript.jsonl"
SAMPLE_CWD = "/work/research/capture/runs/claude-full/work"
SERVERS = 4  # started together, as the issue counts them
SETTLE = (  # derived state present: the tables' build finished (waiting for the background builder) and the index built
    "import time\nfrom contextflow.app import App\nfrom contextflow.core.tables import BUILD_WAIT_S\n"
    "from contextflow.search import derived\napp = App.open()\nwhile not app.tables().current():\n"
    "    app.tables().update(BUILD_WAIT_S, foreground=True)\nderived.search_for(app.store).index()\napp.close()\n"
)
APPEND = (
    "import sys\nfrom contextflow.app import App\napp = App.open()\n"
    "app.store.append_many([('note', {'project': 'shared', 'agent': 'other', 'session_id': 'elsewhere', "
    "'text': f'appended {n} ' + sys.argv[1]}) for n in range(10)])\napp.close()\n"
)


OUTPUT: dict[str, int] = {}  # characters each command last printed (a check that it did its work)


def timed(command: list[str], env: dict[str, str], stdin: bytes = b"") -> tuple[float, float]:
    """(wall seconds, peak RSS MB) of one child process."""
    began = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%M", *command], input=stdin, env=env, capture_output=True, timeout=900
    )
    wall = time.perf_counter() - began
    OUTPUT[" ".join(command[-2:])] = len(done.stdout)
    if done.returncode:
        raise SystemExit(f"{command} failed: {done.stderr.decode()[-2000:]}")
    return wall, int(done.stderr.decode().strip().splitlines()[-1]) / 1024


def one_turn(n: int, cwd: str) -> bytes:
    text = FIXTURE.read_text().replace(SAMPLE_CWD, cwd)
    return text.replace("Create calc.py with an add function", f"Create calc{n}.py with an add function").encode()


class Tree:
    def __init__(self, name: str, code: Path, root: Path, store: Path) -> None:
        self.name, self.code = name, code
        self.work = root / name
        (self.work / "repo" / ".git").mkdir(parents=True)
        (self.work / "home").mkdir()
        self.env = {
            **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},  # as installed: .pyc files
            "HOME": str(self.work / "home"),
            "CONTEXTFLOW_STORE": str(store),
            "CONTEXTFLOW_STATE": str(self.work / "state"),
            "CONTEXTFLOW_WRITER": f"bench-{name}",
            "PYTHONPATH": str(code),
            "MCP_SHARED_CONTEXT_PROJECT": "shared",
        }
        self.transcript = self.work / "transcript.jsonl"
        self.turns = 0
        self.transcript.write_bytes(one_turn(0, str(self.work / "repo")))

    def cli(self, *words: str) -> list[str]:
        return [sys.executable, "-m", "contextflow", *words]

    def payload(self, stop: bool) -> bytes:
        found = {
            "session_id": f"bench-{self.name}",
            "cwd": str(self.work / "repo"),
            "transcript_path": str(self.transcript),
        }
        if stop:
            found |= {"hook_event_name": "Stop", "last_assistant_message": "done"}
        return json.dumps(found).encode()

    def append_elsewhere(self) -> None:
        other = {**self.env, "CONTEXTFLOW_WRITER": "bench-other", "CONTEXTFLOW_STATE": str(self.work / "other-state")}
        subprocess.run([sys.executable, "-c", APPEND, self.name], env=other, check=True, timeout=900)

    def settle(self) -> None:
        subprocess.run([sys.executable, "-c", SETTLE], env=self.env, check=True, timeout=3600)

    def session_start(self) -> tuple[float, float]:
        return timed(self.cli("hook", "session-start"), self.env, self.payload(False))

    def stop(self) -> tuple[float, float]:
        self.turns += 1
        with open(self.transcript, "ab") as handle:
            handle.write(one_turn(self.turns, str(self.work / "repo")))
        return timed(self.cli("hook", "stop"), self.env, self.payload(True))

    def first_read(self, errlog: Path) -> tuple[float, float]:
        try:
            found = cold_start(self.cli("serve"), self.env, "read_shared_context", {"limit": 20}, errlog)
        except ProbeError as exc:
            raise SystemExit(f"{self.name}: {exc}; its stderr ends:\n{errlog.read_text()[-3000:]}") from None
        return found.to_first_call, found.peak_rss_kb / 1024


def median(samples: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(s[0] for s in samples), max(s[1] for s in samples)


def more_rows(trees: list[Tree], env: dict[str, str], floor: list[str], log: Path, noop_mb: float) -> None:
    """Many servers at once, each tool's first call, and a host that listed prompts (benchlib.issue_rows)."""
    n = SERVERS
    floor_wall, floor_mb = issue_rows.together(floor, env, "noop", {}, log, n)
    print(f"{n} no-op SDK servers, first calls: {floor_wall * 1000:.0f} ms, {floor_mb:.0f} MB summed")
    for tree in trees:
        tree.append_elsewhere()
        wall, mb = issue_rows.together(tree.cli("serve"), tree.env, "read_shared_context", {"limit": 20}, log, n)
        print(
            f"{tree.name} {n} new servers, first read_shared_context: {wall * 1000:.0f} ms "
            f"({wall / floor_wall:.1f}x), {mb:.0f} MB summed ({mb / floor_mb:.1f}x)"
        )
    for tree in trees:
        made = issue_rows.make_things([sys.executable], tree.env)
        every = {**tree.env, "CONTEXTFLOW_TOOLS": "all"}  # every tool group offered
        arguments = issue_rows.tool_arguments(made)
        found = issue_rows.first_calls(tree.cli("serve"), floor, every, env, arguments, tree.append_elsewhere, log)
        ratios = {tool: run.to_first_call / noop_run.to_first_call for tool, (run, noop_run) in found.items()}
        slow = max(ratios, key=lambda tool: ratios[tool])
        big = max(found, key=lambda tool: found[tool][0].peak_rss_kb)
        print(
            f"{tree.name} new server, first call of each of {len(found)} tools (each beside a no-op server's): "
            f"median {statistics.median(ratios.values()):.1f}x, slowest {slow} {ratios[slow]:.1f}x "
            f"({found[slow][0].to_first_call * 1000:.0f} ms), largest {big} peak "
            f"{found[big][0].peak_rss_kb / 1024:.0f} MB (no-op {noop_mb:.0f} MB)"
        )
        print(
            "  "
            + ", ".join(
                f"{tool} {ratios[tool]:.1f}x {run.peak_rss_kb / 1024:.0f} MB" for tool, (run, _) in found.items()
            )
        )
    for tree in trees:
        fresh = {**tree.env, "CONTEXTFLOW_STATE": str(tree.work / "build-state")}
        built = issue_rows.build_all(sys.executable, fresh)
        tables, search = built["tables"], built["search"]
        summed = tables["peak_mb"] + search["peak_mb"] + 2 * search["worker_mb"]
        print(
            f"{tree.name} building all derived state (tables and search index at once): "
            f"{built['both']['seconds']:.1f} s, {tables['cpu'] + search['cpu']:.0f} CPU s; "
            f"tables {tables['seconds']:.1f} s, {tables['peak_mb']:.0f} MB; search index {search['seconds']:.1f} s, "
            f"{search['peak_mb']:.0f} MB + {search['worker_mb']:.0f} MB a worker; {summed:.0f} MB summed"
        )
        shutil.rmtree(tree.work / "build-state", ignore_errors=True)
    for tree in trees:
        times, mb = issue_rows.after_prompts(tree.cli("serve"), tree.env, tree.append_elsewhere, 5, log)
        print(
            f"{tree.name} host that listed prompts, list_sessions after another process appended: "
            f"p50 {statistics.median(times) * 1000:.0f} ms (max {max(times) * 1000:.0f}), server peak {mb:.0f} MB"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--before", type=Path, help="another code tree to compare with (a copy of main)")
    parser.add_argument("--after", type=Path, default=ROOT, help="the code tree measured (default: this checkout)")
    args = parser.parse_args()
    for tree in (args.before, args.after):  # compiled once, as an installed package is
        if tree is not None:
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "contextflow")], check=True)
    work = Path(tempfile.mkdtemp(prefix="cf-bench-issue-views-"))
    os.chdir(work)  # `python -m` puts the working folder first on the path: never this checkout's code
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            root = work / str(size)
            store = generate_store(root / "store", size)
            trees = [Tree("after", args.after.resolve(), root, store.folder)]
            if args.before:
                trees.insert(0, Tree("before", args.before.resolve(), root, store.folder))
            print(f"\n## {size:,} events ({store.bytes / 1e6:.0f} MB of logs)")
            for tree in trees:  # a fresh machine: no state at all
                wall, rss = tree.session_start()
                print(f"{tree.name}: fresh machine, first hook session-start {wall:.2f} s, {rss:.0f} MB")
                tree.stop()  # the first capture of the transcript (its later turns are the measured ones)
                began = time.perf_counter()
                tree.settle()
                print(f"{tree.name}: derived state complete {time.perf_counter() - began:.0f} s later")
            errlog = root / "server.err"
            floor_command = [sys.executable, "-m", "benchlib.floor_server"]
            samples: dict[str, list[tuple[float, float]]] = {}
            for _ in range(args.reps):
                for tree in trees:
                    tree.append_elsewhere()
                    samples.setdefault(f"{tree.name} hook session-start", []).append(tree.session_start())
                    tree.append_elsewhere()
                    samples.setdefault(f"{tree.name} Stop hook, one new turn", []).append(tree.stop())
                    tree.append_elsewhere()
                    samples.setdefault(f"{tree.name} new server, first read_shared_context", []).append(
                        tree.first_read(errlog)
                    )
                env = {**trees[-1].env, "PYTHONPATH": str(Path(__file__).resolve().parent)}
                samples.setdefault("python -c pass", []).append(timed([sys.executable, "-c", "pass"], env))
                floor = cold_start(floor_command, env, "noop", {}, errlog)
                samples.setdefault("no-op SDK server, first call", []).append(
                    (floor.to_first_call, floor.peak_rss_kb / 1024)
                )
            bare = median(samples["python -c pass"])[0]
            noop = median(samples["no-op SDK server, first call"])[0]
            for name, found in samples.items():
                wall, rss = median(found)
                base = noop if "server" in name else bare
                print(f"{name}: {wall * 1000:.0f} ms ({wall / base:.1f}x), peak {rss:.0f} MB")
            print(f"(characters printed by the last call of each: {OUTPUT})")
            more_rows(trees, env, floor_command, errlog, median(samples["no-op SDK server, first call"])[1])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
