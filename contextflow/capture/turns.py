"""A turn as capture stores it: plain data, bounded, with `<private>` text dropped.

`Turn` collects what one client record says about one turn (the parsers in claude.py, codex.py
and gemini.py fill it); `Turn.data(root)` is the bounded dict stored as the event's `turn`.
Plain classes only: the Stop hook imports this module before it knows there is work to do.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from contextflow.core.text import cut

TURN_KIND = "capture.turn"  # the event kind of one captured turn
MAX_PROMPT = 200
MAX_FINAL = 1_000
MAX_COMMAND = 300
MAX_ERROR = 200
MAX_ITEMS = 20  # files of each kind, commands, errors, todos per turn
MAX_TURN_BYTES = 4_000

_PRIVATE = re.compile(r"<private>.*?(</private>|$)", re.S | re.I)
_HOOK_CONTEXT = re.compile(r"^\s*<hook_context>.*?</hook_context>\s*", re.S)
_TESTS = re.compile(
    r"(^|[\s;&|(/])(pytest|py\.test|unittest|tox|nox|npm (run )?test|yarn test|pnpm test|npx (jest|vitest)|jest|"
    r"vitest|go test|cargo test|mvn test|gradle test|\./gradlew test|rspec|phpunit|ctest|make test|"
    r"bash scripts/test|scripts/test)\b"
)


def decoded(lines: Iterable[bytes], counts: dict[str, int], skip: Callable[[bytes], bool]) -> Iterator[Any]:
    """Each line `skip` does not pass over, as JSON; a line that is not JSON is counted as bad."""
    for line in lines:
        if skip(line):
            continue
        try:
            yield json.loads(line)
        except ValueError:
            counts["bad"] = counts.get("bad", 0) + 1


def without_private(text: str) -> str:
    """The text with every `<private>...</private>` span (an unclosed one to the end) removed."""
    return _PRIVATE.sub("", text) if "<" in text else text


def clip(text: str, limit: int) -> str:
    return cut(without_private(text).strip(), limit, "…", tidy=True)


def first_line(text: str, limit: int = MAX_PROMPT) -> str:
    text = _HOOK_CONTEXT.sub("", without_private(text))
    for line in text.splitlines():
        if line.strip():
            return clip(line, limit)
    return ""


def is_test_command(command: str) -> bool:
    return bool(_TESTS.search(command))


def relative(path: str, root: str | None) -> str:
    """`path` relative to the repository root when inside it, else as given."""
    path = path.removeprefix("file://")
    if root and os.path.isabs(path):
        try:
            inside = os.path.relpath(path, root)
        except ValueError:
            return path
        if not inside.startswith(".."):
            return inside
    return path


class Turn:
    """What one turn did, as read so far. `continued`: the read began inside this turn."""

    def __init__(self, prompt: str = "", continued: bool = False) -> None:
        self.prompt = first_line(prompt)
        self.continued = continued
        self.files: dict[str, list[str]] = {"created": [], "edited": [], "read": []}
        self.commands: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.todos: list[dict[str, str]] | None = None
        self.final = ""

    def file(self, kind: str, path: object) -> None:
        if isinstance(path, str) and path and kind in self.files:
            bucket = self.files[kind]
            if path not in bucket:
                bucket.append(path)

    def command(self, command: object, exit_code: int | None, output: str = "") -> None:
        if not isinstance(command, str) or not command.strip():
            return
        self.commands.append({"command": command, "exit": exit_code})
        if exit_code:
            detail = first_line(output, MAX_ERROR) if output else ""
            self.error(f"`{clip(command, 80)}` exited {exit_code}" + (f": {detail}" if detail else ""))

    def error(self, text: str) -> None:
        self.errors.append(clip(text, MAX_ERROR))

    def set_todos(self, items: list[tuple[object, object]]) -> None:
        self.todos = [{"text": clip(str(t), 120), "status": str(s)} for t, s in items if isinstance(t, str) and t]

    def set_final(self, text: object) -> None:
        if isinstance(text, str) and text.strip():
            self.final = text

    def has_activity(self) -> bool:
        return bool(any(self.files.values()) or self.commands or self.errors or self.todos is not None)

    def data(self, root: str | None) -> dict[str, Any]:
        """The bounded record: ~MAX_TURN_BYTES at most (lists are cut first, then the final text)."""
        files = {k: [relative(p, root) for p in v][:MAX_ITEMS] for k, v in self.files.items() if v}
        commands = [{"command": clip(c["command"], MAX_COMMAND), "exit": c["exit"]} for c in self.commands]
        tests = [c for c in commands if is_test_command(c["command"])]
        record: dict[str, Any] = {
            "request": self.prompt,
            "files": files,
            "commands": commands[-MAX_ITEMS:],
            "tests": [{**t, "passed": t["exit"] == 0} for t in tests][-MAX_ITEMS:],
            "errors": self.errors[-MAX_ITEMS:],
            "final": clip(self.final, MAX_FINAL),
        }
        if self.todos is not None:
            record["todos"] = self.todos[:MAX_ITEMS]
        if self.continued:
            record["continued"] = True
        while len(repr(record)) > MAX_TURN_BYTES and _shrink(record):
            pass
        return {name: value for name, value in record.items() if value not in ("", [], {})}


def _shrink(record: dict[str, Any]) -> bool:
    for name in ("commands", "errors", "todos", "tests"):
        items = record.get(name)
        if isinstance(items, list) and len(items) > 3:
            del items[: len(items) // 2]
            return True
    for items in record["files"].values():
        if len(items) > 3:
            del items[3:]
            return True
    if len(record["final"]) > 200:
        record["final"] = cut(record["final"], 200, "…", keep=200)
        return True
    return False
