"""`--stdin`: many items of one command in one process and one locked write.

`contextflow note --stdin --agent codex < notes.jsonl` reads one JSON object per line, each the
tool's arguments (`{"text": "...", "project": "web"}`); flags given on the command line are the
defaults every line may override. Each line is checked and run through the same function as a
single call, with the store collecting the appends instead of writing them; then all of them are
written at once (`Store.append_many`). All or nothing: a bad line (not JSON, not an object, a
wrong argument, a refused secret) stops the batch with its line number and nothing of it is stored.
Each line sees the earlier ones, and nothing is folded in memory for it: the lines are read first,
then the derived tables are brought up to date and held in one SQLite write transaction that is never
committed (`Tables.overlaid`); each item's provisional events add their rows to it (when something
is read next), so every read queries the tables by the same SQL as any call and finds the batch's
earlier items. Leaving rolls those rows back, whether the batch was written or dropped; the written
events are then caught up from the logs like any write. While held, the tables are as they were at
the batch's start (another process's writes meanwhile are read after it), and other processes answer
beside them (`core/rest.py`). Where the tables do not open (a read-only or full state folder), every
call folds the logs in memory, and a batch folds its items into that.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from contextflow.app import App
    from contextflow.core.events import Event
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


@contextlib.contextmanager
def collecting(app: App) -> Iterator[list[Event]]:
    """Appends inside are collected (`Store.collecting`) and their rows added to the derived tables held
    for the batch (`Tables.overlaid`), so reads inside see them; leaving writes them in one append."""
    with app.tables().overlaid() as provisional, app.store.collecting(provisional) as collected:
        yield collected


def run_batch(op: Operation, app: App, defaults: dict[str, Any], stream: TextIO | None = None) -> tuple[int, list[Any]]:
    """Check and run every line, then store them all in one write; (items stored, each line's reply data)."""
    from contextflow.core import jsonio
    from contextflow.core.errors import ContextflowError, InputError, call, tool
    from contextflow.operations.arguments import check_arguments

    stream = sys.stdin if stream is None else stream
    if op.name != BATCH_OPERATIONS[op.name]:
        op, defaults = line_operation(op), {}  # the command's own flags (a file) do not apply to lines
    replies: list[Reply] = []
    numbered = list(lines_of(stream))  # all read first: the tables are held only while the items run
    with collecting(app) as collected:
        for number, line in numbered:
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
