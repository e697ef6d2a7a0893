#!/usr/bin/env python3
"""The hot paths the derived tables serve, this checkout beside another (say main) in one interleaved run.

For each store (benchlib.storegen's notes and handoffs at each size; `year`: benchlib.capturegen's
year of one heavy user's captured sessions, 58,101 events) and each code tree, with derived state
present and another process having appended 10 events before each call: `hook session-start`, the
Stop hook capturing one new turn, and a new server's first `read_shared_context` (beside the no-op
SDK server's). All stores and trees in one interleaved run with `python -c pass` and the no-op
server: wall time and peak RSS, medians of --reps, ratios to `python -c pass` and to the no-op
server. Also a fresh machine's first `hook session-start` (no state at all), and an upgrade that
changes no derived format (a copy of the code with another version and a changed module outside
every format's code): its first `hook session-start` and its median beside the code before it, run
after the rest (their ratios are to `python -c pass` timed beside them). Then, per store
(benchlib.issue_rows; --no-more skips them): four new servers' first reads beside four no-op servers,
a new server's first call of each tool beside a no-op server's, building all derived state (tables
and search index at once), and a host that listed prompts calling list_sessions after new bytes.
Prints figures; asserts nothing.

    scripts/bench_issue_views.py --before /tmp/cf-main          compare with a copy of main
    scripts/bench_issue_views.py --sizes year,100000 --reps 5   (the default)

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
import resource  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from benchlib import issue_rows  # noqa: E402
from benchlib.capturegen import generate_capture_store  # noqa: E402
from benchlib.procs import ProbeError, cold_start  # noqa: E402
from benchlib.storegen import generate_store  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "capture" / "claude-transcript.jsonl"
SAMPLE_CWD = "/work/research/capture/runs/claude-full/work"
# What any session start imports before a line of contextflow runs (orjson imports dataclasses, inspect,
# uuid, datetime; pathlib imports urllib.parse): the floor under the hook's ratio to `python -c pass`.
LIBRARIES = "import orjson, sqlite3, pathlib, typing, hashlib, json, re, threading"
APPEND = (
    "import sys\nfrom contextflow.app import App\napp = App.open()\n"
    "app.store.append_many([('note', {'project': 'shared', 'agent': 'other', 'session_id': 'elsewhere', "
    "'text': f'appended {n} ' + sys.argv[1]}) for n in range(10)])\napp.close()\n"
)


OUTPUT: dict[str, int] = {}  # characters each command last printed (a check that it did its work)


Sample = tuple[float, float, float]  # wall seconds, peak RSS MB, CPU seconds (user + system; 0: not measured)


def timed(command: list[str], env: dict[str, str], stdin: bytes = b"") -> Sample:
    """(wall seconds, peak RSS MB, CPU seconds) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%M", *command], input=stdin, env=env, capture_output=True, timeout=900
    )
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    OUTPUT[" ".join(command[-2:])] = len(done.stdout)
    if done.returncode:
        raise SystemExit(f"{command} failed: {done.stderr.decode()[-2000:]}")
    return wall, int(done.stderr.decode().strip().splitlines()[-1]) / 1024, cpu


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

    @classmethod
    def sharing(cls, other: Tree, name: str, code: Path) -> Tree:
        """Another code tree on `other`'s machine (its state, its transcript): an upgrade."""
        found = cls.__new__(cls)
        found.__dict__.update(other.__dict__)
        found.name, found.code = name, code
        found.env = {**other.env, "PYTHONPATH": str(code)}
        return found

    def wait_for_tables(self) -> None:
        """Until this machine's derived tables hold every log. A fresh machine's build runs in a background
        process holding the build lock, and an update finding it at work answers at once (-1) rather than
        build twice: wait for that lock, then update."""
        code = (
            "from contextflow.app import App\nfrom contextflow.core.lock import WriterLock\n"
            "from contextflow.core.catchup import BUILD_LOCK, BUILD_WAIT_S\n"
            "app = App.open()\ntables = app.tables()\nfor _ in range(60):\n"
            "    with WriterLock(tables.path.with_name(BUILD_LOCK), 3600):\n        pass\n"
            "    if tables.update(BUILD_WAIT_S, foreground=True) >= 0:\n        break\napp.close()\n"
        )
        subprocess.run([sys.executable, "-c", code], env=self.env, check=True, timeout=3600)

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

    def session_start(self) -> Sample:
        return timed(self.cli("hook", "session-start"), self.env, self.payload(False))

    def stop(self) -> Sample:
        self.turns += 1
        with open(self.transcript, "ab") as handle:
            handle.write(one_turn(self.turns, str(self.work / "repo")))
        return timed(self.cli("hook", "stop"), self.env, self.payload(True))

    def first_read(self, errlog: Path) -> Sample:
        try:
            found = cold_start(self.cli("serve"), self.env, "read_shared_context", {"limit": 20}, errlog)
        except ProbeError as exc:
            raise SystemExit(f"{self.name}: {exc}; its stderr ends:\n{errlog.read_text()[-3000:]}") from None
        return found.to_first_call, found.peak_rss_kb / 1024, 0.0


def median(samples: list[Sample]) -> Sample:
    """Median wall time, highest peak RSS, median CPU time."""
    return (
        statistics.median(s[0] for s in samples),
        max(s[1] for s in samples),
        statistics.median(s[2] for s in samples),
    )


def upgraded_copy(code: Path, target: Path) -> Path:
    """A copy of `code` as the next release that changes no derived format: another version string and
    a changed module that no format's code closure holds (the terminal picker)."""
    shutil.copytree(code / "contextflow", target / "contextflow", ignore=shutil.ignore_patterns("__pycache__"))
    init = target / "contextflow" / "__init__.py"
    init.write_text(init.read_text().replace('__version__ = "', '__version__ = "99.'))
    with open(target / "contextflow" / "adapters" / "picker.py", "a") as handle:
        handle.write("\n# changed by the next release\n")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(target / "contextflow")], check=True)
    return target


def store_for(name: str, folder: Path) -> tuple[str, Path, int]:
    """(label, logs folder, bytes) of a generated store."""
    if name.partition(":")[0] == "year":  # `year:N`: a smaller one (a smoke run)
        found = generate_capture_store(folder, int(name.partition(":")[2] or 58_101))
        return f"year of captured sessions, {found.events:,} events", found.folder, found.bytes
    found = generate_store(folder, int(name))
    return f"{found.events:,} events", found.folder, found.bytes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", default="year,100000", help="store sizes in events, `year` for the capture store")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--before", type=Path, help="another code tree to compare with (a copy of main)")
    parser.add_argument("--after", type=Path, default=ROOT, help="the code tree measured (default: this checkout)")
    parser.add_argument("--no-upgrade", action="store_true", help="leave out the upgrade rows")
    parser.add_argument("--no-more", action="store_true", help="leave out the rows of benchlib.issue_rows")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (stores, states) to look into")
    args = parser.parse_args()
    for tree in (args.before, args.after):  # compiled once, as an installed package is
        if tree is not None:
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "contextflow")], check=True)
    work = Path(tempfile.mkdtemp(prefix="cf-bench-issue-views-"))
    os.chdir(work)  # `python -m` puts the working folder first on the path: never this checkout's code
    try:
        stores: list[tuple[str, list[Tree]]] = []
        for name in (part.strip() for part in args.sizes.split(",") if part.strip()):
            root = work / name
            label, folder, size = store_for(name, root / "store")
            trees = [Tree("after", args.after.resolve(), root, folder)]
            if args.before:
                trees.insert(0, Tree("before", args.before.resolve(), root, folder))
            print(f"\n## {label} ({size / 1e6:.0f} MB of logs)")
            for tree in trees:  # a fresh machine: no state at all
                wall, rss, _ = tree.session_start()
                chars = OUTPUT[" ".join(tree.cli("hook", "session-start")[-2:])]
                print(f"{tree.name}: fresh machine, first hook session-start {wall:.2f} s, {rss:.0f} MB, {chars} chars")
                tree.stop()  # the first capture of the transcript (its later turns are the measured ones)
                tree.wait_for_tables()
            stores.append((label, trees))
        upgrades = [] if args.no_upgrade else [upgraded_copy(args.after.resolve(), work / f"u{n}") for n in range(3)]
        errlog = work / "server.err"
        floor_command = [sys.executable, "-m", "benchlib.floor_server"]
        samples: dict[str, list[Sample]] = {}
        first_upgraded: dict[str, list[Sample]] = {}
        env = {**stores[-1][1][-1].env, "PYTHONPATH": str(Path(__file__).resolve().parent)}
        for rep in range(args.reps):
            samples.setdefault("python -c pass", []).append(timed([sys.executable, "-c", "pass"], env))
            samples.setdefault("python importing the libraries a session start needs", []).append(
                timed([sys.executable, "-c", LIBRARIES], env)
            )
            floor = cold_start(floor_command, env, "noop", {}, errlog)
            samples.setdefault("no-op SDK server, first call", []).append(
                (floor.to_first_call, floor.peak_rss_kb / 1024, 0.0)
            )
            for label, trees in stores:
                for tree in trees:
                    tree.append_elsewhere()
                    samples.setdefault(f"{label}: {tree.name} hook session-start", []).append(tree.session_start())
                    tree.append_elsewhere()
                    samples.setdefault(f"{label}: {tree.name} Stop hook, one new turn", []).append(tree.stop())
                    tree.append_elsewhere()
                    samples.setdefault(f"{label}: {tree.name} new server, first read_shared_context", []).append(
                        tree.first_read(errlog)
                    )
                if upgrades and rep == args.reps - 1:  # after the code before it ran: each upgrade's first call
                    after = trees[-1]
                    for n, code in enumerate(upgrades):
                        upgraded = Tree.sharing(after, f"upgraded-{n}", code)
                        upgraded.append_elsewhere()
                        first_upgraded.setdefault(label, []).append(upgraded.session_start())
                    for _ in range(args.reps):
                        samples.setdefault("python -c pass, upgrade rows", []).append(
                            timed([sys.executable, "-c", "pass"], env)
                        )
                        after.append_elsewhere()
                        samples.setdefault(f"{label}: after, again", []).append(after.session_start())
                        upgraded.append_elsewhere()
                        samples.setdefault(f"{label}: upgraded hook session-start", []).append(upgraded.session_start())
        bare = median(samples["python -c pass"])[0]
        noop = median(samples["no-op SDK server, first call"])[0]
        print("\n## one interleaved run")
        later_samples = samples.get("python -c pass, upgrade rows", samples["python -c pass"])
        later, later_cpu = median(later_samples)[0], median(later_samples)[2]
        bare_cpu = median(samples["python -c pass"])[2]
        for name, found in samples.items():
            wall, rss, cpu = median(found)
            upgrade_row = "again" in name or "upgrade" in name
            base = noop if "server" in name else later if upgrade_row else bare
            cpu_base = later_cpu if upgrade_row else bare_cpu
            cpu_text = f", CPU {cpu * 1000:.0f} ms ({cpu / cpu_base:.1f}x)" if cpu and cpu_base else ""
            print(f"{name}: {wall * 1000:.0f} ms ({wall / base:.1f}x){cpu_text}, peak {rss:.0f} MB")
        for label, found in first_upgraded.items():
            wall, rss, cpu = median(found)
            before = median(samples[f"{label}: after, again"])
            print(
                f"{label}: the first hook session-start after an upgrade that changes no format (median of "
                f"{len(found)} upgrades): {wall * 1000:.0f} ms ({wall / later:.1f}x python -c pass; "
                f"{wall / before[0]:.2f}x the code before it; CPU {cpu / before[2]:.2f}x), peak {rss:.0f} MB"
            )
        print(f"(characters printed by the last call of each: {OUTPUT})")
        if not args.no_more:
            noop_mb = median(samples["no-op SDK server, first call"])[1]
            for label, trees in stores:
                print(f"\n## {label}: many servers, each tool's first call, building, prompts (benchlib.issue_rows)")
                issue_rows.more_rows(trees, env, floor_command, errlog, noop_mb)
    finally:
        if args.keep:
            print(f"(kept: {work})")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
