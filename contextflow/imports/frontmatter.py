"""Markdown front matter: the small, safe subset of YAML that notes use, parsed by hand.

    ---
    title: Coffee Brewing Methods        # a scalar: plain, "double" or 'single' quoted
    tags: [coffee, brewing]              # a flow list of scalars
    aliases:                             # a block list of scalars
      - brew
    status: active
    ---

Scalars stay strings except `true`/`false`, `null`/`~` and plain integers. Nested mappings,
anchors, tags (`!!python/...`) and multi-line scalars are refused with the line they are on: no
YAML library is loaded, so nothing in a note can run code or build objects.
"""

from __future__ import annotations

import re
from typing import Any

from contextflow.core import regexes
from contextflow.core.errors import InputError

_KEY_NAME = regexes.compile(r"[A-Za-z0-9_][A-Za-z0-9_ .-]*")
_INT = regexes.compile(r"^[-+]?\d{1,18}$")


class FrontMatterError(InputError):
    def __init__(self, line: int, problem: str) -> None:
        self.line = line
        super().__init__(problem)


def split(text: str) -> tuple[dict[str, Any], str, int]:
    """(front matter, body, the body's first line number); no front matter: ({}, text, 1)."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return {}, text, 1
    for end in range(1, len(lines)):
        if lines[end].rstrip() in ("---", "..."):
            return parse(lines[1:end], first_line=2), "\n".join(lines[end + 1 :]), end + 2
    raise FrontMatterError(1, "the front matter that starts here has no closing --- line")


def _strip_comment(value: str) -> str:
    if value.startswith(("'", '"')):
        return value
    return re.sub(r"\s+#.*$", "", value)


def scalar(raw: str, line: int) -> Any:
    value = _strip_comment(raw.strip()).strip()
    if not value:
        return None
    if value[0] in "&*!|>{":
        raise FrontMatterError(
            line, f"unsupported YAML here ({value[:20]!r}): use plain values, quoted strings or lists"
        )
    if value[0] in "\"'":
        quote = value[0]
        if len(value) < 2 or not value.endswith(quote):
            raise FrontMatterError(line, "a quoted value must end with the same quote on the same line")
        inner = value[1:-1]
        return inner.replace("''", "'") if quote == "'" else _unescape(inner, line)
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("null", "~"):
        return None
    if _INT.match(value):
        return int(value)
    return value


def _unescape(text: str, line: int) -> str:
    escapes = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "/": "/"}
    out, index = [], 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            following = text[index + 1]
            if following not in escapes:
                raise FrontMatterError(line, f"unsupported escape \\{following} in a quoted value")
            out.append(escapes[following])
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)


def _flow_list(raw: str, line: int) -> list[Any]:
    inner = raw.strip()[1:-1].strip()
    if not inner:
        return []
    items, current, quote = [], "", ""
    for char in inner:
        if quote:
            current += char
            quote = "" if char == quote else quote
        elif char in "\"'":
            current += char
            quote = char
        elif char == ",":
            items.append(current)
            current = ""
        elif char in "[]{}":
            raise FrontMatterError(line, "nested lists or mappings are not supported in front matter")
        else:
            current += char
    if quote:
        raise FrontMatterError(line, "a quoted value in this list is not closed")
    items.append(current)
    return [scalar(item, line) for item in items]


def parse(lines: list[str], first_line: int = 1) -> dict[str, Any]:
    result: dict[str, Any] = {}
    current: str | None = None  # the key whose block list is being read
    bare: set[str] = set()  # keys with nothing after the colon and (so far) no list items: null
    for offset, text in enumerate(lines):
        number = first_line + offset
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("-") and (text[0] in " \t-"):
            if current is None:
                raise FrontMatterError(number, "a list item here belongs to no key")
            item = stripped[1:]
            if item and not item[0].isspace():
                raise FrontMatterError(number, "a list item needs a space after the dash")
            bare.discard(current)
            result[current].append(scalar(item, number))
            continue
        if text[0].isspace():
            raise FrontMatterError(number, "nested mappings are not supported in front matter")
        name, colon, after = text.rstrip().partition(":")  # no regex over the whole line: linear time
        key = name.rstrip()
        if not colon or not _KEY_NAME.fullmatch(key) or (after and not after[0].isspace()):
            raise FrontMatterError(number, "expected key: value")
        raw = _strip_comment(after.strip()).strip()
        current = None
        if key in result:
            raise FrontMatterError(number, f"the key {key!r} is given twice")
        if not raw:
            result[key] = []
            current = key
            bare.add(key)
        elif raw.startswith("["):
            if not raw.endswith("]"):
                raise FrontMatterError(number, "a [list] must close on the same line")
            result[key] = _flow_list(raw, number)
        else:
            result[key] = scalar(raw, number)
    return {key: None if key in bare else value for key, value in result.items()}
