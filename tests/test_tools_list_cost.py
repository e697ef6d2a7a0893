"""What the default `tools/list` costs every turn: its whole JSON (names, descriptions, schemas, annotations and
get_context's output schema) stays within 2,600 tokens, as scripts/tools_list_tokens.py counts it (it prints each
tool's share; the listing was 2,984 before it was trimmed, its names, descriptions and input schemas 2,584)."""

from __future__ import annotations

import json

import mcp_types as types
import pytest

from contextflow.app import App
from contextflow.core.text import estimate_tokens
from tests.conftest import connect

pytestmark = pytest.mark.anyio
BUDGET = 2_600


async def test_the_default_tool_list_fits_its_token_budget(app: App) -> None:
    async with connect(app) as client:
        tools = (await client.list_tools()).tools
    listing = {"tools": [tool.model_dump(by_alias=True, exclude_none=True) for tool in tools]}
    assert estimate_tokens(json.dumps(listing, separators=(",", ":"))) <= BUDGET


async def test_the_listing_still_names_every_argument_with_its_type(app: App) -> None:
    async with connect(app) as client:
        tools = (await client.list_tools()).tools
    untyped = [
        f"{tool.name}.{name}"
        for tool in tools
        for name, schema in tool.input_schema["properties"].items()
        if "type" not in schema
    ]
    assert not untyped
    note = next(tool for tool in tools if tool.name == "append_shared_note")
    assert note.input_schema["properties"]["content"]["type"] == "string"  # ContextFlowMCP's alias of `text`


async def test_a_write_says_whether_it_destroys_and_a_read_only_that_it_reads(app: App) -> None:
    async with connect(app) as client:
        tools = {tool.name: tool.annotations for tool in (await client.list_tools()).tools}
    # a write also says it reaches nothing outside the store: Codex asks approval of an open-world tool
    closed = {"read_only_hint": False, "open_world_hint": False}
    assert tools["context_delete"] == types.ToolAnnotations(**closed, destructive_hint=True)
    assert tools["append_shared_note"] == types.ToolAnnotations(**closed, destructive_hint=False)
    assert tools["read_shared_context"] == types.ToolAnnotations(read_only_hint=True)


async def test_read_tools_carry_no_hint_the_protocol_ignores_for_reads(app: App) -> None:
    async with connect(app) as client:
        tools = (await client.list_tools()).tools
    reads = [tool for tool in tools if tool.annotations and tool.annotations.read_only_hint]
    assert reads and all(tool.annotations.idempotent_hint is None for tool in reads if tool.annotations)
