"""`--stdin`: many items of one command in one process and one locked write.

`contextflow note --stdin --agent codex < notes.jsonl` reads one JSON object per line, each the
tool's arguments (`{"text": "...", "project": "web"}`); flags given on the command line are the
defaults every line may override. Each line is checked and run through the same function as a
single call, with the store collecting the appends instead of writing them; then all of them are
written at once (`Store.append_many`). All or nothing: a bad line (not JSON, not an object, a
wrong argument, a refused secret) stops the batch with its line number and nothing of it is stored.
Each line sees the earlier ones (they are folded provisionally, then forgotten and read back).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from contextflow.app import App
    from contextflow.operations.spec import Operation, Reply

# the commands that take --stdin, and the tool each line runs as (`conversations save` reads a file)
BATCH_OPERATIONS = {
    "append_shared_note": "append_shared_note",
    "write_shared_handoff": "write_shared_handoff",
    "context_set": "context_set",
    "conversations save": "save_conversation",
}
BATCH_WORDS = frozenset({"note", "handoff", "context", "conversations"})  # their first command words


def line_operation(op: Operation) -> Operation:
    from contextflow.operations.spec import operations

    name = BATCH_OPERATIONS[op.name]
    return op if name == op.name else next(other for other in operations() if other.name == name)


def lines_of(stream: TextIO) -> Iterable[tuple[int, str]]:
    for number, line in enumerate(stream, 1):
        if line.strip():
            yield number, line


def run_batch(op: Operation, app: App, defaults: dict[str, Any], stream: TextIO | None = None) -> tuple[int, list[Any]]:
    """Check and run every line, then store them all in one write; (items stored, each line's reply data)."""
    from contextflow.core import jsonio
    from contextflow.core.errors import ContextflowError, InputError, call, tool
    from contextflow.operations.arguments import check_arguments

    stream = sys.stdin if stream is None else stream
    if op.name != BATCH_OPERATIONS[op.name]:
        op, defaults = line_operation(op), {}  # the command's own flags (a file) do not apply to lines
    replies: list[Reply] = []
    with app.store.collecting() as collected:
        for number, line in lines_of(stream):
            try:
                item = jsonio.loads(line)
            except jsonio.DecodeError as exc:
                raise InputError(f"line {number} is not valid JSON ({exc.msg}); nothing was stored") from None
            if not isinstance(item, dict):
                raise InputError(
                    f"line {number} must be a JSON object of {op.name}'s arguments such as "
                    f'{{"text": "..."}}, got {type(item).__name__}; nothing was stored'
                )
            try:
                reply = op.run(app, check_arguments(op, {**defaults, **item}))
            except ContextflowError as exc:  # a line's arguments are its JSON keys; operations stay marked
                said = exc.worded(tool=tool, call=call) if isinstance(exc, InputError) else str(exc)
                raise InputError(f"line {number}: {said}; nothing was stored") from None
            if not reply.shown:
                raise InputError(f"line {number}: {op.name} cannot run in a batch")
            replies.append(reply)
        stored = len(collected)
    return stored, [reply.data for reply in replies]
