"""Reference tables for the docs, generated from the operations table (README's tool groups).

`python -m contextflow.admin.reference` prints them; `--write` puts them into README.md between
the `<!-- tools:begin -->` and `<!-- tools:end -->` markers. A test checks README is current.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from contextflow.adapters.server.registry import DEFAULT_GROUPS, groups

BEGIN, END = "<!-- tools:begin -->", "<!-- tools:end -->"
# Prompts built from the store at run time, named the way people read them.
DYNAMIC_PROMPTS = {"sessions": "`resume_1`..`resume_N`"}


def tool_groups_table() -> str:
    rows = ["| group | tools | default |", "|---|---|---|"]
    for group, tables in groups().items():
        tools = [f"`{op.name}`" for table in tables for op in table.operations if op.tool]
        prompts = [f"`{p.name}`" for table in tables for p in table.prompts]
        if group in DYNAMIC_PROMPTS:
            prompts.insert(1, DYNAMIC_PROMPTS[group])
        cell = ", ".join(tools) + (f"; prompts {', '.join(prompts)}" if prompts else "")
        rows.append(f"| `{group}` | {cell} | {'yes' if group in DEFAULT_GROUPS else 'no'} |")
    return "\n".join(rows)


def with_tables(readme: str) -> str:
    """README with the generated table between the markers."""
    block = f"{BEGIN}\n{tool_groups_table()}\n{END}"
    return re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, readme, flags=re.S)


def main(argv: list[str]) -> int:
    if argv == ["--write"]:
        path = Path(__file__).resolve().parents[2] / "README.md"
        path.write_text(with_tables(path.read_text(encoding="utf-8")), encoding="utf-8")
        return 0
    print(tool_groups_table())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
