"""What the default `tools/list` costs a client every turn: characters and estimated tokens of its JSON.

Run: python scripts/tools_list_tokens.py [--tools GROUPS]  (prints each tool's share, then the total).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile

from contextflow.core.text import estimate_tokens


async def listed(groups: str | None) -> list[dict[str, object]]:
    from mcp import Client

    from contextflow.adapters.server.app import ContextflowServer
    from contextflow.app import App

    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "CONTEXTFLOW_STORE": f"{folder}/store", "CONTEXTFLOW_STATE": f"{folder}/state"}
        if groups:
            env["CONTEXTFLOW_TOOLS"] = groups
        app = App.open(env)
        try:
            async with Client(ContextflowServer(app).server, mode="legacy") as client:
                result = await client.list_tools()
                return [tool.model_dump(by_alias=True, exclude_none=True) for tool in result.tools]
        finally:
            app.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tools", help="CONTEXTFLOW_TOOLS groups (default: the default set)")
    tools = asyncio.run(listed(parser.parse_args().tools))
    total = json.dumps({"tools": tools}, separators=(",", ":"))
    seen = [{k: tool[k] for k in ("name", "description", "inputSchema") if k in tool} for tool in tools]
    for tool in tools:
        text = json.dumps(tool, separators=(",", ":"))
        print(f"{tool['name']:28} {len(text):6} chars {estimate_tokens(text):5} tokens")
    print(f"{'total':28} {len(total):6} chars {estimate_tokens(total):5} tokens ({len(tools)} tools)")
    model = json.dumps(seen, separators=(",", ":"))  # what a client puts before its model: no annotations
    print(f"{'name+description+schema':28} {len(model):6} chars {estimate_tokens(model):5} tokens")


if __name__ == "__main__":
    main()
