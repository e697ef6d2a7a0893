"""Make tests/fixtures/imports/server-memory/memory.json with the real `@modelcontextprotocol/server-memory`.

Installs the server from the npm registry into a cache folder (as scripts/bench_graph.py does), starts
it over stdio with MEMORY_FILE_PATH pointing at the fixture, and builds a small graph through its own
tools (create_entities, create_relations, add_observations), so the file is exactly what the server
writes. Run it again after a server release to refresh the fixture:

    .venv/bin/python scripts/make_import_fixtures.py
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

sys.path.insert(0, str(Path(__file__).parent))
from bench_graph import reference_entry  # the cached npm install of the server

FIXTURE = Path(__file__).parent.parent / "tests" / "fixtures" / "imports" / "server-memory" / "memory.json"

ENTITIES: list[dict[str, Any]] = [
    {"name": "Alice Moreau", "entityType": "person", "observations": ["Leads the payments team", "Prefers Go"]},
    {"name": "Payments API", "entityType": "service", "observations": ["Stores prices in cents"]},
    {"name": "Ledger DB", "entityType": "database", "observations": ["PostgreSQL 16", "Backed up nightly at 02:00"]},
    {
        "name": "Decision: retries",
        "entityType": "design decision",
        "observations": ["Retry at most 3 times\nwith exponential backoff", "Chosen over a queue: simpler to run"],
    },
    {"name": "Zoë", "entityType": "person", "observations": ["Writes the mobile client", "Café-driven development"]},
]
RELATIONS: list[dict[str, str]] = [
    {"from": "Alice Moreau", "to": "Payments API", "relationType": "owns"},
    {"from": "Payments API", "to": "Ledger DB", "relationType": "depends_on"},
    {"from": "Payments API", "to": "Ledger DB", "relationType": "writes to"},
    {"from": "Decision: retries", "to": "Payments API", "relationType": "applies to"},
    {"from": "Zoë", "to": "Payments API", "relationType": "calls"},
]
ADDED = [{"entityName": "Alice Moreau", "contents": ["On call this week"]}]


async def build(entry: Path) -> None:
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.unlink(missing_ok=True)
    env = {**os.environ, "MEMORY_FILE_PATH": str(FIXTURE)}
    params = StdioServerParameters(command="node", args=[str(entry)], env=env)
    async with Client(params, mode="legacy") as client:
        for tool, arguments in (
            ("create_entities", {"entities": ENTITIES}),
            ("create_relations", {"relations": RELATIONS}),
            ("add_observations", {"observations": ADDED}),
        ):
            result = await client.call_tool(tool, arguments)
            if result.is_error:
                raise SystemExit(f"{tool} failed: {result.content}")


def main() -> int:
    entry = reference_entry()
    if entry is None:
        return 1
    asyncio.run(build(entry))
    print(f"wrote {FIXTURE} ({FIXTURE.stat().st_size} bytes) with {entry.parent.parent}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
