"""One request to the store read soundly (`soundly`), for operations, MCP prompts and resources and the
session-start hook alike. Light to import (no dataclasses): every agent start runs the hook."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from contextflow.app import App

T = TypeVar("T")


def soundly(app: App, run: Callable[[], T], read_only: bool = True) -> T:
    """`run()`, one request to the store (an operation, a hook's answer, an MCP prompt or resource): another
    process's lock is waited for once; "not found" after reading an unfinished build is asked again on the
    whole tables (`core.projections.never_unbuilt`); a read that met damaged derived tables (deleted then:
    `Tables.found_damaged`) runs again from the logs, while a write says so instead of running twice."""
    from contextflow.core.projections import never_unbuilt

    try:
        return never_unbuilt(run)
    except Exception as exc:
        if not app.tables().found_damaged(exc):
            raise
        if not read_only:
            from contextflow.core.errors import StoreError

            raise StoreError(
                f"the derived tables {app.tables().path} were damaged: they are deleted and rebuilt from the "
                "logs (nothing is lost); check what was written (`contextflow read`) before running the "
                "command again"
            ) from None
        return never_unbuilt(run)
