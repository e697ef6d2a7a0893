#!/usr/bin/env python3
"""Start-up cost, as every hook call and every agent start pays it.

Prints medians of interleaved runs (so a loaded machine slows every contender alike) and
the ratios the targets are stated in:
- `contextflow --version` and each Claude Code hook, against a bare `python -c pass`
  (target: within 5x); the everyday commands `sessions`, `whereami`, `search` and `doctor` too;
- the time until `contextflow serve` answers `initialize`, against a no-op server on the
  same SDK (target: no slower, ratio about 1.0);
- the CPU the server itself spends (user + system, all its threads, from /proc) until it answers
  `initialize` and its first `tools/call` (`list_sessions`, `read_shared_context`), against the
  no-op server's until its first call (target: within 1.2x); the child processes are run with their
  `.pyc` files written, as an installed package has them (PYTHONDONTWRITEBYTECODE is dropped);
- what the default `tools/list` costs a client every turn, in estimated tokens (its JSON, chars/4;
  target: the whole listing within 2,600), as scripts/tools_list_tokens.py counts it.

- the Stop hook with capture, in CPU time against `python -c pass`, on transcripts of 1, 5
  and 20 MB: the first call (reads the transcript, at most 8 MB a call) and the next turn once the backlog is read
  (new bytes only);
- store bytes per captured turn (one Stop call a turn, each turn with its own reply), and the
  session start's CPU time on that store (its handoff, decisions and file checks) against
  `python -c pass`;
- the session start with the sweep (`capture/sweep.py`), in CPU time against `python -c pass`
  (target: within 7x), on a store of `--events` notes, with this repository's Claude Code
  transcripts and other folders' Codex rollouts in the clients' folders: its first sweep (the newest
  transcripts read), the steady state (all read: a stat each) and the start right after a killed
  session (one turn no hook read).

    python scripts/bench_startup.py [--runs 15] [--events 2000] [--no-capture] [--no-sweep]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib.procs import ColdStart, cold_start
from benchlib.report import heading, table

PYTHON = sys.executable
_SCRIPT = Path(PYTHON).with_name("contextflow")  # the console script clients run, as `install` writes it
CONTEXTFLOW = [str(_SCRIPT)] if _SCRIPT.exists() else [PYTHON, "-m", "contextflow"]
FLOOR = [PYTHON, str(Path(__file__).resolve().parent / "benchlib" / "floor_server.py")]


def timed(command: list[str], env: dict[str, str], stdin: bytes = b"", ok: tuple[int, ...] = (0,)) -> float:
    began = time.perf_counter()
    done = subprocess.run(command, input=stdin, env=env, capture_output=True, timeout=120, check=False)
    elapsed = time.perf_counter() - began
    if done.returncode not in ok:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return elapsed


def first_answers(command: list[str], env: dict[str, str], errlog: Path, tool: str) -> ColdStart:
    """A fresh server's handshake and first `tool` call: wall time and its own CPU to each answer."""
    return cold_start(command, env, tool, {}, errlog, timeout=120)


SERVER_CALLS = {  # a cold server's first answers, by name: (command, first tool)
    "no-op SDK server": (FLOOR, "noop"),
    "contextflow serve, list_sessions": ([*CONTEXTFLOW, "serve"], "list_sessions"),
    "contextflow serve, read_shared_context": ([*CONTEXTFLOW, "serve"], "read_shared_context"),
}


def server_cpu_rows(samples: dict[str, list[ColdStart]]) -> list[tuple[str, ...]]:
    """The servers' own CPU to their first answers, against the no-op server's to its first call."""
    floor = statistics.median(run.cpu_first_call for run in samples["no-op SDK server"])
    rows: list[tuple[str, ...]] = []
    for name, runs in samples.items():
        for label, cpu in (
            ("initialize", [r.cpu_initialized for r in runs]),
            ("first call", [r.cpu_first_call for r in runs]),
        ):
            value = statistics.median(cpu)
            rows.append((f"{name}: {label}", f"{value * 1000:.0f} ms", f"{value / floor:.2f}x", "<= 1.2x"))
    return rows


def tools_list_tokens() -> tuple[int, int]:
    """The default tools/list's estimated tokens: the whole listing, and name+description+inputSchema."""
    import asyncio

    from tools_list_tokens import listed

    from contextflow.core.text import estimate_tokens

    tools = asyncio.run(listed(None))
    model = [{k: tool[k] for k in ("name", "description", "inputSchema") if k in tool} for tool in tools]
    whole = estimate_tokens(json.dumps({"tools": tools}, separators=(",", ":")))
    return whole, estimate_tokens(json.dumps(model, separators=(",", ":")))


def seed_store(env: dict[str, str], events: int) -> None:
    """A store with `events` notes in a few sessions, written through the CLI's own core (in batches of
    up to 10,000: one append each takes about 2 ms, so a 1M-event store would take over half an hour)."""
    code = (
        "from contextflow.app import App\n"
        "app = App.open()\n"
        f"for start in range(0, {events}, 10000):\n"
        "    app.store.append_many([('note', {'project': 'shared', 'agent': 'bench',"
        " 'text': f'note {n} about the parser',"
        f" 'session_id': f's{{n % 7}}'}}) for n in range(start, min(start + 10000, {events}))])\n"
        "app.close()\n"
    )
    subprocess.run([PYTHON, "-c", code], env=env, check=True, timeout=1800)


FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "capture" / "claude-transcript.jsonl"
SAMPLE_CWD = "/work/research/capture/runs/claude-full/work"


def cpu_time(command: list[str], env: dict[str, str], stdin: bytes = b"") -> float:
    """User + system CPU seconds of one child process."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    timed(command, env, stdin)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


FINAL = "Next step: add a CLI entry point."


def one_turn(n: int, cwd: str, final: str = FINAL) -> bytes:
    """The real Claude Code sample turn, its prompt made unique (so no two turns are identical)."""
    text = FIXTURE.read_text().replace(SAMPLE_CWD, cwd).replace(FINAL, final)
    return text.replace("Create calc.py with an add function", f"Create calc{n}.py with an add function").encode()


def transcript_of(path: Path, megabytes: float, cwd: str) -> int:
    turns, size = 0, 0
    with open(path, "wb") as handle:
        while size < megabytes * (1 << 20):
            size += handle.write(one_turn(turns, cwd))
            turns += 1
    return turns


def capture_costs(env: dict[str, str], root: Path, runs: int) -> None:
    """The Stop hook with capture: first call on a transcript of each size, then one new turn."""
    work = root / "work"
    (work / ".git").mkdir(parents=True, exist_ok=True)
    floor: list[float] = []  # `python -c pass`, measured beside each call (a loaded machine drifts)
    rows: list[tuple[str, float]] = []
    for megabytes in (1, 5, 20):
        first, again = [], []
        for run in range(max(1, runs // 3)):
            floor.append(cpu_time([PYTHON, "-c", "pass"], env))
            transcript = root / f"t-{megabytes}-{run}.jsonl"
            turns = transcript_of(transcript, megabytes, str(work))
            payload = json.dumps(
                {
                    "session_id": f"bench-{megabytes}-{run}",
                    "cwd": str(work),
                    "transcript_path": str(transcript),
                    "hook_event_name": "Stop",
                    "last_assistant_message": "done",
                }
            ).encode()
            first.append(cpu_time([*CONTEXTFLOW, "hook", "stop"], env, payload))
            for _ in range(megabytes // 8):  # a call reads at most 8 MB (MAX_READ): the rest of the backlog first
                cpu_time([*CONTEXTFLOW, "hook", "stop"], env, payload)
            with open(transcript, "ab") as handle:
                handle.write(one_turn(turns + 1, str(work)))
            again.append(cpu_time([*CONTEXTFLOW, "hook", "stop"], env, payload))
        for label, values in (("first call", first), ("next turn", again)):
            rows.append((f"{megabytes} MB transcript, {label}", statistics.median(values)))
    bare = statistics.median(floor)
    heading(f"Stop hook with capture (CPU time; python -c pass = {bare * 1000:.0f} ms)")
    shown = [(label, f"{value * 1000:.0f} ms", f"{value / bare:.1f}x") for label, value in rows]
    table(("case", "CPU", "ratio to python -c pass (target: next turn <= 3x)"), shown)


def store_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def growth_per_turn(env: dict[str, str], root: Path, turns: int, runs: int) -> None:
    """Store bytes per captured turn (a Stop call per turn, each reply its own), and the session
    start's CPU time on the store those turns left, against `python -c pass`."""
    work = root / "grow"
    (work / ".git").mkdir(parents=True, exist_ok=True)
    (work / "calc.py").write_text("def add(a, b):\n    return int(a) + int(b)\n")
    store = Path(env["CONTEXTFLOW_STORE"])
    before = store_bytes(store)
    transcript = root / "grow.jsonl"
    for n in range(turns):
        final = f"Turn {n}: calc.add coerces with int(). Next step: add CLI entry point {n}."
        with open(transcript, "ab") as handle:
            handle.write(one_turn(n, str(work), final))
        payload = {"session_id": "grow", "cwd": str(work), "transcript_path": str(transcript)}
        payload |= {"hook_event_name": "Stop", "last_assistant_message": final}
        timed([*CONTEXTFLOW, "hook", "stop"], env, json.dumps(payload).encode())
    grown = store_bytes(store) - before
    kinds: dict[str, int] = {}
    from contextflow.core.log import read_whole

    for log in store.glob("events.*.jsonl"):
        for _, line in read_whole(log)[1]:  # the log reader's lines (batch markers left out)
            kind = json.loads(line).get("kind", "?")
            kinds[kind] = kinds.get(kind, 0) + 1
    start = json.dumps({"session_id": "next", "cwd": str(work), "hook_event_name": "SessionStart"}).encode()
    bare, started = [], []
    for _ in range(runs):
        bare.append(cpu_time([PYTHON, "-c", "pass"], env))
        started.append(cpu_time([*CONTEXTFLOW, "hook", "session-start"], env, start))
    ratio = statistics.median(started) / statistics.median(bare)
    rows = [
        ("store bytes per turn", f"{grown / turns:,.0f}"),
        ("events written", ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items()) if kind != "note")),
        ("session start CPU", f"{statistics.median(started) * 1000:.0f} ms, {ratio:.1f}x python -c pass"),
    ]
    checks = file_check_cost(env, work, runs)
    if checks is not None:
        rows.append(("of which the file checks", checks))
    heading(f"Store growth over {turns} captured turns, and the session start after them")
    table(("measure", "value"), rows)


CODEX_FIXTURE = FIXTURE.with_name("codex-rollout.jsonl")
CODEX_CWD = "/work/research/capture/runs/codex-full/work"


def sweep_costs(env: dict[str, str], root: Path, runs: int, events: int) -> None:
    """The session start with the sweep: its first sweep, the steady state and the start after a killed
    session, in CPU time against `python -c pass`."""
    work = root / "swept"
    (work / ".git").mkdir(parents=True, exist_ok=True)
    home = Path(env["HOME"])
    folder = home / ".claude" / "projects" / "".join(c if c.isalnum() else "-" for c in str(work))
    folder.mkdir(parents=True, exist_ok=True)
    long_ago = time.time() - 3600
    transcripts = []
    for n in range(8):  # more than the sweep looks at (the newest few)
        path = folder / f"0000000{n}-bench-session.jsonl"
        transcript_of(path, 0.5, str(work))
        os.utime(path, (long_ago + n, long_ago + n))
        transcripts.append(path)
    day = home / ".codex" / "sessions" / "2026" / "12" / "01"
    day.mkdir(parents=True, exist_ok=True)
    for n in range(30):  # other repositories' rollouts: their first lines are read once
        rollout = day / f"rollout-2026-12-01T10-00-{n:02d}-other.jsonl"
        rollout.write_text(CODEX_FIXTURE.read_text().replace(CODEX_CWD, f"/elsewhere/{n}"))
    start = json.dumps({"session_id": "next", "cwd": str(work), "hook_event_name": "SessionStart"}).encode()
    command = [*CONTEXTFLOW, "hook", "session-start"]
    elsewhere = {**env, "HOME": str(root / "no-clients")}  # the same store: what the sweep itself adds
    floor: list[float] = []  # `python -c pass`, measured beside each start (a loaded machine drifts)
    first = cpu_time(command, env, start)
    steady, alone, killed = [], [], []
    for _ in range(runs):
        floor.append(cpu_time([PYTHON, "-c", "pass"], env))
        steady.append(cpu_time(command, env, start))
        alone.append(cpu_time(command, elsewhere, start))
    for n in range(runs):
        with open(transcripts[-1], "ab") as handle:  # a turn no Stop hook read: the client was killed
            handle.write(one_turn(1_000 + n, str(work), f"Killed turn {n}. Next step: rerun it."))
        os.utime(transcripts[-1], (long_ago + 100, long_ago + 100))
        floor.append(cpu_time([PYTHON, "-c", "pass"], env))
        killed.append(cpu_time(command, env, start))
    bare = statistics.median(floor)
    rows = [
        (label, f"{value * 1000:.0f} ms", f"{value / bare:.1f}x", "<= 7x" if target else "")
        for label, value, target in (
            ("first sweep (the 4 newest transcripts, 2 MB)", first, False),
            ("nothing new (a stat per transcript)", statistics.median(steady), True),
            ("after a killed session (one turn)", statistics.median(killed), True),
            ("the same start with no client folder to sweep", statistics.median(alone), False),
        )
    ]
    heading(f"Session start with the sweep, store of {events} events (CPU; python -c pass = {bare * 1000:.0f} ms)")
    table(("case", "CPU", "ratio to python -c pass", "target"), rows)


def file_check_cost(env: dict[str, str], work: Path, runs: int) -> str | None:
    """What checking the cited files against the code adds to a session start, in process: the
    session start with the repository (files hashed, git asked only when HEAD moved) against the
    same without it."""
    code = (
        "import sys, time, statistics\n"
        "from pathlib import Path\n"
        "from contextflow.app import App\n"
        "from contextflow.adapters import session_start as start\n"
        "from contextflow.adapters.hooks import hook_dir\n"
        "import os\n"
        "app = App.open(os.environ, cwd=sys.argv[1])\n"
        "hooks = hook_dir(app.store.folder, os.environ)\n"
        "def cost(cwd):\n"
        "    began = time.process_time()\n"
        "    start.session_start(app, hooks, 2250, cwd=cwd)\n"
        "    return time.process_time() - began\n"
        "cost(sys.argv[1])\n"
        "with_root = statistics.median(cost(sys.argv[1]) for _ in range(int(sys.argv[2])))\n"
        "without = statistics.median(cost(None) for _ in range(int(sys.argv[2])))\n"
        "w, wo = with_root * 1000, without * 1000\n"
        "print(f'{w - wo:.1f} ms ({w:.1f} ms with, {wo:.1f} ms without)')\n"
    )
    done = subprocess.run(
        [PYTHON, "-c", code, str(work), str(max(5, runs))], env=env, capture_output=True, text=True, timeout=300
    )
    return done.stdout.strip() if done.returncode == 0 else None


def as_installed() -> dict[str, str]:
    """This environment with `.pyc` files written, as an installed package has them."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="runs of each command (default 15)")
    parser.add_argument("--events", type=int, default=2000, help="notes in the store (default 2000)")
    parser.add_argument("--no-capture", dest="capture", action="store_false", help="skip the capture section")
    parser.add_argument("--turns", type=int, default=40, help="captured turns for the growth figure (default 40)")
    parser.add_argument("--no-sweep", dest="sweep", action="store_false", help="skip the sweep section")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="cf-startup-") as tmp:
        root = Path(tmp)
        env = {
            **as_installed(),
            "HOME": str(root / "home"),
            "CONTEXTFLOW_STORE": str(root / "store"),
            "CONTEXTFLOW_STATE": str(root / "state"),
            "CONTEXTFLOW_WRITER": "bench",
        }
        seed_store(env, args.events)
        transcript = root / "transcript.jsonl"
        transcript.write_text("")
        payload = json.dumps(
            {
                "session_id": "s1",
                "cwd": str(root),
                "transcript_path": str(transcript),
                "prompt": "fix the parser",
                "last_assistant_message": "done",
            }
        ).encode()
        errlog = root / "server.err"
        contenders: dict[str, Callable[[], float]] = {
            "python -c pass": lambda: timed([PYTHON, "-c", "pass"], env),
            "contextflow --version": lambda: timed([*CONTEXTFLOW, "--version"], env),
            "hook session-start": lambda: timed([*CONTEXTFLOW, "hook", "session-start"], env, payload),
            "hook prompt-submit": lambda: timed([*CONTEXTFLOW, "hook", "prompt-submit"], env, payload),
            "hook stop": lambda: timed([*CONTEXTFLOW, "hook", "stop"], env, payload),
            "sessions": lambda: timed([*CONTEXTFLOW, "sessions"], env),
            "whereami": lambda: timed([*CONTEXTFLOW, "whereami"], env),
            "search parser": lambda: timed([*CONTEXTFLOW, "search", "parser"], env),
            "doctor": lambda: timed([*CONTEXTFLOW, "doctor"], env, ok=(0, 1)),  # 1: problems found, still a run
        }
        samples: dict[str, list[float]] = {name: [] for name in contenders}
        served: dict[str, list[ColdStart]] = {name: [] for name in SERVER_CALLS}
        for warm_up in contenders.values():  # once each first: the page cache, .pyc files
            warm_up()
        for command, tool in SERVER_CALLS.values():
            first_answers(command, env, errlog, tool)
        for _ in range(args.runs):
            for name, run in contenders.items():
                samples[name].append(run())
            for name, (command, tool) in SERVER_CALLS.items():
                served[name].append(first_answers(command, env, errlog, tool))
        samples["no-op SDK server: initialize"] = [run.to_initialized for run in served["no-op SDK server"]]
        samples["contextflow serve: initialize"] = [
            run.to_initialized for run in served["contextflow serve, list_sessions"]
        ]

    median = {name: statistics.median(values) for name, values in samples.items()}
    bare = median["python -c pass"]
    floor = median["no-op SDK server: initialize"]
    heading(f"Start-up, median of {args.runs} interleaved runs, store of {args.events} events")
    rows = []
    for name, value in median.items():
        if name.endswith("initialize"):
            rows.append((name, f"{value * 1000:.0f} ms", f"{value / floor:.2f}x the no-op server", "ratio <= 1.0"))
        else:
            rows.append(
                (
                    name,
                    f"{value * 1000:.0f} ms",
                    f"{value / bare:.1f}x python -c pass",
                    "" if name.startswith("python") else "<= 5x",
                )
            )
    table(("command", "median", "ratio", "target"), rows)
    heading("Servers' own CPU (user + system, /proc) to their first answers, against the no-op server's first call")
    table(("server: answer", "CPU", "ratio", "target"), server_cpu_rows(served))
    whole, seen = tools_list_tokens()
    heading("The default tools/list, estimated tokens (chars/4; scripts/tools_list_tokens.py)")
    table(
        ("listing", "tokens", "target"),
        [("whole tools/list JSON", f"{whole:,}", "<= 2,600"), ("name+description+inputSchema", f"{seen:,}", "")],
    )
    if args.capture:
        with tempfile.TemporaryDirectory(prefix="cf-capture-") as tmp:
            root = Path(tmp)
            env = {
                **as_installed(),
                "HOME": str(root / "home"),
                "CONTEXTFLOW_STORE": str(root / "store"),
                "CONTEXTFLOW_STATE": str(root / "state"),
                "CONTEXTFLOW_WRITER": "bench",
            }
            seed_store(env, args.events)
            growth_per_turn(env, root, args.turns, args.runs)
            capture_costs(env, root, args.runs)
    if args.sweep:
        with tempfile.TemporaryDirectory(prefix="cf-sweep-") as tmp:
            root = Path(tmp)
            env = {
                **as_installed(),
                "HOME": str(root / "home"),
                "CONTEXTFLOW_STORE": str(root / "store"),
                "CONTEXTFLOW_STATE": str(root / "state"),
                "CONTEXTFLOW_WRITER": "bench",
            }
            seed_store(env, args.events)
            sweep_costs(env, root, args.runs, args.events)


if __name__ == "__main__":
    main()
