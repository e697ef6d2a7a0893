"""One large JSON document read a piece at a time: the members of its top-level object, and each element
of a top-level array on its own, so a 1 GB export never sits in memory whole.

`members(handle, path)` yields, in the document's order:

- `("value", key, value)` for a top-level member that is not an array (parsed whole);
- `("array", key, None)` where a top-level array begins, then `("item", key, element)` for each of its
  elements (each parsed whole, `json`'s C scanner on a window of the text).

A document that is not an object, is not valid JSON, or holds one value longer than `MAX_VALUE_CHARS`
raises SourceError naming the line.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from contextflow.imports.model import SourceError

READ_BYTES = 1 << 20
MAX_VALUE_CHARS = 64 * 1024 * 1024  # one member or element; a longer one is refused
_WHITESPACE = " \t\r\n"
_decoder = json.JSONDecoder()


class _Text:
    """A window on the document's text: what is not read yet is read as a value needs it."""

    def __init__(self, handle: BinaryIO, path: Path | str) -> None:
        self.handle, self.path = handle, path
        self.decode = codecs.getincrementaldecoder("utf-8-sig")("strict").decode
        self.buffer, self.at, self.lines_before, self.ended = "", 0, 0, False

    def _more(self) -> bool:
        if self.ended:
            return False
        raw = self.handle.read(READ_BYTES)
        self.ended = not raw
        try:
            text = self.decode(raw, final=self.ended)
        except UnicodeDecodeError:
            raise self.error("not UTF-8 text") from None
        self.lines_before += self.buffer.count("\n", 0, self.at)
        self.buffer, self.at = self.buffer[self.at :] + text, 0
        return True

    def error(self, problem: str) -> SourceError:
        return SourceError(self.path, problem, self.lines_before + self.buffer.count("\n", 0, self.at) + 1)

    def peek(self) -> str:
        """The next character that is not white space ("" at the end), not consumed."""
        while True:
            while self.at < len(self.buffer) and self.buffer[self.at] in _WHITESPACE:
                self.at += 1
            if self.at < len(self.buffer) or not self._more():
                return self.buffer[self.at : self.at + 1]

    def take(self, expected: str) -> str:
        found = self.peek()
        if not found or found not in expected:
            shown = repr(found) if found else "the end of the file"
            raise self.error(f"not valid JSON (expected {' or '.join(map(repr, expected))}, found {shown})")
        self.at += 1
        return found

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                value, end = _decoder.raw_decode(self.buffer, self.at)
            except json.JSONDecodeError as exc:
                if len(self.buffer) - self.at < MAX_VALUE_CHARS and self._more():
                    continue
                problem = exc.msg if len(self.buffer) - self.at < MAX_VALUE_CHARS else "a value over 64 MiB"
                raise self.error(f"not valid JSON ({problem})") from None
            if end == len(self.buffer) and not self.ended and self._more():
                continue  # a number may go on in what is not read yet
            self.at = end
            return value


def members(
    handle: BinaryIO, path: Path | str, not_object: str = "expected a JSON object"
) -> Iterator[tuple[str, str, Any]]:
    text = _Text(handle, path)
    if text.peek() != "{":
        raise SourceError(path, not_object if text.peek() else "empty: there is nothing to import")
    text.take("{")
    if text.peek() == "}":
        text.take("}")
    else:
        while True:
            key = text.value()
            if not isinstance(key, str):
                raise text.error("not valid JSON (a member name must be a string)")
            text.take(":")
            if text.peek() != "[":
                yield "value", key, text.value()
            else:
                text.take("[")
                yield "array", key, None
                if text.peek() == "]":
                    text.take("]")
                else:
                    while True:
                        yield "item", key, text.value()
                        if text.take(",]") == "]":
                            break
            if text.take(",}") == "}":
                break
    if text.peek():
        raise text.error("not valid JSON (more after the document's end)")
