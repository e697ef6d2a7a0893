"""A turn as capture stores it: plain data, bounded, with `<private>` text dropped and secrets redacted.

`Turn` collects what one client record says about one turn (the parsers in claude.py, codex.py
and gemini.py fill it); `Turn.data(root)` is the bounded dict stored as the event's `turn`.
Plain classes only: the Stop hook imports this module before it knows there is work to do.

Secrets are redacted before anything is cut: a clip inside a secret would leave its head, which no
rule knows once its tail is gone. A turn keeps its texts whole (up to MAX_RAW) until `data`, which
reads them all for secrets first (`secrets.Evidence`): a value found secret anywhere in the turn (a
command's `export API_TOKEN=...`, a password named in the prompt, a tool's output) is redacted
wherever the turn repeats it (the prompt, a command, an error line, the reply, the handoff).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from contextflow.capture.fields import TURN_KIND as TURN_KIND  # the event kind, said once there
from contextflow.core import regexes
from contextflow.core.private import without_private as without_private
from contextflow.core.text import cut

MAX_PROMPT = 200
MAX_FINAL = 1_000
MAX_COMMAND = 300
MAX_ERROR = 200
MAX_ITEMS = 20  # files of each kind, commands, errors, todos per turn
MAX_PATH = 1_024  # a file path longer than this is not a path anyone typed: dropped, not stored
MAX_TURN_BYTES = 4_000  # the stored record's JSON, in UTF-8 bytes
MAX_PROSE = 20_000  # characters of the turn's assistant prose read for its substance
MAX_RAW = 8_000  # characters of one text kept until the record is built
MAX_RAW_COMMAND = 2_000  # of a command (a turn may run thousands): far past MAX_COMMAND, so a secret is whole
MAX_OUTPUT = 16_000  # characters of a command's output read for secrets the turn may repeat
MAX_OUTPUTS = 64_000  # characters of output kept per turn for that (the latest)
# a word the turn may repeat from a tool's output: 6+ characters, with a digit or a symbol
_WORD = regexes.compile(r"[A-Za-z0-9_\-+/.~!@#$%^&*]{6,}")
_HANDOFF_TOOL = "write_shared_handoff"
_HANDOFF_COMMAND = regexes.compile(r"(^|[\s;&|(/])contextflow\s+handoff\b")
EXIT_RANGE = range(-(1 << 31), 1 << 31)  # an exit code outside it is unknown (None)
UNREADABLE = (RecursionError, ValueError, TypeError, AttributeError, KeyError, IndexError, OverflowError)

_HOOK_CONTEXT = regexes.compile(r"^\s*<hook_context>.*?</hook_context>\s*", re.S)


def decoded(lines: Iterable[bytes], counts: dict[str, int], skip: Callable[[bytes], bool]) -> Iterator[Any]:
    """Each line `skip` does not pass over, as JSON; a line that is not JSON (or nested too deep
    to decode) is counted as bad."""
    for line in lines:
        if skip(line):
            continue
        try:
            yield json.loads(line)
        except (ValueError, RecursionError):
            counts["bad"] = counts.get("bad", 0) + 1


def each(entries: Iterable[Any], counts: dict[str, int], handle: Callable[[Any], None]) -> None:
    """`handle` each entry; an entry it cannot take (it raises on its shape) is skipped and counted
    as bad: one odd line never stops a read."""
    for entry in entries:
        try:
            handle(entry)
        except UNREADABLE:
            counts["bad"] = counts.get("bad", 0) + 1


def redacted_text(text: str) -> str:
    from contextflow.core.secrets import redact_text

    return redact_text(text)[0]


def clip(text: str, limit: int) -> str:
    """`text` without `<private>` spans, secrets redacted, then cut to `limit` (never the other way)."""
    return _cut(redacted_text(without_private(text)), limit)


def _cut(text: str, limit: int) -> str:
    return cut(text.strip(), limit, "…", tidy=True)


def first_line(text: str, limit: int = MAX_PROMPT) -> str:
    return clip(_first(text), limit)


def _first(text: str) -> str:
    for line in _HOOK_CONTEXT.sub("", without_private(text)).splitlines():
        if line.strip():
            return line
    return ""


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
        # the whole prompt (its injected context dropped first): the record's is made with the turn's evidence
        self._prompt = _HOOK_CONTEXT.sub("", without_private(prompt))[:MAX_RAW]
        self.continued = continued
        self.files: dict[str, list[str]] = {"created": [], "edited": [], "read": []}
        self.commands: list[dict[str, Any]] = []
        self.errors: list[tuple[str, str]] = []  # (the command, or ""; what went wrong)
        self.todos: list[dict[str, str]] | None = None
        self.final = ""
        self.messages: list[tuple[str, str]] = []  # (key, text) of each assistant message: directives are read here
        self.handoffs: list[dict[str, Any]] = []  # handoffs the agent wrote in this turn (tool or CLI)
        self.found: dict[str, str] = {}  # secrets found in failing commands' output (value -> kind)
        self.outputs: list[str] = []  # the latest output of the commands that passed, for `_evidence`

    @property
    def prompt(self) -> str:
        """The prompt's first line, as a record shows it (redacted by the rules alone)."""
        return first_line(self._prompt)

    def say(self, key: object, text: object) -> None:
        """One assistant message (`key`: the client's id for it), for the directives; not stored."""
        if isinstance(text, str) and text.strip():
            self.messages.append((key if isinstance(key, str) and key else "", text))

    def file(self, kind: str, path: object) -> None:
        if isinstance(path, str) and path and len(path) <= MAX_PATH and kind in self.files:
            bucket = self.files[kind]
            if path not in bucket and len(bucket) < 4 * MAX_ITEMS:
                bucket.append(path)

    def command(self, command: object, exit_code: object, output: str = "", failed: bool = False) -> None:
        """One command run: its exit code (None when unknown or out of range); `failed`: the client
        says it failed even when its code is unknown."""
        if not isinstance(command, str) or not command.strip():
            return
        if isinstance(exit_code, bool) or not isinstance(exit_code, int) or exit_code not in EXIT_RANGE:
            exit_code = None
        entry: dict[str, Any] = {"command": without_private(command[:MAX_RAW_COMMAND]), "exit": exit_code}
        if exit_code == 0 and _HANDOFF_COMMAND.search(command):
            self.handoff_written(_cli_summary(command[:8_000]))
        if exit_code or (failed and exit_code is None):
            from contextflow.capture.outcomes import error_line

            detail = error_line(self._read_output(output[-64_000:]), MAX_ERROR) if output else ""
            if detail:
                entry["error"] = detail
            how = f"exited {exit_code}" if exit_code else "failed (exit code unknown)"
            self.errors.append((entry["command"], how + (f": {detail}" if detail else "")))
        elif output.strip():
            self.outputs.append(output[-MAX_OUTPUT:])
            while sum(map(len, self.outputs)) > MAX_OUTPUTS:
                del self.outputs[0]
        self.commands.append(entry)

    def _read_output(self, output: str) -> str:
        """A command's output with its secrets redacted; they are remembered for the rest of the turn."""
        from contextflow.core.secrets import redact_values

        text, _, values = redact_values(without_private(output))
        self.found.update(values)
        return text

    def tool_call(self, name: object, args: object) -> None:
        """A tool the model called: a handoff written through contextflow's tool is noted."""
        if isinstance(name, str) and name.rsplit("__", 1)[-1].rsplit("_contextflow_", 1)[-1] == _HANDOFF_TOOL:
            summary = args.get("summary") if isinstance(args, dict) else None
            files = args.get("files") if isinstance(args, dict) else None
            self.handoff_written(summary, files)

    def handoff_written(self, summary: object, files: object = None) -> None:
        if isinstance(summary, str) and summary.strip():
            entry: dict[str, Any] = {"summary": without_private(summary[:MAX_RAW])}
            if isinstance(files, list):
                entry["files"] = [f for f in files if isinstance(f, str) and 0 < len(f) <= MAX_PATH][:MAX_ITEMS]
            self.handoffs.append(entry)

    def prose(self) -> str:
        """The turn's assistant text, every message (the final reply too), at most MAX_PROSE characters."""
        texts = [text for _, text in self.messages]
        if self.final and (not texts or self.final.strip() not in texts[-1]):
            texts.append(self.final)
        return "\n".join(texts)[-MAX_PROSE:]

    def error(self, text: str) -> None:
        self.errors.append(("", without_private(text[: 8 * MAX_ERROR])))

    def set_todos(self, items: list[tuple[object, object]]) -> None:
        todos = [(t, s) for t, s in items if isinstance(t, str) and t][: 4 * MAX_ITEMS]
        self.todos = [{"text": without_private(t[:1_000]), "status": without_private(str(s)[:100])} for t, s in todos]

    def set_final(self, text: object) -> None:
        if isinstance(text, str) and text.strip():
            self.final = text

    def has_activity(self) -> bool:
        return bool(any(self.files.values()) or self.commands or self.errors or self.todos is not None)

    def _evidence(self) -> Any:
        """`secrets.Evidence` that has read every text of the turn (so it knows every secret in it)."""
        from contextflow.core.secrets import Evidence

        evidence = Evidence(self.found)
        texts = [self._prompt, *(c["command"] for c in self.commands), *(e for pair in self.errors for e in pair)]
        texts += [t[k] for t in self.todos or [] for k in ("text", "status")] + [h["summary"] for h in self.handoffs]
        texts.append(without_private(self.prose()))
        evidence.learn_all(texts)
        evidence.learn_all(_lines_repeating(self.outputs, texts))
        return evidence

    def data(self, root: str | None) -> dict[str, Any]:
        """The bounded record: ~MAX_TURN_BYTES at most (lists are cut first, then the final text).
        Every text is redacted with the whole turn's evidence before it is cut."""
        safe = self._evidence().safe
        files = {k: [relative(p, root) for p in v][:MAX_ITEMS] for k, v in self.files.items() if v}
        commands = [
            {
                **c,
                "command": _cut(safe(c["command"]), MAX_COMMAND),
                **({"error": safe(c["error"])} if "error" in c else {}),
            }
            for c in self.commands
        ]
        from contextflow.capture.outcomes import is_test_command  # loaded with the digest that stores turns

        tests = [{"command": c["command"], "exit": c["exit"]} for c in commands if is_test_command(c["command"])]
        errors = [
            _cut((f"`{_cut(safe(command), 80)}` " if command else "") + safe(what), MAX_ERROR)
            for command, what in self.errors[-MAX_ITEMS:]
        ]
        record: dict[str, Any] = {
            "request": _cut(safe(_first(self._prompt)), MAX_PROMPT),
            "files": files,
            "commands": commands[-MAX_ITEMS:],
            "tests": [{**t, "passed": t["exit"] == 0} for t in tests][-MAX_ITEMS:],
            "errors": errors,
            "final": _cut(safe(without_private(self.final)), MAX_FINAL),
        }
        if self.todos is not None:
            record["todos"] = [
                {"text": _cut(safe(t["text"]), 120), "status": _cut(safe(t["status"]), 40)}
                for t in self.todos[:MAX_ITEMS]
            ]
        from contextflow.capture.prose import extract

        record.update(extract(safe(without_private(self.prose()))))
        if self.handoffs:
            handoff = self.handoffs[-1]
            record["handoff"] = {**handoff, "summary": _cut(safe(handoff["summary"]), MAX_PROMPT)}
        if self.continued:
            record["continued"] = True
        while record_bytes(record) > MAX_TURN_BYTES and _shrink(record):
            pass
        return {name: value for name, value in record.items() if value not in ("", [], {})}


def _lines_repeating(outputs: list[str], texts: list[str]) -> list[str]:
    """The lines of `outputs` holding a word (with a digit or a symbol) that `texts` repeat: where a
    secret the turn repeats would be (`cat .env`, then the token in the reply). Outputs are stored
    nowhere else, so the lines the turn does not repeat need no scan."""
    if not outputs:
        return []
    said = {word for word in _WORD.findall("\n".join(texts)) if not word.isalpha()}
    lines = []
    for output in map(without_private, outputs):
        if not said.isdisjoint(_WORD.findall(output)):
            lines += [line for line in output.splitlines() if not said.isdisjoint(_WORD.findall(line))]
    return lines


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
        elif word in ("&&", "||", ";", "|"):
            return None
        else:
            return word
    return None


def record_bytes(record: dict[str, Any]) -> int:
    """The record's size as stored: its JSON in UTF-8 bytes."""
    return len(json.dumps(record, ensure_ascii=False).encode("utf-8", "surrogatepass"))


def _shrink(record: dict[str, Any]) -> bool:
    """Make the record smaller by one step (lists first, oldest items out, then the final text);
    False when nothing is left to cut."""
    for floor in (3, 0):
        for name in ("commands", "errors", "todos", "tests", "decisions", "questions", "todos_said", "resolved"):
            items = record.get(name)
            if isinstance(items, list) and len(items) > floor:
                del items[: max(1, (len(items) - floor) // 2)]
                return True
        handoff = record.get("handoff")
        for items in [*record["files"].values(), handoff.get("files", []) if isinstance(handoff, dict) else []]:
            if len(items) > floor:
                del items[max(floor, len(items) // 2) :]
                return True
        if floor and len(record["final"]) > 200:
            record["final"] = cut(record["final"], 200, "…")  # 200 characters with the mark: progress
            return True
    if record["final"]:
        record["final"] = ""
        return True
    return False
