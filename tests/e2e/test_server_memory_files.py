"""The real `@modelcontextprotocol/server-memory` reads what `contextflow export --to server-memory` writes:
the same entities and relations as the memory.json it wrote itself and contextflow imported."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from contextflow.adapters.cli import main
from tests.e2e.conftest import CLIENTS, install_client

pytestmark = pytest.mark.slow
MEMORY = Path(__file__).parents[1] / "fixtures" / "imports" / "server-memory" / "memory.json"


async def read_graph(executable: Path, memory: Path) -> dict[str, object]:
    env = {**os.environ, "MEMORY_FILE_PATH": str(memory)}
    async with Client(StdioServerParameters(command=str(executable), env=env), mode="legacy") as client:
        result = await client.call_tool("read_graph", {})
        assert not result.is_error, result.content
        return json.loads(result.content[0].text)


def test_server_memory_reads_the_export_as_the_graph_it_wrote(tmp_path, capsys):
    executable = install_client(CLIENTS["server-memory"])
    assert main(["import", str(MEMORY)]) == 0
    exported = tmp_path / "exported.json"
    assert main(["export", "--to", "server-memory", "-o", str(exported)]) == 0
    capsys.readouterr()
    original = tmp_path / "original.json"
    original.write_bytes(MEMORY.read_bytes())

    def canonical(graph: dict[str, object]) -> tuple[list[str], list[str]]:
        entities = sorted(json.dumps(e, sort_keys=True) for e in graph["entities"])  # type: ignore[attr-defined]
        relations = sorted(json.dumps(r, sort_keys=True) for r in graph["relations"])  # type: ignore[attr-defined]
        return entities, relations

    theirs = anyio.run(read_graph, executable, original)
    ours = anyio.run(read_graph, executable, exported)
    assert canonical(ours) == canonical(theirs) and len(theirs["entities"]) == 5  # type: ignore[arg-type]
