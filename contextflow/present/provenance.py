"""The one provenance header: the line above stored text that says whose it is and when.

Stored text is untrusted, so every value in a header is cleaned to one line and clipped;
the writer (the log that holds it) is always labelled `writer=`.
"""

from __future__ import annotations

from contextflow.text import clip

Part = str | tuple[str, object] | None


def header(*parts: Part, limit: int = 120) -> str:
    """`part | name=value | ...`: plain strings are kept as given, (name, value) pairs are cleaned and
    clipped; None, and pairs whose value is None or empty, are left out."""
    shown: list[str] = []
    for part in parts:
        if isinstance(part, tuple):
            name, value = part
            if value is not None and value != "":
                shown.append(f"{name}={clip(value, limit)}")
        elif part:
            shown.append(part)
    return " | ".join(shown)
