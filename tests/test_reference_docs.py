"""The docs that are generated from the operations table are current, and the CLI's group help
names exactly the actions each group has."""

from __future__ import annotations

import re
from pathlib import Path

from contextflow.admin.reference import BEGIN, END, tool_groups_table, with_tables
from contextflow.operations.spec import operations

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_tool_table_is_the_generated_one():
    readme = README.read_text(encoding="utf-8")
    assert BEGIN in readme and END in readme
    assert with_tables(readme) == readme, "run: python -m contextflow.admin.reference --write"


def test_the_generated_table_names_every_tool_once():
    tools = "".join(row.split(" | ")[1].split("; prompts")[0] for row in tool_groups_table().splitlines()[2:])
    for op in operations():
        if op.tool:
            assert tools.count(f"`{op.name}`") == 1, op.name


def test_a_stale_table_is_noticed():
    stale = f"intro\n{BEGIN}\n| group | tools | default |\n{END}\n"
    assert with_tables(stale) != stale


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def test_every_json_snippet_in_the_docs_pastes_as_json():
    import json

    for doc in [README, *sorted((README.parent / "docs").glob("*.md"))]:
        for block in _blocks(doc.read_text(encoding="utf-8"), "json"):
            json.loads(block)  # a `//` comment line makes a pasted config invalid


def test_no_paragraph_or_table_row_is_said_twice():
    for doc in [README, *sorted((README.parent / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        rows = [line for line in text.splitlines() if line.startswith("| `")]
        assert len(rows) == len(set(rows)), doc.name
        first_words = [p.strip()[:60] for p in text.split("\n\n") if len(p.strip()) > 200 and "```" not in p]
        assert len(first_words) == len(set(first_words)), doc.name
    readme = README.read_text(encoding="utf-8")
    assert readme.count("also adds its hooks") + readme.count("also adds\nthe hooks") <= 1
