"""Checking an operation's arguments against its parameters, before the core function runs.

A wrong argument always comes back as an error that names the argument the way the caller
wrote it (`since_days` for a tool, `--since-days` for the CLI) and says the expected form.
"""

from __future__ import annotations

import math
from typing import Any

from contextflow.core import regexes
from contextflow.core.errors import InputError, arg, tool
from contextflow.operations.spec import JSON, Operation

# Each schema type: the Python type(s) a value of it has, and how messages name it.
_TYPES: dict[str, tuple[type | tuple[type, ...], str]] = {
    "string": (str, "a string"),
    "integer": (int, "a whole number"),
    "number": ((int, float), "a number"),
    "boolean": (bool, "true or false"),
    "array": (list, "a list"),
    "object": (dict, "a JSON object"),
}


def _describe(value: Any) -> str:
    from contextflow.core.text import cut

    return cut(repr(value), 40)


def _check_value(value: Any, schema: JSON, where: str, hint: str | None = None) -> None:
    """`hint` follows the message of a value of the wrong type or outside the enum."""
    after = f"; {hint}" if hint else ""
    expected = schema.get("type")
    if isinstance(expected, str) and expected in _TYPES:
        python_type, shown = _TYPES[expected]
        # a bool is an int to Python, never a number to JSON
        if not isinstance(value, python_type) or (isinstance(value, bool) and expected != "boolean"):
            raise InputError(f"{arg(where)} must be {shown}, got {_describe(value)}{after}")
    elif isinstance(expected, list):  # one of several types (`["string", "integer"]`)
        kinds = [_TYPES[name] for name in expected if name in _TYPES]
        if not any(
            isinstance(value, t) and not (isinstance(value, bool) and n != "boolean")
            for n, (t, _) in zip([name for name in expected if name in _TYPES], kinds, strict=True)
        ):
            shown_all = " or ".join(shown for _, shown in kinds)
            raise InputError(f"{arg(where)} must be {shown_all}, got {_describe(value)}{after}")
    if "enum" in schema and value not in schema["enum"]:
        options = ", ".join(map(str, schema["enum"]))
        raise InputError(f"{arg(where)} must be one of {options}; got {_describe(value)}{after}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        low, high = schema.get("minimum"), schema.get("maximum")
        if (low is not None and value < low) or (high is not None and value > high):
            raise InputError(f"{arg(where)} must be from {low} to {high}, got {value}")
    if isinstance(value, str) and "maxLength" in schema and len(value) > schema["maxLength"]:
        raise InputError(f"{arg(where)} is {len(value)} characters; the limit is {schema['maxLength']}")
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise InputError(f"{arg(where)} has {len(value)} items; the limit is {schema['maxItems']}")
        items = schema.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(value):
                _check_value(item, items, f"{where}[{index}]")


def check_arguments(op: Operation, arguments: Any, cli: bool = False) -> JSON:
    """Validate call arguments against the operation (as its CLI command with `cli`: its CLI parameters);
    null values count as absent. Messages name the arguments and the operation for each adapter to word."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise InputError(f"{tool(op.name)} takes a JSON object of named arguments")
    params = {p.name: p for p in (op.params if cli else op.tool_params())}
    unknown = sorted(set(arguments) - set(params))
    if unknown:
        accepted = ", ".join(map(arg, params)) or "no arguments"
        raise InputError(f"{tool(op.name)} does not take {', '.join(map(repr, unknown))}; it accepts: {accepted}")
    cleaned = {name: value for name, value in arguments.items() if value is not None}
    for param in params.values():
        if param.required and param.name not in cleaned:
            raise InputError(f"{tool(op.name)} needs '{arg(param.name)}': {param.description}".rstrip(": "))
    for name, value in cleaned.items():
        shown = name
        _check_storable(value, shown)
        _check_value(value, params[name].schema, shown, params[name].hint)
    if not op.read_only:  # `<private>` text is never stored: a handler sees what would be
        from contextflow.core.private import strip

        cleaned = {name: strip(value) for name, value in cleaned.items()}
    return cleaned


MAX_DEPTH = 64
_SURROGATE = regexes.compile("[\ud800-\udfff]")


def _check_storable(value: Any, where: str) -> None:
    """Refuse what a JSON log line cannot hold faithfully: deep nesting, huge or non-finite numbers,
    unpaired surrogates. Iterative, so hostile nesting cannot exhaust the stack."""
    from contextflow.core.events import nested_deeper  # the event format only where arguments nest

    if isinstance(value, dict | list) and nested_deeper(value, MAX_DEPTH):
        raise InputError(f"{arg(where)} is nested more than {MAX_DEPTH} levels deep; flatten it")
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack += [part for pair in item.items() for part in pair]
        elif isinstance(item, list):
            stack += item
        elif isinstance(item, int) and not isinstance(item, bool) and not -(2**63) <= item < 2**64:
            raise InputError(f"{arg(where)} holds a whole number beyond 64 bits; send it as a string")
        elif isinstance(item, float) and not math.isfinite(item):
            raise InputError(f"{arg(where)} holds NaN or infinity; send a finite number")
        elif isinstance(item, str) and _SURROGATE.search(item):
            raise InputError(f"{arg(where)} holds an unpaired UTF-16 surrogate; send valid Unicode text")
