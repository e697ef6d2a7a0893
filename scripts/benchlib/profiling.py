"""Where a warm tool call spends its time: cProfile over in-memory calls at one store size.

For each tool it prints the functions with the most own time and the contextflow functions
with the most cumulative time, each as a share of the whole profiled run.
"""

from __future__ import annotations

import cProfile
import pstats
import sysconfig
from pathlib import Path

from mcp import Client

from benchlib.mcp_timing import call_once
from benchlib.phases import SizeRun, extra_calls, tool_calls
from benchlib.report import table
from contextflow.adapters.server.app import ContextflowServer
from contextflow.app import App

CALLS = 100
TOP = 10
ROOT = str(Path(__file__).resolve().parents[2]) + "/"
STDLIB = sysconfig.get_paths()["stdlib"] + "/"


def _name(func: tuple[str, int, str]) -> str:
    path, line, name = func
    if path == "~":
        return name
    if "site-packages/" in path:
        path = path.split("site-packages/", 1)[1]
    elif path.startswith(STDLIB):
        path = "stdlib/" + path.removeprefix(STDLIB)
    return f"{path.removeprefix(ROOT)}:{line}({name})"


def _print_stats(profiler: cProfile.Profile) -> None:
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    total = sum(tt for _, _, tt, _, _ in stats.values()) or 1.0
    by_own = sorted(stats.items(), key=lambda item: -item[1][2])[:TOP]
    table(
        ("function (own time)", "calls", "own %", "cum %"),
        [(_name(f), nc, f"{tt / total:.1%}", f"{ct / total:.1%}") for f, (_, nc, tt, ct, _) in by_own],
    )
    ours = [(f, s) for f, s in stats.items() if f[0].startswith(ROOT + "contextflow/")]
    by_cum = sorted(ours, key=lambda item: -item[1][3])[:TOP]
    table(
        ("contextflow function (cumulative)", "calls", "cum %", "own %"),
        [(_name(f), nc, f"{ct / total:.1%}", f"{tt / total:.1%}") for f, (_, nc, tt, ct, _) in by_cum],
    )


async def profile_tools(run: SizeRun) -> None:
    """Profile CALLS in-memory calls of each tool (after ten unprofiled ones) and print the tables."""
    app = App.open()
    app.store.refresh()
    try:
        async with Client(ContextflowServer(app).server, mode="legacy") as client:
            await client.list_prompts()
            for call in [*tool_calls(client, run.session), *([] if run.extras_note else extra_calls(client))]:
                for _ in range(10):
                    await call_once(call)
                profiler = cProfile.Profile()
                profiler.enable()
                for _ in range(CALLS):
                    await call_once(call)
                profiler.disable()
                seconds = sum(s[2] for s in pstats.Stats(profiler).stats.values())  # type: ignore[attr-defined]
                print(
                    f"  {call.tool}: {seconds / CALLS * 1000:.2f} ms per call under the profiler "
                    f"(client and server in one process)"
                )
                _print_stats(profiler)
    finally:
        app.close()
