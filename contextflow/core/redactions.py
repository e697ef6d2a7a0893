"""The redactions made while a tool call runs, for its reply (`secrets.scrub_items` records them here).

Kept apart from `core/secrets.py` so a call that writes nothing (a read) gathers them without compiling
the secret rules."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_collected: ContextVar[list[str] | None] = ContextVar("contextflow_redactions", default=None)


@contextmanager
def collect() -> Iterator[list[str]]:
    """Gather the redactions made while the block runs (the MCP server wraps each tool call)."""
    found: list[str] = []
    token = _collected.set(found)
    try:
        yield found
    finally:
        _collected.reset(token)


def record(notes: list[str]) -> None:
    """Add `notes` to the redactions of the block now gathering them, if any."""
    if (collected := _collected.get()) is not None:
        collected.extend(notes)
