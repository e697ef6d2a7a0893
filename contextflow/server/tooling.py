"""Declarative tool, prompt and resource specs, and the argument checker for tool calls.

Schemas are written by hand (compact: every schema costs each agent tokens on every turn)
and checked here before a handler runs, so a wrong argument always comes back as a tool
error that names the argument and the expected form.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from contextflow.app import App
from contextflow.errors import InputError

JSON = dict[str, Any]


@dataclass(frozen=True)
class Reply:
    """What a tool returns: text for the model, optional structured data for programs."""

    text: str
    data: JSON | None = None


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    properties: JSON
    handler: Callable[[App, JSON], Reply]
    required: tuple[str, ...] = ()
    read_only: bool = True
    destructive: bool = False
    group: str = "sessions"

    def input_schema(self) -> JSON:
        schema: JSON = {"type": "object", "properties": self.properties, "additionalProperties": False}
        if self.required:
            schema["required"] = list(self.required)
        return schema


@dataclass(frozen=True)
class PromptArg:
    name: str
    description: str
    required: bool = False


@dataclass(frozen=True)
class PromptSpec:
    name: str
    description: str
    handler: Callable[[App, dict[str, str]], str]
    arguments: tuple[PromptArg, ...] = ()


@dataclass(frozen=True)
class ResourceSpec:
    uri: str
    name: str
    description: str
    mime_type: str
    reader: Callable[[App], str]


@dataclass
class Feature:
    """One capability's contribution to the server."""

    tools: list[ToolSpec] = field(default_factory=list)
    prompts: list[PromptSpec] = field(default_factory=list)
    resources: list[ResourceSpec] = field(default_factory=list)
    dynamic_prompts: list[Callable[[App], list[PromptSpec]]] = field(default_factory=list)
    # A cheap value that changes exactly when the dynamic prompts' names or descriptions do.
    prompt_signature: Callable[[App], object] | None = None


# -- argument checking ---------------------------------------------------------------------

_TYPE_NAMES = {
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "a JSON object",
}


def _type_ok(value: Any, expected: str) -> bool:
    if expected == "string":
        return isinstance(value, str)
    if expected == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if expected == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if expected == "boolean":
        return isinstance(value, bool)
    if expected == "array":
        return isinstance(value, list)
    if expected == "object":
        return isinstance(value, dict)
    return True


def _describe(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."


def _check_value(value: Any, schema: JSON, where: str) -> None:
    expected = schema.get("type")
    if isinstance(expected, str) and not _type_ok(value, expected):
        raise InputError(f"{where} must be {_TYPE_NAMES.get(expected, expected)}, got {_describe(value)}")
    if "enum" in schema and value not in schema["enum"]:
        raise InputError(f"{where} must be one of {', '.join(map(str, schema['enum']))}; got {_describe(value)}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        low, high = schema.get("minimum"), schema.get("maximum")
        if (low is not None and value < low) or (high is not None and value > high):
            raise InputError(f"{where} must be from {low} to {high}, got {value}")
    if isinstance(value, str) and "maxLength" in schema and len(value) > schema["maxLength"]:
        raise InputError(f"{where} is {len(value)} characters; the limit is {schema['maxLength']}")
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise InputError(f"{where} has {len(value)} items; the limit is {schema['maxItems']}")
        items = schema.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(value):
                _check_value(item, items, f"{where}[{index}]")


def check_arguments(spec: ToolSpec, arguments: Any) -> JSON:
    """Validate call arguments against the spec; null values count as absent."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise InputError(f"{spec.name} takes a JSON object of named arguments")
    unknown = sorted(set(arguments) - set(spec.properties))
    if unknown:
        accepted = ", ".join(spec.properties) or "no arguments"
        raise InputError(f"{spec.name} does not take {', '.join(map(repr, unknown))}; it accepts: {accepted}")
    cleaned = {name: value for name, value in arguments.items() if value is not None}
    for name in spec.required:
        if name not in cleaned:
            raise InputError(f"{spec.name} needs {name!r}: {spec.properties[name].get('description', '')}".rstrip(": "))
    for name, value in cleaned.items():
        _check_storable(value, name)
        _check_value(value, spec.properties[name], name)
    return cleaned


MAX_DEPTH = 64
_SURROGATE = re.compile("[\ud800-\udfff]")


def _check_storable(value: Any, where: str) -> None:
    """Refuse what a JSON log line cannot hold faithfully: deep nesting, huge or non-finite numbers,
    unpaired surrogates. Iterative, so hostile nesting cannot exhaust the stack."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise InputError(f"{where} is nested more than {MAX_DEPTH} levels deep; flatten it")
        if isinstance(item, dict):
            stack += [(part, depth + 1) for pair in item.items() for part in pair]
        elif isinstance(item, list):
            stack += [(part, depth + 1) for part in item]
        elif isinstance(item, int) and not isinstance(item, bool) and not -(2**63) <= item < 2**64:
            raise InputError(f"{where} holds a whole number beyond 64 bits; send it as a string")
        elif isinstance(item, float) and not math.isfinite(item):
            raise InputError(f"{where} holds NaN or infinity; send a finite number")
        elif isinstance(item, str) and _SURROGATE.search(item):
            raise InputError(f"{where} holds an unpaired UTF-16 surrogate; send valid Unicode text")
