"""What the operations table is made of: `Param`, `Operation`, `Table`, `Reply` (spec.py), the
parameters several features share (params.py), the argument checker (arguments.py) and the one
provenance header over stored text (provenance.py). Each feature package declares its own table
in its `operations.py`; `contextflow.features` lists them.

Import from the modules themselves: this package imports nothing, so a hook that needs only the
provenance header does not build the table's classes.
"""
