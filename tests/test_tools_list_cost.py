"""What the default `tools/list` costs every model turn: its names, descriptions and schemas stay within
2,600 tokens (scripts/tools_list_tokens.py prints each tool's share; it was 2,907 before they were trimmed)."""

from __future__ import annotations

import json

import pytest

from contextflow.app import App
from contextflow.core.text import estimate_tokens
from tests.conftest import connect

pytestmark = pytest.mark.anyio
BUDGET = 2_600


async def test_the_default_tool_list_fits_its_token_budget(app: App) -> None:
    async with connect(app) as client:
        tools = (await client.list_tools()).tools
    seen = [
        tool.model_dump(by_alias=True, exclude_none=True, include={"name", "description", "input_schema"})
        for tool in tools
    ]
    assert estimate_tokens(json.dumps(seen, separators=(",", ":"))) <= BUDGET


async def test_read_tools_carry_no_hint_the_protocol_ignores_for_reads(app: App) -> None:
    async with connect(app) as client:
        tools = (await client.list_tools()).tools
    reads = [tool for tool in tools if tool.annotations and tool.annotations.read_only_hint]
    assert reads and all(tool.annotations.idempotent_hint is None for tool in reads if tool.annotations)
