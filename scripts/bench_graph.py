#!/usr/bin/env python3
"""Benchmark the knowledge graph: query, compose and add-observation at 100k nodes, and adding
an observation at 5k entities beside the reference `@modelcontextprotocol/server-memory`.

Prints figures only (no timed assertions). Both servers are driven over stdio by the same
MCP client; the reference is installed from npm into a cache folder on first use (skipped
with a message when npm or the registry cannot be reached).

    scripts/bench_graph.py                     100k nodes, 5k entities, 50 calls
    scripts/bench_graph.py --nodes 20000       a smaller graph
    scripts/bench_graph.py --skip-reference    only contextflow

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
import random  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from contextlib import AsyncExitStack  # noqa: E402
from typing import Any  # noqa: E402

import anyio  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

REFERENCE = "@modelcontextprotocol/server-memory"
FLOOR = ROOT / "scripts" / "benchlib" / "floor_server.py"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "contextflow-bench" / "server-memory"
TYPES = ("fact", "decision", "pattern", "observation", "hypothesis", "open-question")
TIERS = ("tier:pinned", "tier:reference", "tier:working", "tier:off-context", None, None)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.2f} ms"


def sample(fn: Callable[[], Any], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def summary(times: list[float]) -> str:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"median {ms(statistics.median(ordered))}   p95 {ms(p95)}   (n={len(ordered)})"


def words(rng: random.Random, vocabulary: list[str], count: int) -> str:
    return " ".join(rng.choice(vocabulary) for _ in range(count))


def fill(app: Any, nodes: int, seed: int = 7) -> list[str]:
    """`nodes` random nodes (types, tiers, projects, tasks) plus about nodes/2 edges."""
    from contextflow.graph.writes import edge_item, node_item

    rng = random.Random(seed)
    vocabulary = [f"w{n}" for n in range(3000)] + ["sqlite", "parser", "oauth", "payments", "budget"]
    ids: list[str] = []
    batch = 2000
    for start in range(0, nodes, batch):
        items = []
        for _ in range(min(batch, nodes - start)):
            tags = [f"project:p{rng.randrange(50)}"]
            tier = rng.choice(TIERS)
            if tier:
                tags.append(tier)
            if rng.random() < 0.2:
                tags.append(f"task:t{rng.randrange(200)}")
            items.append(
                node_item(
                    type=rng.choice(TYPES),
                    content=words(rng, vocabulary, rng.randrange(8, 60)),
                    tags=tags,
                    agent="bench",
                )
            )
        ids += [event.id for event in app.store.append_many(items)]
    for start in range(0, nodes // 2, batch):
        edges = [
            edge_item(rng.choice(ids), rng.choice(ids), rng.choice(("DEPENDS_ON", "RELATES_TO", "CHILD_OF")))
            for _ in range(min(batch, nodes // 2 - start))
        ]
        app.store.append_many(edges)
    return ids


def bench_big_graph(nodes: int, runs: int) -> None:
    from contextflow.adapters.server.app import ContextflowServer
    from contextflow.app import App
    from contextflow.graph import compose, explore, writes

    print(f"\n== graph at {nodes:,} nodes (in process) ==")
    app = App.open()
    start = time.perf_counter()
    ids = fill(app, nodes)
    print(f"build (append + fold {nodes:,} nodes, {nodes // 2:,} edges): {time.perf_counter() - start:.1f} s")
    queries = [
        "type:fact AND tag:project:p3",
        "tag:tier:reference OR tag:tier:pinned",
        "(type:decision OR type:pattern) AND created:>7d AND NOT has:summary",
        "parser AND oauth",
        '"sqlite parser"',
        "tokens:<20 AND tag:task:*",
        f"from:{ids[0]} OR to:{ids[1]}",
    ]
    for query in queries:
        found = explore.run_query(app, query, 20)[1]
        times = sample(lambda q=query: explore.run_query(app, q, 20), runs)
        print(f"query {query[:58]:<58} {found:>7,} hits  {summary(times)}")
    for query, budget in ((compose.DEFAULT_QUERY, 8_000), ("type:fact", 50_000), ("tag:project:p7", 8_000)):
        result = compose.compose(app, query, budget)
        times = sample(lambda q=query, b=budget: compose.compose(app, q, b), runs)
        label = f"compose {budget:>6,} tokens {query[:36]}"
        print(f"{label:<66} {len(result.included):>7,} in   {summary(times)}")
    target = ids[len(ids) // 2]
    adds = sample(
        lambda: writes.add_node(
            app, type="observation", content="bench observation", agent="bench", links=[writes.Link(target, "CHILD_OF")]
        ),
        runs * 4,
    )
    print(f"{'add observation (node + CHILD_OF edge, 2 locked appends)':<74} {summary(adds)}")
    adds = sample(
        lambda: writes.add_node(app, type="observation", content="bench observation", agent="bench"), runs * 4
    )
    print(f"{'add observation (node only, 1 locked append)':<74} {summary(adds)}")
    app.close()
    cold = sample(lambda: (lambda a: (explore.run_query(a, "type:fact", 5), a.close()))(App.open()), 3)
    print(f"{'new process view: open store + first query':<74} {summary(cold)}")
    app = App.open({**os.environ, "CONTEXTFLOW_TOOLS": "graph"})
    size = len(json.dumps([t.model_dump(by_alias=True, exclude_none=True) for t in ContextflowServer(app).tool_list()]))
    print(f"tools/list of the graph group: {size:,} chars, ~{(size + 3) // 4:,} tokens")
    app.close()


NODE_FLOOR = """import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
const server = new McpServer({ name: "floor", version: "1" });
server.registerTool("noop", { description: "Does nothing." },
  async () => ({ content: [{ type: "text", text: "ok" }] }));
await server.connect(new StdioServerTransport());
"""


class Timed:
    """One server's client, the call to time and its latencies."""

    def __init__(
        self, key: str, label: str, client: Client, tool: str, make_args: Callable[[int], dict[str, Any]]
    ) -> None:
        self.key, self.label, self.client, self.tool, self.make_args = key, label, client, tool, make_args
        self.times: list[float] = []

    async def call(self, n: int, record: bool) -> None:
        start = time.perf_counter()
        result = await self.client.call_tool(self.tool, self.make_args(n))
        elapsed = time.perf_counter() - start
        if result.is_error:
            raise RuntimeError(f"{self.tool} failed: {result.content[0].text[:300]}")  # type: ignore[union-attr]
        if record:
            self.times.append(elapsed)


async def interleave(timed: list[Timed], calls: int, warmup: int = 3) -> None:
    """Each round calls every server once, in a rotating order, so machine noise hits all alike."""
    for n in range(warmup + calls):
        shift = n % len(timed)
        for one in timed[shift:] + timed[:shift]:
            await one.call(n, n >= warmup)


def seed_entities(env: dict[str, str], entities: int) -> list[str]:
    from contextflow.app import App
    from contextflow.graph.writes import node_item

    app = App.open(env)
    ids: list[str] = []
    for start in range(0, entities, 1000):
        items = [
            node_item(type="fact", content=f"entity {n}: a person or project", tags=["kind:entity"], agent="bench")
            for n in range(start, min(entities, start + 1000))
        ]
        ids += [event.id for event in app.store.append_many(items)]
    app.close()
    return ids


def reference_entry() -> Path | None:
    entry = CACHE / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
    if entry.exists():
        return entry
    if not shutil.which("npm"):
        print(f"skipped the {REFERENCE} comparison: npm is not installed")
        return None
    CACHE.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(
            ["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(CACHE), REFERENCE],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"skipped the {REFERENCE} comparison: npm could not be run ({exc})")
        return None
    if done.returncode != 0 or not entry.exists():
        print(f"skipped the {REFERENCE} comparison: npm could not install it ({done.stderr.strip()[-300:]})")
        return None
    return entry


async def create_reference_entities(client: Client, entities: int) -> None:
    for start in range(0, entities, 500):
        batch = [
            {"name": f"entity-{n}", "entityType": "person", "observations": [f"entity {n}"]}
            for n in range(start, min(entities, start + 500))
        ]
        result = await client.call_tool("create_entities", {"entities": batch})
        if result.is_error:
            raise RuntimeError(f"create_entities failed: {result.content[0].text[:300]}")  # type: ignore[union-attr]


async def bench_reference(entities: int, calls: int, skip: bool) -> None:
    print(f"\n== adding an observation at {entities:,} entities, over stdio, same MCP client, interleaved ==")
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        env = {
            **os.environ,
            "CONTEXTFLOW_STORE": str(base / "cf-store"),
            "CONTEXTFLOW_STATE": str(base / "cf-state"),
            "CONTEXTFLOW_TOOLS": "graph",
        }
        ids = seed_entities(env, entities)
        entry = None if skip else reference_entry()
        if skip:
            print(f"skipped the {REFERENCE} comparison (--skip-reference)")
        memory = base / "memory.jsonl"
        async with AsyncExitStack() as stack:
            ours = await stack.enter_async_context(
                Client(
                    StdioServerParameters(command=sys.executable, args=["-m", "contextflow", "serve"], env=env),
                    mode="legacy",
                )
            )
            timed = [
                Timed(
                    "ours",
                    "contextflow graph_remember (observation + CHILD_OF edge)",
                    ours,
                    "graph_remember",
                    lambda n: {
                        "type": "observation",
                        "content": f"observation {n}",
                        "agent": "bench",
                        "links": [{"to": ids[(n * 7919) % len(ids)], "type": "CHILD_OF"}],
                    },
                )
            ]
            if FLOOR.exists():
                floor = await stack.enter_async_context(
                    Client(StdioServerParameters(command=sys.executable, args=[str(FLOOR)], env=env), mode="legacy")
                )
                timed.append(Timed("py_floor", "floor: a no-op tool, Python SDK server", floor, "noop", lambda n: {}))
            if entry is not None:
                theirs = await stack.enter_async_context(
                    Client(
                        StdioServerParameters(
                            command="node", args=[str(entry)], env={**os.environ, "MEMORY_FILE_PATH": str(memory)}
                        ),
                        mode="legacy",
                    )
                )
                await create_reference_entities(theirs, entities)
                timed.append(
                    Timed(
                        "theirs",
                        f"{REFERENCE} add_observations",
                        theirs,
                        "add_observations",
                        lambda n: {
                            "observations": [
                                {"entityName": f"entity-{(n * 7919) % entities}", "contents": [f"obs {n}"]}
                            ],
                        },
                    )
                )
                script = CACHE / "floor.mjs"
                script.write_text(NODE_FLOOR)
                node_floor = await stack.enter_async_context(
                    Client(
                        StdioServerParameters(command="node", args=[str(script)], env=dict(os.environ)), mode="legacy"
                    )
                )
                timed.append(
                    Timed(
                        "node_floor",
                        "floor: a no-op tool, Node SDK server (the reference's own SDK)",
                        node_floor,
                        "noop",
                        lambda n: {},
                    )
                )
            await interleave(timed, calls)
        for one in timed:
            print(f"{one.label:<64} {summary(one.times)}")
        if entry is not None:
            size = memory.stat().st_size
            print(f"reference memory file after the run: {size:,} bytes (rewritten whole on each change)")
        report_ratios({one.key: statistics.median(one.times) for one in timed})


def report_ratios(medians: dict[str, float]) -> None:
    ours, theirs = medians["ours"], medians.get("theirs")
    py_floor, node_floor = medians.get("py_floor"), medians.get("node_floor")
    if theirs is not None:
        print(f"end to end over stdio (reference / contextflow, medians): {theirs / ours:.1f}x")
    if py_floor is not None:
        print(f"contextflow above its SDK floor: {(ours - py_floor) * 1000:.2f} ms per call")
    if theirs is not None and node_floor is not None:
        print(f"reference above its SDK floor:   {(theirs - node_floor) * 1000:.2f} ms per call")
    if theirs is not None and node_floor is not None and py_floor is not None and ours > py_floor:
        ratio = (theirs - node_floor) / (ours - py_floor)
        print(f"the operation itself, transport removed (reference / contextflow): {ratio:.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--entities", type=int, default=5_000)
    parser.add_argument("--calls", type=int, default=50, help="timed calls per operation (default 50)")
    parser.add_argument("--runs", type=int, default=7, help="repetitions of each in-process timing (default 7)")
    parser.add_argument("--skip-reference", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        os.environ.update(
            {
                "HOME": str(home / "home"),
                "CONTEXTFLOW_STORE": str(home / "store"),
                "CONTEXTFLOW_STATE": str(home / "state"),
                "CONTEXTFLOW_WRITER": "bench",
            }
        )
        for name in ("CONTEXTFLOW_TOOLS", "MCP_SHARED_CONTEXT_FILE", "MCP_SHARED_CONTEXT_FOLDER"):
            os.environ.pop(name, None)
        print(f"contextflow graph benchmark (python {sys.version.split()[0]}, {os.cpu_count()} cpu)")
        bench_big_graph(args.nodes, args.runs)
        anyio.run(bench_reference, args.entities, args.calls, args.skip_reference)


if __name__ == "__main__":
    main()
