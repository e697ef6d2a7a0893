#!/usr/bin/env python3
"""Load on the HTTP bridge: concurrent MCP clients over streamable HTTP, mixed calls.

Starts `contextflow serve --http` on 127.0.0.1 (a free port, its own temporary store and
tokens file), then runs N clients at once, each with its own MCP session and bearer token
(half scoped to project `alpha`, half to every project), making a mix of writes (notes,
handoffs) and reads (read_shared_context, list_sessions, get_latest_handoff,
resume_session). It prints latency figures per tool, throughput, and checks:

- zero errors: no exception and no tool error on any call;
- zero lost writes: every id a write returned is in the store afterwards, exactly once.

    scripts/bench_http.py                      16 clients, 10,000 calls
    scripts/bench_http.py --clients 4 --calls 400

Exits non-zero when any call failed or any acknowledged write is missing. Traffic goes to
127.0.0.1 only; the server is always stopped.
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
import random  # noqa: E402
import select  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from typing import Any  # noqa: E402

import anyio  # noqa: E402
import httpx2  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

MIX = [  # (tool, weight)
    ("append_shared_note", 40),
    ("write_shared_handoff", 10),
    ("read_shared_context", 25),
    ("list_sessions", 10),
    ("get_latest_handoff", 10),
    ("resume_session", 5),
]
WRITES = {"append_shared_note", "write_shared_handoff"}
START_TIMEOUT = 30.0


def arguments(tool: str, client: int, n: int, project: str | None) -> dict[str, Any]:
    common: dict[str, Any] = {"session_id": f"client-{client}"}
    if project:
        common["project"] = project
    if tool == "append_shared_note":
        return {**common, "agent": f"bench-{client}", "text": f"note {client}-{n}", "tags": ["bench"]}
    if tool == "write_shared_handoff":
        return {
            **common,
            "agent": f"bench-{client}",
            "summary": f"handoff {client}-{n}",
            "next_steps": ["keep going"],
            "files": ["scripts/bench_http.py"],
        }
    if tool == "list_sessions":
        return {k: v for k, v in common.items() if k == "project"} | {"limit": 20}
    if tool == "read_shared_context":
        return {**common, "limit": 5}
    return common


class Results:
    def __init__(self) -> None:
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.errors: list[str] = []
        self.written: list[str] = []


async def run_client(url: str, token: str, client: int, calls: int, project: str | None, results: Results) -> None:
    rng = random.Random(client)
    tools, weights = zip(*MIX, strict=True)
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as session,
    ):
        for n in range(calls):
            # a note first: a read naming a session that has nothing in it yet is an error
            tool = "append_shared_note" if n == 0 else rng.choices(tools, weights)[0]
            started = time.perf_counter()
            try:
                result = await session.call_tool(tool, arguments(tool, client, n, project))
            except Exception as exc:  # counted, reported, never hidden
                results.errors.append(f"client {client} {tool}: {type(exc).__name__}: {exc}")
                continue
            results.latency[tool].append(time.perf_counter() - started)
            if result.is_error:
                text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
                results.errors.append(f"client {client} {tool}: {text[:200]}")
            elif tool in WRITES:
                results.written.append(str((result.structured_content or {})["id"]))


def start_server(workdir: Path, tokens_file: Path) -> tuple[subprocess.Popen[str], str]:
    env = {
        **os.environ,
        "HOME": str(workdir / "home"),
        "CONTEXTFLOW_STORE": str(workdir / "store"),
        "CONTEXTFLOW_STATE": str(workdir / "state"),
        "CONTEXTFLOW_WRITER": "bench-http",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "contextflow", "serve", "--http", "--port", "0", "--tokens", str(tokens_file)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stderr is not None
    ready, _, _ = select.select([process.stderr], [], [], START_TIMEOUT)
    banner = process.stderr.readline() if ready else ""
    if " at http://127.0.0.1:" not in banner:
        process.kill()
        raise SystemExit(f"the server did not start: {banner or 'no output'}")
    return process, banner.split(" at ")[1].split()[0]


def stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if process.stderr is not None:
        process.stderr.close()


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")


def report(results: Results, wall: float, clients: int) -> None:
    every = [value for values in results.latency.values() for value in values]
    print(
        f"== HTTP bridge load: {clients} clients, {len(every)} calls answered in {wall:.1f}s "
        f"({len(every) / wall:.0f} calls/s)"
    )
    print(f"{'tool':24s} {'calls':>6s} {'p50 ms':>8s} {'p90 ms':>8s} {'p99 ms':>8s} {'max ms':>8s}")
    for tool, values in [*sorted(results.latency.items()), ("all", every)]:
        figures = [percentile(values, 0.5), percentile(values, 0.9), percentile(values, 0.99), max(values)]
        print(f"{tool:24s} {len(values):6d} " + " ".join(f"{value * 1000:8.2f}" for value in figures))
    if every:
        print(f"mean {statistics.fmean(every) * 1000:.2f} ms per call (client-side, including HTTP and JSON)")


def main() -> int:
    parser = argparse.ArgumentParser(description="Load test of contextflow serve --http.")
    parser.add_argument("--clients", type=int, default=16, help="concurrent MCP clients (default 16)")
    parser.add_argument("--calls", type=int, default=10_000, help="calls in total (default 10000)")
    parser.add_argument("--workdir", type=Path, help="keep the store here instead of a temporary folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="contextflow-bench-http-") as temp:
        workdir = args.workdir or Path(temp)
        workdir.mkdir(parents=True, exist_ok=True)
        tokens = {"scoped": "bench-scoped-" + os.urandom(16).hex(), "all": "bench-all-" + os.urandom(16).hex()}
        tokens_file = workdir / "tokens.json"
        tokens_file.write_text(
            json.dumps(
                {
                    "tokens": [
                        {"name": "scoped", "token": tokens["scoped"], "read": ["alpha"], "write": ["alpha"]},
                        {"name": "all", "token": tokens["all"], "read": ["*"], "write": ["*"]},
                    ]
                }
            )
        )
        tokens_file.chmod(0o600)
        process, url = start_server(workdir, tokens_file)
        results = Results()
        per_client = [args.calls // args.clients + (i < args.calls % args.clients) for i in range(args.clients)]
        try:
            started = time.perf_counter()

            async def everyone() -> None:
                async with anyio.create_task_group() as group:
                    for client, calls in enumerate(per_client):
                        scoped = client % 2 == 0
                        group.start_soon(
                            run_client,
                            url,
                            tokens["scoped" if scoped else "all"],
                            client,
                            calls,
                            None if scoped else random.Random(client).choice(["alpha", "beta", "gamma"]),
                            results,
                        )

            anyio.run(everyone)
            wall = time.perf_counter() - started
        finally:
            stop(process)
        report(results, wall, args.clients)
        lost = lost_writes(workdir, results.written)
        print(
            f"writes acknowledged: {len(results.written)}; missing from the store: {len(lost)}; "
            f"errors: {len(results.errors)}"
        )
        for problem in results.errors[:10]:
            print(f"  error: {problem}")
        for event_id in lost[:10]:
            print(f"  lost: {event_id}")
        ok = not results.errors and not lost and len(results.written) > 0
        print("result: PASS (zero errors, zero lost writes)" if ok else "result: FAIL")
        return 0 if ok else 1


def lost_writes(workdir: Path, written: list[str]) -> list[str]:
    """Acknowledged ids not in the store exactly once (read straight from the logs), with how often they are."""
    counts: dict[str, int] = defaultdict(int)
    for log in (workdir / "store").glob("events.*.jsonl"):
        for line in log.read_bytes().splitlines():
            counts[json.loads(line)["id"]] += 1
    return [f"{event_id} (found {counts.get(event_id, 0)}x)" for event_id in written if counts.get(event_id) != 1]


if __name__ == "__main__":
    sys.exit(main())
