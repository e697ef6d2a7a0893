"""The floor: the SDK's low-level `Server` with one no-op tool and nothing else.

A contextflow tool call is compared with a call to this server over the same transport, so
the ratio shows what contextflow adds on top of the SDK itself. Run this file directly to
serve it on stdio (the benchmark spawns it the same way it spawns `python -m contextflow serve`).
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

NOOP = types.Tool(
    name="noop",
    description="Does nothing.",
    input_schema={"type": "object", "properties": {}, "additionalProperties": True},
)


async def _list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[NOOP])


async def _call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])


def build_floor() -> Server[Any]:
    return Server("floor", version="1", on_list_tools=_list_tools, on_call_tool=_call_tool)


async def _serve() -> None:
    server = build_floor()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(_serve)
