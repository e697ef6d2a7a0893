"""Warm tool-call latency through the MCP SDK client, interleaved with the floor server.

Every repetition calls each tool once, in a rotating order, so a burst of machine noise
lands on the floor and on contextflow alike and the ratios stay meaningful.
"""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

FLOOR_SCRIPT = Path(__file__).with_name("floor_server.py")


class CallFailed(RuntimeError):
    """A tool call returned an error during the benchmark."""


@dataclass(frozen=True)
class Call:
    label: str
    client: Client
    tool: str
    arguments: dict[str, Any]


def result_text(result: Any) -> str:
    return " ".join(str(getattr(block, "text", "")) for block in result.content)[:300]


async def call_once(call: Call) -> tuple[float, Any]:
    start = time.perf_counter()
    result = await call.client.call_tool(call.tool, call.arguments)
    elapsed = time.perf_counter() - start
    if result.is_error:
        raise CallFailed(f"{call.tool}({call.arguments}) failed: {result_text(result)}")
    return elapsed, result


async def time_calls(calls: Sequence[Call], reps: int, warmup: int) -> dict[str, list[float]]:
    """Per label, `reps` latencies in seconds (after `warmup` unrecorded rounds)."""
    samples: dict[str, list[float]] = {call.label: [] for call in calls}
    for rep in range(warmup + reps):
        shift = rep % len(calls)
        for call in [*calls[shift:], *calls[:shift]]:
            elapsed, _ = await call_once(call)
            if rep >= warmup:
                samples[call.label].append(elapsed)
    return samples


def server_command(floor: bool) -> list[str]:
    return [sys.executable, str(FLOOR_SCRIPT)] if floor else [sys.executable, "-m", "contextflow", "serve"]


@asynccontextmanager
async def stdio_client(command: Sequence[str], env: Mapping[str, str]) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=command[0], args=list(command[1:]), env=dict(env))
    async with Client(params, mode="legacy") as client:
        yield client
