"""The measurements themselves, one function per phase; scripts/bench runs and prints them."""

from __future__ import annotations

import importlib.util
import math
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import mcp_types as types
from mcp import Client

from benchlib.floor_server import build_floor
from benchlib.mcp_timing import Call, CallFailed, call_once, server_command, stdio_client, time_calls
from benchlib.procs import ColdStart, child_pids, cold_start, vm_hwm_kb
from benchlib.storegen import GeneratedStore, fast_ids
from contextflow.adapters.server.app import ContextflowServer
from contextflow.adapters.server.registry import groups
from contextflow.app import App
from contextflow.core.clock import HybridClock
from contextflow.core.locate import Location, store_state_dir
from contextflow.core.store import Store
from contextflow.core.tables import BUILD_WAIT_S

# Checked once, at import: another part of the product may not exist yet.
HAVE_RECORDS = importlib.util.find_spec("contextflow.records.core") is not None
HAVE_TIMELINE = importlib.util.find_spec("contextflow.timeline.core") is not None
EXTRA_TOOLS = ("context_get", "context_list", "timeline_where_am_i")
PROJECT = "shared"
CHECKOUT = Path(__file__).resolve().parents[2]
NOTE = "bench note: checked the retry path and the websocket reconnect; queued messages survive now. " * 3


@dataclass(frozen=True)
class Settings:
    reps: int
    warmup: int
    ext_reps: int
    ks: tuple[int, ...]
    cold_reps: int
    cold_refolds: int = 1  # cold starts without derived state (a new machine)
    records: int = 300  # keyed records and timeline threads put in each store when those tools exist
    threads: int = 10
    import_probe: bool = True  # also time the imports and the floor's cold start


@dataclass
class SizeRun:
    store: GeneratedStore
    session: str
    fold_seconds: float = 0.0
    inmem: dict[str, list[float]] = field(default_factory=dict)
    stdio: dict[str, list[float]] = field(default_factory=dict)
    after_append: dict[int, list[float]] = field(default_factory=dict)
    after_append_floor: list[float] = field(default_factory=list)
    server_rss_kb: int = 0
    floor_rss_kb: int = 0
    extras_note: str = ""


def store_env(root: Path) -> dict[str, str]:
    """Variables that point contextflow at the store under `root` (and nowhere else)."""
    return {
        "CONTEXTFLOW_STORE": str(root / "store"),
        "CONTEXTFLOW_STATE": str(root / "state"),
        "CONTEXTFLOW_WRITER": "bench",
        "MCP_SHARED_CONTEXT_PROJECT": PROJECT,
        "CONTEXTFLOW_TOOLS": "all" if HAVE_RECORDS or HAVE_TIMELINE else "default",
        "PYTHONPATH": str(CHECKOUT),  # servers run this checkout's code, whatever the venv points at
    }


def tool_calls(client: Client, session: str) -> list[Call]:
    return [
        Call(
            "append_shared_note",
            client,
            "append_shared_note",
            {"agent": "bench", "text": NOTE, "project": PROJECT, "session_id": session, "task": "benchmark"},
        ),
        Call("read_shared_context", client, "read_shared_context", {"project": PROJECT}),
        Call("list_sessions", client, "list_sessions", {"project": PROJECT}),
        Call("resume_session", client, "resume_session", {"project": PROJECT, "session_id": session}),
    ]


def extra_calls(client: Client) -> list[Call]:
    calls = []
    if HAVE_RECORDS:
        calls += [
            Call("context_get", client, "context_get", {"key": "fact:bench-7"}),
            Call("context_list", client, "context_list", {}),
        ]
    if HAVE_TIMELINE:
        calls.append(Call("timeline_where_am_i", client, "timeline_where_am_i", {}))
    return calls


async def populate_extras(client: Client, settings: Settings) -> str:
    """Put some keyed records and timeline threads in the store through the tools; '' when all went in."""
    problems: list[str] = []
    try:
        if HAVE_RECORDS:
            categories = ("project", "pr", "machine", "waiting", "fact")
            for n in range(settings.records):
                await call_once(
                    Call(
                        "set",
                        client,
                        "context_set",
                        {
                            "key": f"fact:bench-{n}" if n < 60 else f"{categories[n % 5]}:bench-{n}",
                            "value": {"status": "waiting", "n": n, "note": NOTE[:80]},
                            "category": categories[n % 5],
                            "label": f"Bench record {n}",
                            "pinned": n % 25 == 0,
                        },
                    )
                )
    except CallFailed as exc:
        problems.append(f"records: {exc}")
    try:
        if HAVE_TIMELINE:
            for t in range(settings.threads):
                _, made = await call_once(
                    Call(
                        "thread",
                        client,
                        "timeline_create_thread",
                        {"name": f"bench thread {t}", "description": NOTE[:80]},
                    )
                )
                thread_id = (made.structured_content or {}).get("id")
                for n in range(settings.threads):
                    await call_once(
                        Call(
                            "thought",
                            client,
                            "timeline_add_thought",
                            {"thread_id": thread_id, "content": f"{NOTE[:60]} {n}"},
                        )
                    )
    except CallFailed as exc:
        problems.append(f"timeline: {exc}")
    return "; ".join(problems)


# -- warm calls in memory --------------------------------------------------------------------


async def warm_in_memory(run: SizeRun, settings: Settings) -> None:
    began = time.perf_counter()
    app = App.open()
    app.store.refresh()  # the first open folds every event
    run.fold_seconds = time.perf_counter() - began
    try:
        server = ContextflowServer(app).server
        async with Client(build_floor(), mode="legacy") as floor, Client(server, mode="legacy") as client:
            await client.list_prompts()  # as hosts do on connect; the server then keeps resume_N current
            if HAVE_RECORDS or HAVE_TIMELINE:
                run.extras_note = await populate_extras(client, settings)
            calls = [Call("floor", floor, "noop", {}), *tool_calls(client, run.session)]
            if not run.extras_note:
                calls += extra_calls(client)
            run.inmem = await time_calls(calls, settings.reps, settings.warmup)
    finally:
        app.close()


# -- warm calls and reads after external appends, over stdio ----------------------------------


def external_writer(root: Path) -> Store:
    """Another contextflow process on this machine: its own writer, state and no views."""
    state = root / "ext-state"
    state.mkdir(exist_ok=True)
    location = Location(root / "store", "bench")
    return Store(location, "bench-ext", state, shares_state=False, clock=HybridClock())


async def warm_stdio(run: SizeRun, root: Path, env: Mapping[str, str], settings: Settings) -> None:
    async with stdio_client(server_command(False), env) as client, stdio_client(server_command(True), env) as floor:
        await client.list_prompts()
        server_pids, floor_pids = child_pids("contextflow serve"), child_pids("floor_server.py")
        floor_call = Call("floor", floor, "noop", {})
        calls = [floor_call, *tool_calls(client, run.session)]
        if not run.extras_note:
            calls += extra_calls(client)
        run.stdio = await time_calls(calls, settings.reps, settings.warmup)
        read = Call("read", client, "read_shared_context", {"project": PROJECT})
        writer = external_writer(root)
        writer.append("note", {"project": PROJECT, "agent": "ext", "text": "warm-up"})  # it folds the store once here
        await call_once(read)
        run.after_append = {k: [] for k in settings.ks}
        for rep in range(settings.ext_reps):
            for k in settings.ks:
                if k:
                    writer.append_many(
                        [
                            (
                                "note",
                                {"project": PROJECT, "agent": "ext", "session_id": "ext", "text": f"{NOTE} {rep}.{n}"},
                            )
                            for n in range(k)
                        ]
                    )
                elapsed, _ = await call_once(read)
                run.after_append[k].append(elapsed)
            elapsed, _ = await call_once(floor_call)
            run.after_append_floor.append(elapsed)
        run.server_rss_kb = max((vm_hwm_kb(pid) for pid in server_pids), default=0)
        run.floor_rss_kb = max((vm_hwm_kb(pid) for pid in floor_pids), default=0)


# -- cold start ---------------------------------------------------------------------------------


@dataclass
class ColdRun:
    without: list[ColdStart] = field(default_factory=list)  # a new machine: no derived state yet
    warm: list[ColdStart] = field(default_factory=list)  # the machine's derived tables built
    floor: list[ColdStart] = field(default_factory=list)
    import_seconds: float = math.nan
    open_tables: float = 0.0
    open_refold: float = 0.0
    tables_bytes: int = 0


def _timed_open(fold: bool) -> float:
    began = time.perf_counter()
    app = App.open()
    if fold:
        app.store.refresh()  # what a process that scans every log pays (doctor's check)
    else:
        app.tables().query("SELECT count(*) FROM sessions_entries")  # what a first read_shared_context reads
    elapsed = time.perf_counter() - began
    app.close()
    return elapsed


def _drop_derived_state(root: Path) -> None:
    state = store_state_dir(root / "store", {"CONTEXTFLOW_STATE": str(root / "state")})
    for path in state.glob("views.sqlite3*"):
        path.unlink()


async def cold_starts(root: Path, env: Mapping[str, str], settings: Settings) -> ColdRun:
    result = ColdRun()
    full_env = {**os.environ, **env}
    call = ("read_shared_context", {"project": PROJECT})
    errlog = root / "cold-start-stderr.log"
    for _ in range(settings.cold_refolds):
        _drop_derived_state(root)
        result.without.append(cold_start(server_command(False), full_env, *call, errlog))
    app = App.open()
    app.tables().update(BUILD_WAIT_S, foreground=True)  # the derived tables, built
    result.tables_bytes = app.tables().path.stat().st_size
    app.close()
    for _ in range(settings.cold_reps):
        result.warm.append(cold_start(server_command(False), full_env, *call, errlog))
        if settings.import_probe:
            result.floor.append(cold_start(server_command(True), full_env, "noop", {}, errlog))
    if settings.import_probe:
        began = time.perf_counter()
        probe = [sys.executable, "-c", "import contextflow.adapters.server.app, contextflow.adapters.cli"]
        subprocess.run(probe, env=full_env, check=True)
        result.import_seconds = time.perf_counter() - began
    result.open_tables = _timed_open(False)
    result.open_refold = _timed_open(True)
    return result


# -- tools/list ----------------------------------------------------------------------------------


async def tools_list_sizes(root: Path) -> list[tuple[str, int, int]]:
    """(tool groups, tool count, characters of the tools/list result JSON) per setting."""
    env = {**os.environ, **store_env(root)}
    app = App.open(env)
    found = []
    try:
        for setting in ("default", "all", *groups()):
            configured = App(app.store, app.settings._replace(tool_groups=setting))
            async with Client(ContextflowServer(configured).server, mode="legacy") as client:
                listed: types.ListToolsResult = await client.list_tools()
            found.append((setting, len(listed.tools), len(listed.model_dump_json(by_alias=True, exclude_none=True))))
    finally:
        app.close()
    return found


def new_run(store: GeneratedStore) -> SizeRun:
    busiest = store.sessions.get(PROJECT) or [f"bench-{fast_ids(1)[0]}"]
    return SizeRun(store, busiest[0])
