#!/usr/bin/env python3
"""Benchmark `contextflow import`: items per second for each format at 10,000 items.

For every format, a source of N items (nodes plus the links between them; for past sessions,
turns plus each session's automatic handoff) is generated in a
temporary folder and imported into a fresh store in this process (`run_import`, what the command
runs), then imported again (nothing new: the cost of checking). Prints wall and CPU seconds and
items per second; figures only, no target is asserted (the goal is 10,000 items a second).

    scripts/bench_import.py                  10,000 items per format
    scripts/bench_import.py --items 2000     a smaller run
    scripts/bench_import.py --profile beads  a cProfile breakdown of one format's first import
    scripts/bench_import.py --memory         peak RSS importing a 1M-line memory.json, a 1e6-observation
                                             claude-mem export and a 1 GB transcript (--lines,
                                             --observations, --transcript-mb to scale; target under 300 MB)
    scripts/bench_import.py --first-write    wall, CPU and peak RSS of the first writes (`note`) after importing
                                             100,000 entities and 100,000 relations (--entities to scale)

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
sys.path.insert(0, str(ROOT))

import argparse  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

LINK_SHARE = 0.3  # of the items, links; the rest nodes
WORDS = [
    "payments",
    "cart",
    "ledger",
    "retry",
    "gateway",
    "cents",
    "invoice",
    "refund",
    "webhook",
    "latency",
    "queue",
    "schema",
]


def _text(n: int) -> str:
    return f"item {n}: the {WORDS[n % 12]} service talks to {WORDS[(n * 7) % 12]} and {WORDS[(n * 5) % 12]}"


def server_memory(folder: Path, nodes: int, links: int) -> Path:
    path = folder / "memory.json"
    lines = [
        json.dumps({"type": "entity", "name": f"e{n}", "entityType": "service", "observations": [_text(n)]})
        for n in range(nodes)
    ]
    lines += [
        json.dumps(
            {"type": "relation", "from": f"e{n % nodes}", "to": f"e{(n * 31 + 1) % nodes}", "relationType": "calls"}
        )
        for n in range(links)
    ]
    path.write_text("\n".join(lines))
    return path


def beads(folder: Path, nodes: int, links: int) -> Path:
    path = folder / "issues.jsonl"
    with path.open("w") as out:
        for n in range(nodes):
            deps = [
                {"issue_id": f"bd-{n}", "depends_on_id": f"bd-{(n * 31 + k + 1) % nodes}", "type": "blocks"}
                for k in range(links // nodes + (1 if n < links % nodes else 0))
            ]
            issue = {
                "id": f"bd-{n}",
                "title": _text(n)[:40],
                "description": _text(n),
                "status": "open",
                "priority": n % 5,
                "issue_type": "task",
                "labels": [WORDS[n % 12]],
                "dependencies": deps,
            }
            out.write(json.dumps(issue) + "\n")
    return path


def basic_memory(folder: Path, nodes: int, links: int) -> Path:
    notes = folder / "notes"
    notes.mkdir()
    for n in range(nodes):
        count = links // nodes + (1 if n < links % nodes else 0)
        relations = "\n".join(f"- relates_to [[Note {(n * 31 + k + 1) % nodes}]]" for k in range(count))
        front = f"---\ntitle: Note {n}\ntype: note\ntags: [{WORDS[n % 12]}]\npermalink: note-{n}\n---\n"
        (notes / f"note-{n}.md").write_text(f"{front}\n# Note {n}\n\n- [fact] {_text(n)}\n{relations}\n")
    return notes


def claude_mem(folder: Path, nodes: int, links: int) -> Path:
    """Observations in sessions of ten; `links` of them are in sessions with a summary, which derives
    from each (the links), the others in sessions without one."""
    sessions = max(1, links // 10)
    observations = [
        {
            "memory_session_id": f"s{n // 10}" if n < links else f"open-{n // 10}",
            "project": "shop",
            "type": "discovery",
            "title": _text(n)[:40],
            "narrative": _text(n),
            "facts": json.dumps([_text(n + 1)]),
            "concepts": json.dumps(["how-it-works"]),
            "created_at_epoch": 1_700_000_000_000 + n,
        }
        for n in range(nodes - sessions)
    ]
    summaries = [{"memory_session_id": f"s{n}", "project": "shop", "request": _text(n)} for n in range(sessions)]
    path = folder / "export.json"
    doc = {"exportedAt": "2026-01-01T00:00:00Z", "totalObservations": len(observations)}
    path.write_text(json.dumps({**doc, "observations": observations, "summaries": summaries}))
    return path


def contextflow(folder: Path, nodes: int, links: int) -> Path:
    doc = {
        "format": "contextflow-graph",
        "version": 1,
        "nodes": [
            {"id": f"n{n:06d}", "type": "fact", "content": _text(n), "tags": ["project:shop"]} for n in range(nodes)
        ],
        "edges": [
            {"from": f"n{n % nodes:06d}", "to": f"n{(n * 31 + 1) % nodes:06d}", "type": "RELATES_TO"}
            for n in range(links)
        ],
        "views": [],
    }
    path = folder / "graph.json"
    path.write_text(json.dumps(doc))
    return path


TURNS_PER_SESSION = 19  # with its automatic handoff, a session is 20 items


def _sessions(items: int) -> range:
    return range(max(1, items // (TURNS_PER_SESSION + 1)))


def claude_code(folder: Path, nodes: int, links: int) -> Path:
    """Sessions of 19 turns (a prompt, a Bash call and its result, a final answer); items: turns and handoffs."""
    root = folder / "projects" / "-work-shop"
    root.mkdir(parents=True)
    for s in _sessions(nodes + links):
        session, lines = f"0000{s:04d}-aaaa-bbbb-cccc-dddddddddddd", []
        for t in range(TURNS_PER_SESSION):
            stamp = f"2026-01-{1 + s % 28:02d}T10:{t:02d}:00.000Z"
            common = {"isSidechain": False, "sessionId": session, "cwd": "/work/shop", "timestamp": stamp}
            tool = f"toolu_{s}_{t}"
            lines += [
                {**common, "type": "user", "message": {"role": "user", "content": _text(s * 100 + t)}},
                {
                    **common,
                    "type": "assistant",
                    "message": {
                        "role": "assistant",
                        "content": [
                            {"type": "tool_use", "id": tool, "name": "Bash", "input": {"command": f"pytest -k t{t}"}}
                        ],
                    },
                },
                {
                    **common,
                    "type": "user",
                    "message": {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": tool, "content": "1 passed"}],
                    },
                },
                {
                    **common,
                    "type": "assistant",
                    "message": {
                        "role": "assistant",
                        "content": [{"type": "text", "text": f"Done: {_text(t)}. Next step: turn {t + 1}."}],
                    },
                },
            ]
        (root / f"{session}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder / "projects"


def _codex_item(session: str, turn: str, stamp: str, kind: str, **fields: object) -> dict[str, object]:
    payload = {"type": "item_completed", "thread_id": session, "turn_id": turn, "item": {"type": kind, **fields}}
    return {"timestamp": stamp, "type": "event_msg", "payload": payload}


def codex(folder: Path, nodes: int, links: int) -> Path:
    """Rollouts of 19 turns (a user message, a command, an agent message, task_complete)."""
    root = folder / "sessions" / "2026" / "01" / "01"
    root.mkdir(parents=True)
    for s in _sessions(nodes + links):
        session = f"0000{s:04d}-aaaa-7bbb-cccc-dddddddddddd"
        meta = {"id": session, "cwd": "/work/shop", "git": {"repository_url": "https://github.com/acme/shop.git"}}
        lines: list[dict[str, object]] = [
            {"timestamp": "2026-01-01T10:00:00.000Z", "type": "session_meta", "payload": meta}
        ]
        for t in range(TURNS_PER_SESSION):
            stamp = f"2026-01-01T10:{t:02d}:00.000Z"
            turn = f"turn-{s}-{t}"
            answer = f"Done: {_text(t)}. Next step: turn {t + 1}."
            command = ["/bin/bash", "-lc", f"pytest -k t{t}"]
            prompt = [{"type": "text", "text": _text(s * 100 + t)}]
            lines += [
                _codex_item(session, turn, stamp, "UserMessage", content=prompt),
                _codex_item(session, turn, stamp, "CommandExecution", command=command, exit_code=0, parsed_cmd=[]),
                _codex_item(session, turn, stamp, "AgentMessage", content=[{"type": "Text", "text": answer}]),
                {
                    "timestamp": stamp,
                    "type": "event_msg",
                    "payload": {"type": "task_complete", "turn_id": turn, "last_agent_message": answer},
                },
            ]
        (root / f"rollout-2026-01-01T10-00-00-{session}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return folder / "sessions"


MAKERS: dict[str, Callable[[Path, int, int], Path]] = {
    "contextflow": contextflow,
    "server-memory": server_memory,
    "beads": beads,
    "basic-memory": basic_memory,
    "claude-mem": claude_mem,
    "claude-code": claude_code,
    "codex": codex,
}


def _environment(folder: Path) -> None:
    for name in [n for n in os.environ if n.startswith(("CONTEXTFLOW_", "MCP_SHARED_CONTEXT_", "XDG_"))]:
        del os.environ[name]
    os.environ.update(
        HOME=str(folder / "home"),
        CONTEXTFLOW_STORE=str(folder / "store"),
        CONTEXTFLOW_STATE=str(folder / "state"),
        CONTEXTFLOW_WRITER="bench",
    )


def measure(fmt: str, items: int, profile: bool) -> None:
    from contextflow.app import App
    from contextflow.core.secrets import BATCH_MIN, scrub_items
    from contextflow.imports.run import run_import

    with tempfile.TemporaryDirectory(prefix=f"cf-import-{fmt}-") as tmp:
        folder = Path(tmp)
        _environment(folder)
        links = int(items * LINK_SHARE)
        source = MAKERS[fmt](folder, items - links, links)
        app = App.open()
        app.store.refresh()  # an empty store, scanned: the import's own cost
        scrub_items([("warm", {"text": "x"})] * BATCH_MIN)  # the secret patterns load once per process
        profiler = None
        if profile:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        wall, cpu = time.perf_counter(), time.process_time()
        report = run_import(app, str(source), fmt=fmt)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if profiler is not None:
            import pstats

            profiler.disable()
            pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
        stored = sum(report.stored.values())
        again_wall = time.perf_counter()
        again = run_import(app, str(source), fmt=fmt)
        again_wall = time.perf_counter() - again_wall
        app.close()
        assert not again.stored, f"{fmt}: a second import stored {dict(again.stored)}"
        print(
            f"{fmt:<14} {stored:>7} {wall:>8.2f} {cpu:>8.2f} {stored / wall:>10,.0f} {stored / cpu:>10,.0f}"
            f" {again_wall:>10.2f}",
            flush=True,
        )


MEMORY_TARGET_MB = 300  # peak RSS of an import, whatever the size of its input


def big_memory_json(folder: Path, lines: int) -> Path:
    """A server-memory memory.json of `lines` entities (one observation each), written a line at a time."""
    path = folder / "memory.json"
    with path.open("w") as handle:
        for n in range(lines):
            entity = {"type": "entity", "name": f"entity-{n}", "entityType": "fact", "observations": [_text(n)]}
            handle.write(json.dumps(entity) + "\n")
    return path


def big_claude_mem(folder: Path, observations: int) -> Path:
    """A claude-mem export of `observations` observations in sessions of ten, each session with a summary."""
    path = folder / "export.json"
    with path.open("w") as handle:
        head = {"exportedAt": "2026-01-01T00:00:00Z", "totalObservations": observations}
        handle.write(json.dumps(head)[:-1] + ', "observations": [')
        for n in range(observations):
            item = {
                "memory_session_id": f"s{n // 10}",
                "project": "shop",
                "type": "discovery",
                "title": _text(n)[:40],
                "narrative": _text(n),
                "facts": json.dumps([_text(n + 1)]),
                "created_at_epoch": 1_700_000_000_000 + n,
            }
            handle.write(("," if n else "") + json.dumps(item))
        handle.write('], "summaries": [')
        for n in range(observations // 10):
            handle.write(("," if n else "") + json.dumps({"memory_session_id": f"s{n}", "request": _text(n)}))
        handle.write("]}")
    return path


def big_transcript(folder: Path, size: int) -> Path:
    """One Claude Code transcript of about `size` bytes: turns whose Bash results are large (64 KB each)."""
    path = folder / "projects" / "-work-shop" / "00000001-aaaa-bbbb-cccc-dddddddddddd.jsonl"
    path.parent.mkdir(parents=True)
    output = ("PASSED tests/test_cart.py::test_total " * 1700)[:65536]
    common = {"isSidechain": False, "sessionId": path.stem, "cwd": "/work/shop"}
    written, turn = 0, 0
    with path.open("w") as handle:
        while written < size:
            stamp = f"2026-01-01T10:{turn // 60 % 60:02d}:{turn % 60:02d}.000Z"
            tool = f"toolu_{turn}"
            lines = [
                {**common, "timestamp": stamp, "type": "user", "message": {"role": "user", "content": _text(turn)}},
                {
                    **common,
                    "timestamp": stamp,
                    "type": "assistant",
                    "message": {
                        "role": "assistant",
                        "content": [
                            {"type": "tool_use", "id": tool, "name": "Bash", "input": {"command": "pytest -q"}}
                        ],
                    },
                },
                {
                    **common,
                    "timestamp": stamp,
                    "type": "user",
                    "message": {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": tool, "content": output}],
                    },
                },
            ]
            text = "".join(json.dumps(line) + "\n" for line in lines)
            handle.write(text)
            written += len(text)
            turn += 1
    return path


def peak_rss(source: Path, folder: Path) -> tuple[float, float, float, str]:
    """(peak RSS in MB, wall and CPU seconds, the command's first line) of `contextflow import SOURCE` in a
    fresh store (CPU seconds: user and system, what other load on the machine changes least)."""
    return measured(["import", str(source)], folder)


def measured(words: list[str], folder: Path) -> tuple[float, float, float, str]:
    """(peak RSS in MB, wall and CPU seconds, the command's first line) of `contextflow WORDS` on the store
    in `folder` (made by the first call)."""
    import subprocess

    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("CONTEXTFLOW_", "XDG_"))},
        "HOME": str(folder / "home"),
        "CONTEXTFLOW_STORE": str(folder / "store"),
        "CONTEXTFLOW_STATE": str(folder / "state"),
        "CONTEXTFLOW_WRITER": "bench",
    }
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "contextflow", *words], env=env, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    out = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    last = out.strip().splitlines()[0] if out.strip() else f"exit {process.returncode}"
    return usage.ru_maxrss / 1024, wall, usage.ru_utime + usage.ru_stime, last


def measure_memory(lines: int, observations: int, transcript_bytes: int) -> None:
    """Peak RSS of importing a big memory.json, claude-mem export and transcript, each into a fresh store."""
    print(f"== import memory: peak RSS (target under {MEMORY_TARGET_MB} MB whatever the input size)")
    print(f"{'source':<34} {'input MB':>9} {'peak RSS MB':>12} {'wall s':>8} {'cpu s':>8}  result")
    for name, make in (
        (f"memory.json, {lines:,} lines", lambda f: big_memory_json(f, lines)),
        (f"claude-mem, {observations:,} observations", lambda f: big_claude_mem(f, observations)),
        (f"Claude transcript, {transcript_bytes / 1e9:.1f} GB", lambda f: big_transcript(f, transcript_bytes)),
    ):
        with tempfile.TemporaryDirectory(prefix="cf-import-memory-") as tmp:
            folder = Path(tmp)
            source = make(folder)
            size = source.stat().st_size / 1e6
            peak, wall, cpu, last = peak_rss(source, folder)
            verdict = "within target" if peak < MEMORY_TARGET_MB else "OVER TARGET"
            print(f"{name:<34} {size:>9,.0f} {peak:>12,.0f} {wall:>8.1f} {cpu:>8.1f}  {verdict}; {last}", flush=True)


def graph_memory_json(folder: Path, entities: int) -> Path:
    """A server-memory memory.json of `entities` entities and as many relations (two graph events each)."""
    path = folder / "memory.json"
    with path.open("w") as handle:
        for n in range(entities):
            entity = {"type": "entity", "name": f"entity-{n}", "entityType": "component", "observations": [_text(n)]}
            handle.write(json.dumps(entity) + "\n")
        for n in range(entities):
            relation = {"type": "relation", "from": f"entity-{n}", "to": f"entity-{(n * 7919 + 1) % entities}"}
            handle.write(json.dumps({**relation, "relationType": "depends_on"}) + "\n")
    return path


def measure_first_write(entities: int) -> None:
    """The writes after a large import into this machine's log: each must touch only the log's end, not
    read (or fold) what was imported (`batches.log_end`)."""
    print(f"== the first writes after importing {entities:,} entities and {entities:,} relations")
    print(f"{'command':<32} {'peak RSS MB':>12} {'wall s':>8} {'cpu s':>8}  result")
    with tempfile.TemporaryDirectory(prefix="cf-first-write-") as tmp:
        folder = Path(tmp)
        source = graph_memory_json(folder, entities)
        steps = [
            ("note (before the import)", ["note", "before the import"]),
            ("import", ["import", str(source)]),
            ("note (the first write after it)", ["note", "the first write after the import"]),
            ("note (the next)", ["note", "the next write"]),
        ]
        for name, words in steps:
            peak, wall, cpu, last = measured(words, folder)
            print(f"{name:<32} {peak:>12,.0f} {wall:>8.2f} {cpu:>8.2f}  {last[:60]}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000, help="items per format (default 10000)")
    parser.add_argument("--formats", default=",".join(MAKERS), help="comma list of formats")
    parser.add_argument("--profile", metavar="FORMAT", help="print a cProfile breakdown of this format's import")
    parser.add_argument(
        "--memory",
        action="store_true",
        help="instead: peak RSS of importing a big memory.json and a big transcript (see --lines, --transcript-mb)",
    )
    parser.add_argument("--lines", type=int, default=1_000_000, help="memory.json lines for --memory (1,000,000)")
    parser.add_argument(
        "--observations", type=int, default=1_000_000, help="claude-mem observations for --memory (1,000,000)"
    )
    parser.add_argument("--transcript-mb", type=int, default=1000, help="transcript size for --memory (1000 MB)")
    parser.add_argument(
        "--first-write", action="store_true", help="instead: the first writes after a large graph import"
    )
    parser.add_argument("--entities", type=int, default=100_000, help="entities (and relations) for --first-write")
    args = parser.parse_args()
    if args.first_write:
        measure_first_write(args.entities)
        return 0
    if args.memory:
        measure_memory(args.lines, args.observations, args.transcript_mb * 1_000_000)
        return 0
    formats = [name.strip() for name in args.formats.split(",") if name.strip()]
    unknown = [name for name in formats if name not in MAKERS]
    if unknown:
        parser.error(f"unknown format(s) {', '.join(unknown)}; known: {', '.join(MAKERS)}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"== import, {args.items} items per format ({100 - int(LINK_SHARE * 100)}% nodes), load average {load:.1f}")
    print(
        f"{'format':<14} {'stored':>7} {'wall s':>8} {'cpu s':>8} {'items/s':>10} {'items/cpu-s':>10} {'again s':>10}"
    )
    for fmt in formats:
        measure(fmt, args.items, args.profile == fmt)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
