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

TURN_KIND = "capture.turn"  # the event kind of one captured turn
MAX_PROMPT = 200
MAX_FINAL = 1_000
MAX_COMMAND = 300
MAX_ERROR = 200
MAX_ITEMS = 20  # files of each kind, commands, errors, todos per turn
MAX_TURN_BYTES = 4_000
MAX_PROSE = 20_000  # characters of the turn's assistant prose read for its substance
_HANDOFF_TOOL = "write_shared_handoff"
_HANDOFF_COMMAND = re.compile(r"(^|[\s;&|(/])contextflow\s+handoff\b")

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
    text = without_private(text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


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
        self.prose: list[str] = []  # every assistant text of the turn, in order (the final one last)
        self.handoffs: list[dict[str, Any]] = []  # handoffs the agent wrote in this turn (tool or CLI)

    def file(self, kind: str, path: object) -> None:
        if isinstance(path, str) and path and kind in self.files:
            bucket = self.files[kind]
            if path not in bucket:
                bucket.append(path)

    def command(self, command: object, exit_code: int | None, output: str = "") -> None:
        if not isinstance(command, str) or not command.strip():
            return
        entry: dict[str, Any] = {"command": command, "exit": exit_code}
        if _HANDOFF_COMMAND.search(command) and exit_code == 0:
            self.handoff_written(_cli_summary(command))
        if exit_code:
            from contextflow.capture.outcomes import error_line

            detail = error_line(without_private(output), MAX_ERROR) if output else ""
            if detail:
                entry["error"] = detail
            self.error(f"`{clip(command, 80)}` exited {exit_code}" + (f": {detail}" if detail else ""))
        self.commands.append(entry)

    def tool_call(self, name: object, args: object) -> None:
        """A tool the model called: a handoff written through contextflow's tool is noted."""
        if isinstance(name, str) and name.rsplit("__", 1)[-1].rsplit("_contextflow_", 1)[-1] == _HANDOFF_TOOL:
            summary = args.get("summary") if isinstance(args, dict) else None
            files = args.get("files") if isinstance(args, dict) else None
            self.handoff_written(summary, files)

    def handoff_written(self, summary: object, files: object = None) -> None:
        if isinstance(summary, str) and summary.strip():
            entry: dict[str, Any] = {"summary": clip(summary, MAX_PROMPT)}
            if isinstance(files, list):
                entry["files"] = [f for f in files if isinstance(f, str) and f][:MAX_ITEMS]
            self.handoffs.append(entry)

    def error(self, text: str) -> None:
        self.errors.append(clip(text, MAX_ERROR))

    def set_todos(self, items: list[tuple[object, object]]) -> None:
        self.todos = [{"text": clip(str(t), 120), "status": str(s)} for t, s in items if isinstance(t, str) and t]

    def set_final(self, text: object) -> None:
        if isinstance(text, str) and text.strip():
            self.final = text
            if not self.prose or self.prose[-1] != text:
                self.prose.append(text)

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
        from contextflow.capture.substance import extract

        record.update(extract(without_private("\n".join(self.prose))[-MAX_PROSE:]))
        if self.handoffs:
            record["handoff"] = self.handoffs[-1]
        if self.continued:
            record["continued"] = True
        while len(repr(record)) > MAX_TURN_BYTES and _shrink(record):
            pass
        return {name: value for name, value in record.items() if value not in ("", [], {})}


def _cli_summary(command: str) -> str | None:
    """The summary a `contextflow handoff` command line gives (its first positional or --summary)."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        return None
    after = words[words.index("handoff") + 1 :] if "handoff" in words else []
    for n, word in enumerate(after):
        if word == "--summary" and n + 1 < len(after):
            return after[n + 1]
        if word.startswith("--summary="):
            return word.split("=", 1)[1]
    skip = False
    for word in after:
        if skip:
            skip = False
        elif word.startswith("--"):
            skip = "=" not in word
        elif word not in ("&&", "||", ";", "|"):
            return word
        else:
            return None
    return None


def _shrink(record: dict[str, Any]) -> bool:
    for name in ("commands", "errors", "todos", "tests", "decisions", "questions", "todos_said", "resolved"):
        items = record.get(name)
        if isinstance(items, list) and len(items) > 3:
            del items[: len(items) // 2]
            return True
    for items in record["files"].values():
        if len(items) > 3:
            del items[3:]
            return True
    if len(record["final"]) > 200:
        record["final"] = record["final"][:200] + "…"
        return True
    return False
