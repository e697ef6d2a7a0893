"""The directives (`<ctx:...>`) of each turn, carried out once, and what waits for the next prompt.

The Stop hook hands over what the transcript reader found (`transcript.Reading`): each assistant
message of the new turns, plus the final reply in the payload (the transcript lags the hook). A
directive is carried out once per turn: the keys of those carried out in the current turn are
kept, and a new prompt starts a new turn (the same directive in a later turn runs again). A read
that began at the transcript's first byte (a first read, a rewritten file) carries out the last
turn's directives only. `<private>` text is never read for directives.

Machine-local state (`<store state>/hooks/`, per session): `pending-<hash>.json` = `{"items":
[text injected at the next prompt], "turn": [directive keys of the current turn]}`, every item
redacted first; `current-task.txt`, the task in progress. Stdlib only until there is work: every
prompt a person types runs a hook.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextflow.core import hashing

if TYPE_CHECKING:
    from contextflow.app import App
    from contextflow.capture.payload import Hook
    from contextflow.capture.transcript import Reading
    from contextflow.graph import directives

KEEP_KEYS = 500  # directive keys remembered for the current turn
MAX_ITEMS = 50  # replies waiting for the next prompt


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))  # ASCII: a lone surrogate read from a transcript still writes


def _pending_path(hooks: Path, session_id: str | None) -> Path:
    key = hashing.sha256(str(session_id or "no-session").encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return hooks / f"pending-{key}.json"


def load_pending(hooks: Path, session_id: str | None) -> dict[str, Any]:
    from contextflow.capture.read_position import read_regular

    try:
        data = json.loads(read_regular(str(_pending_path(hooks, session_id)), 4 << 20))
    except (OSError, ValueError, RecursionError):
        data = None
    return data if isinstance(data, dict) else {"items": [], "turn": []}


def save_pending(hooks: Path, session_id: str | None, data: dict[str, Any]) -> None:
    from contextflow.core.fsutil import atomic_write

    items = [str(item) for item in data.get("items", []) if item][-MAX_ITEMS:]
    if items:
        from contextflow.core.secrets import redact_text

        items = [redact_text(item)[0] for item in items]
    data = {"items": items, "turn": [str(key) for key in data.get("turn", [])][-KEEP_KEYS:]}
    atomic_write(_pending_path(hooks, session_id), _dumps(data).encode(), fsync=False)


def current_task(hooks: Path) -> str | None:
    from contextflow.capture.read_position import read_regular

    try:
        return read_regular(str(hooks / "current-task.txt"), 4_096).decode("utf-8", "replace").strip() or None
    except (OSError, ValueError):
        return None


def set_current_task(hooks: Path, name: str | None) -> None:
    path = hooks / "current-task.txt"
    if name:
        from contextflow.core.fsutil import atomic_write
        from contextflow.core.secrets import redact_text

        atomic_write(path, (redact_text(name)[0] + "\n").encode(), fsync=False)
    else:
        path.unlink(missing_ok=True)


def prompt_submit(hooks: Path, session_id: str | None, budget: int) -> str:
    """What waits for this session's next prompt (used up), within `budget` tokens."""
    pending = load_pending(hooks, session_id)
    items = [str(item) for item in pending.get("items", []) if item]
    if not items:
        return ""
    save_pending(hooks, session_id, {**pending, "items": []})
    text = "\n\n".join(items)
    limit = budget * 4
    return text if len(text) <= limit else text[: limit - 40] + "\n[... clipped to the hook budget]"


def _directive_key(directive: directives.Directive) -> str:
    body = _dumps([directive.name, sorted(directive.attrs.items()), directive.body])
    return "dir:" + hashing.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _directives_in(text: str) -> list[directives.Directive]:
    if "<ctx:" not in text:  # most replies: skip importing the graph machinery
        return []
    from contextflow.core.private import without_private

    text = without_private(text)
    if "<ctx:" not in text:
        return []
    from contextflow.graph import directives

    return directives.parse(text)


def plan(hook: Hook, reading: Reading, done: list[str]) -> tuple[list[directives.Directive], list[str]]:
    """The directives to carry out now, and the keys of those carried out in the current turn."""
    done = list(done)
    todo: list[directives.Directive] = []

    def take(text: str) -> None:
        for directive in _directives_in(text):
            key = _directive_key(directive)
            if key not in done:
                done.append(key)
                todo.append(directive)

    turns = reading.turns[-1:] if reading.from_start else reading.turns
    if reading.missing and hook.prompt:  # a client that sends the turn in the payload (Gemini CLI): a new turn
        done = []
    for turn in turns:
        if not turn.continued:
            done = []
        for _, text in turn.messages:
            take(text)
    if hook.final:
        take(hook.final)
    return todo, done[-KEEP_KEYS:]


def carry_out(hook: Hook, reading: Reading, hooks: Path, open_app: Callable[[], App]) -> tuple[list[str], list[str]]:
    """Carry out the turn's directives not carried out before, written under the hook's client;
    returns what was done and what failed. The store is opened only when there is something to do."""
    pending = load_pending(hooks, hook.session_id)
    before = [str(key) for key in pending.get("turn", []) if isinstance(key, str)]
    todo, done = plan(hook, reading, before)
    if not todo:
        if done != before:
            save_pending(hooks, hook.session_id, {**pending, "turn": done})
        return [], []
    task = current_task(hooks)
    from contextflow.graph import directives

    runner = directives.Runner(open_app(), task, hook.client)  # (borrowed: the caller closes it)
    outcome = runner.run(todo)
    if runner.task != task:
        set_current_task(hooks, runner.task)
    items = [str(item) for item in pending.get("items", [])] + outcome.pending
    if outcome.done:
        from contextflow.core.text import quote

        items.append("## ctx\n\n" + quote("\n".join(outcome.done)))
    save_pending(hooks, hook.session_id, {"items": items, "turn": done})
    return outcome.done, outcome.errors
