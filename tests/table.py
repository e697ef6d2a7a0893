"""Running one operation as every adapter does: its arguments checked by its table row, then its handler."""

from __future__ import annotations

from typing import Any

from contextflow.operations.arguments import check_arguments
from contextflow.operations.spec import Reply, operations


def run(app: Any, name: str, **arguments: Any) -> Reply:
    """The reply of operation `name` to these arguments; a bad one raises the error its callers see."""
    op = next(op for op in operations() if op.name == name)
    return op.run(app, check_arguments(op, arguments))
