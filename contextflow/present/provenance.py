"""The one header every stored item is shown under: what it is, who wrote it, from which machine, when.

`title | writer=W | agent=A | <time> | key=value ... | id=X`, every part cleaned to one line,
so stored text (quoted below it with `> `) can never pose as a header.
"""

from __future__ import annotations

from collections.abc import Iterable

from contextflow.text import clean, clip

Field = tuple[str, object]


def header(
    title: str,
    *,
    writer: str | None,
    agent: object = None,
    when: str | None = None,
    fields: Iterable[Field | str] = (),
    item_id: str | None = None,
) -> str:
    """Fields with a None or empty value are left out; a bare string is a flag (e.g. "pinned")."""
    parts = [title]
    if writer:
        parts.append(f"writer={clean(writer, True)}")
    if agent:
        parts.append(f"agent={clip(agent, 40)}")
    if when:
        parts.append(when)
    for field in fields:
        if isinstance(field, str):
            parts.append(field)
        elif field[1] not in (None, ""):
            parts.append(f"{field[0]}={clip(field[1], 120)}")
    if item_id:
        parts.append(f"id={clean(item_id, True)}")
    return " | ".join(parts)
