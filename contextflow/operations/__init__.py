"""What the operations table is made of: `Param`, `Operation`, `Table`, `Reply` (spec.py), the
parameters several features share (params.py), the argument checker (arguments.py) and the one
provenance header over stored text (provenance.py). Each feature package declares its own table
in its `operations.py`; `contextflow.features` lists them.
"""

from __future__ import annotations

from contextflow.operations.spec import Operation, Param, PromptSpec, Reply, Table

__all__ = ["Operation", "Param", "PromptSpec", "Reply", "Table"]
