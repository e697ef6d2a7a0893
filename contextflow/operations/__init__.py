"""The operations table: every capability, declared once, from which the MCP server and the CLI are built.

Each feature module here declares its `FEATURE` (operations, prompts, resources) with light
imports only; the functions that run an operation live in `contextflow.present` and the core,
and are imported on first call. A new capability adds one module and one line in `FEATURES`.
"""

from __future__ import annotations

import importlib
from functools import cache

from contextflow.operations.spec import Feature, Operation, Param, PromptSpec, Reply

__all__ = ["FEATURES", "Feature", "Operation", "Param", "PromptSpec", "Reply", "features", "operations"]

FEATURES = (
    "contextflow.operations.sessions",
    "contextflow.operations.context",
    "contextflow.operations.timeline",
    "contextflow.operations.recall",
    "contextflow.operations.graph",
    "contextflow.operations.admin",
)


@cache
def features() -> tuple[Feature, ...]:
    return tuple(importlib.import_module(name).FEATURE for name in FEATURES)


def operations() -> tuple[Operation, ...]:
    return tuple(op for feature in features() for op in feature.operations)
