"""The operations table: every tool and command declared once, resolvable, documented, and alike on both adapters."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from contextflow.features import features
from contextflow.operations.spec import Deferred, operations, table_of

ROOT = Path(__file__).resolve().parent.parent
DOCS = (ROOT / "README.md").read_text() + "".join(p.read_text() for p in sorted((ROOT / "docs").glob("*.md")))


def test_tool_names_and_command_words_are_unique():
    tools = [op.name for op in operations() if op.tool]
    commands = [op.command for op in operations() if op.command]
    assert len(tools) == len(set(tools)) and len(commands) == len(set(commands))


@pytest.mark.parametrize("op", operations(), ids=lambda op: op.name)
def test_every_operation_runs_a_function_that_exists(op):
    handler = op.handler.resolve() if isinstance(op.handler, Deferred) else op.handler
    assert callable(handler) and handler.__name__ == getattr(op.handler, "name", handler.__name__)


@pytest.mark.parametrize("op", [op for op in operations() if op.tool], ids=lambda op: op.name)
def test_every_tool_is_in_the_docs_and_says_what_it_does(op):
    assert f"`{op.name}`" in DOCS, f"{op.name} is not in README.md or docs/"
    assert op.summary.endswith(".") and len(op.summary) < 200, op.name


@pytest.mark.parametrize("op", [op for op in operations() if op.command], ids=lambda op: op.name)
def test_every_command_is_in_the_docs(op):
    assert re.search(rf"contextflow {re.escape(' '.join(op.command or ()))}\b", DOCS), (
        f"`{op.command_line()}` is not in README.md or docs/"
    )


def test_every_prompt_and_resource_is_in_the_docs():
    for feature in features():
        table = table_of(feature)
        for prompt in table.prompts if table else ():
            assert f"`{prompt.name}`" in DOCS, prompt.name
        for resource in table.resources if table else ():
            assert resource.uri in DOCS, resource.uri
    assert "`resume_1`" in DOCS and "`resume_by_id`" in DOCS


def test_reading_the_table_imports_only_table_modules():
    """Hooks and --version pay for every import: the table's modules load no view, core or SDK module."""
    import re
    import subprocess
    import sys

    script = (
        "import sys\nfrom contextflow.adapters.cli import build_parser\nbuild_parser()\n"
        "print('\\n'.join(sorted(m for m in sys.modules if m.startswith(('contextflow', 'mcp', 'orjson')))))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    table = re.compile(  # each feature's fields.py holds the limits its table and core share: it stays light
        r"contextflow(\.\w+)?(\.operations|\.fields)?|contextflow\.operations\.(spec|params)|contextflow\.features"
        r"|contextflow\.adapters\.(cli|batch)|contextflow\.core\.fields"
    )
    loaded = done.stdout.split()
    assert "contextflow.records.operations" in loaded
    assert [m for m in loaded if not table.fullmatch(m)] == []
    assert not {"contextflow.core.store", "contextflow.core.events", "contextflow.adapters.server"} & set(loaded)
