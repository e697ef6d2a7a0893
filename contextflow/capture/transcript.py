"""The one transcript reader: a hook call's new transcript bytes into turns, for capture (the
turns stored) and for directives (the assistant messages in them), and the capture state it keeps.

Per-client parser interface (one module per client, named in `PARSERS`):

    parse(lines: list[bytes], counts: dict[str, int], pending: dict[str, Any]) -> list[Turn]

- `lines`: the complete lines appended since the last read (never a line over `read_position.MAX_LINE`);
  skip noise by a prefix test before decoding, decode with `turns.decoded`, take each entry
  through `turns.each` (an entry the parser cannot take is skipped and counted, never fatal);
- `counts["bad"]`: one more for each line or entry that cannot be read (skipped for good: the
  read position moves past it whatever happens);
- `pending`: plain JSON data the parser keeps between reads of one transcript (Claude Code's tool
  calls whose results are not written yet); keep it small, only strings it will need (they are
  redacted and bounded before they are saved); it is emptied when a read restarts at byte 0;
- returns the turns, oldest first: `Turn(prompt)` for each person's prompt, `Turn(continued=True)`
  when the read began inside a turn; each assistant text goes to `turn.say(key, text)` (the
  directives) and the last one to `turn.set_final(text)`.
A new client: a module with `parse`, its line in `PARSERS`, and its tell-tale in `payload.client_of`.

State (machine-local, `<store state>/capture/<hash of the transcript path>.json`): `{"cursor",
"pending", "client", "stored", "skipped", "bad", "last_error", "last_final" (a hash, never the
text), ...}` plus what `core.py` keeps; every string in it passed the secret redaction first.
The "cursor" key holds the read position (`capture/read_position.py`): files stored keep that name.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from typing import Any, NamedTuple

from contextflow.capture import read_position
from contextflow.capture.payload import Hook
from contextflow.capture.turns import UNREADABLE, Turn
from contextflow.core import hashing

PARSERS = {  # client -> capture module
    "claude-code": "claude",
    "codex": "codex",
    "gemini-cli": "gemini",
    "opencode": "opencode",  # its session database (`opencode.read_new`), not a transcript file
    "cursor": "cursor_events",  # the journal `contextflow hook cursor` keeps
}
DEFAULT_PARSER = "claude"  # a client named nowhere else writes Claude Code's format (the most common one)
MAX_STATE_BYTES = 4 << 20
SWEPT = "Swept"  # the event of a read by the sweep (capture/sweep.py): the client stopped writing the transcript
SWEPT_READ = 2 << 20  # bytes a sweep reads of one transcript (a hook's read takes up to read_position.MAX_READ)


class Reading(NamedTuple):
    """What one read found: the turns (all of them, for directives), whether it began at byte 0
    (a first read, or the file was rewritten), and whether there was a transcript to read at all."""

    turns: list[Turn]
    from_start: bool
    missing: bool
    error: str | None = None


def parser(client: str) -> Callable[[list[bytes], dict[str, int], dict[str, Any]], list[Turn]]:
    """The `parse` function of this client's transcripts."""
    parse: Callable[[list[bytes], dict[str, int], dict[str, Any]], list[Turn]]
    parse = import_module(f"contextflow.capture.{PARSERS.get(client, DEFAULT_PARSER)}").parse
    return parse


def parser_of(hook: Hook, payload_client: str) -> str:
    """The capture module that reads this client's transcript (`payload_client`: what the payload
    alone gives away, for a client named by the environment but without a parser)."""
    return PARSERS.get(hook.client) or PARSERS.get(payload_client) or DEFAULT_PARSER


def state_path(state_dir: Path, transcript: str) -> Path:
    folder = state_dir / "capture"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder / (hashing.sha256(transcript.encode("utf-8", "surrogatepass")).hexdigest()[:24] + ".json")


def load_state(path: Path) -> dict[str, Any]:
    """The saved state, or {} (a missing, unreadable, oversized or non-regular file starts afresh)."""
    try:
        data = json.loads(read_position.read_regular(str(path), MAX_STATE_BYTES))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def save_state(path: Path, state: dict[str, Any]) -> None:
    from contextflow.core.fsutil import atomic_write

    pending = state.get("pending")
    pending = {key: value for key, value in pending.items() if value} if isinstance(pending, dict) else {}
    state["pending"] = redacted(pending) if pending else {}  # the redaction's import only when there is text
    atomic_write(path, json.dumps(state, separators=(",", ":")).encode(), fsync=False)


def redacted(value: Any) -> Any:
    """`value` with every secret in its strings replaced (see core.secrets)."""
    from contextflow.core.secrets import nothing_to_redact, redact_text
    from contextflow.core.text import map_strings

    if nothing_to_redact(value):  # one scan of all its text
        return value
    return map_strings(value, lambda text: redact_text(text)[0])


def text_hash(text: str) -> str:
    return hashing.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def note_error(state: dict[str, Any], message: str) -> None:
    state["last_error"] = message[:300]
    state["last_error_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def read(hook: Hook, state: dict[str, Any], parser: str) -> Reading:
    """The turns appended since the state's read position (the read position moves on, past anything unreadable),
    with the payload's final reply for the last one (the transcript lags the Stop hook)."""
    turns: list[Turn] = []
    from_start, missing, error = True, hook.transcript is None, hook.refused
    if hook.transcript is not None:
        try:
            turns, from_start = _parse(hook.transcript, state, parser, stopped=hook.event == SWEPT)
        except FileNotFoundError:
            missing = True
        except (OSError, ValueError) as exc:  # a FIFO, a device, a folder, no permission: refused at once
            missing, error = True, f"transcript not read: {exc.strerror if isinstance(exc, OSError) else exc}"
    if error:
        note_error(state, error)
    state["client"] = hook.client
    if hook.final and hook.turn_end:
        if turns:
            turns[-1].set_final(hook.final)  # the transcript lacks it yet; the payload has the turn's last word
        elif text_hash(hook.final) != state.get("last_final"):
            turns.append(Turn(hook.prompt or "", continued=not hook.prompt))
            turns[-1].set_final(hook.final)
        state["last_final"] = text_hash(hook.final)
    return Reading(turns, from_start, missing, error)


def _parse(transcript: str, state: dict[str, Any], parser: str, stopped: bool = False) -> tuple[list[Turn], bool]:
    """The new turns; `stopped`: the client stopped writing the transcript, so a parser with a `stopped`
    function records the calls still waiting for their result (a killed session's last command)."""
    position = state.get("cursor")
    if parser == "opencode":
        from contextflow.capture import opencode

        chunk = opencode.read_new(transcript, position if isinstance(position, dict) else None)
    else:
        most = SWEPT_READ if stopped else read_position.MAX_READ
        chunk = read_position.read_new(transcript, position if isinstance(position, dict) else None, most)
    pending = state.get("pending") if isinstance(state.get("pending"), dict) and chunk.start else {}
    counts: dict[str, int] = {}
    module = import_module(f"contextflow.capture.{parser}")
    try:
        turns = module.parse(chunk.lines, counts, pending)
    except UNREADABLE as exc:  # input the parser could not take at all: this chunk is lost, not retried
        turns, counts["bad"] = [], counts.get("bad", 0) + max(1, len(chunk.lines))
        note_error(state, f"{type(exc).__name__} reading {len(chunk.lines)} lines")
    if stopped and hasattr(module, "stopped") and _at_end(transcript, chunk.position):
        module.stopped(turns, pending)  # (not when the rest of the transcript waits: the results may be there)
    state["cursor"], state["pending"] = chunk.position, pending
    for name, count in (("skipped", chunk.skipped), ("bad", counts.get("bad", 0))):
        if count:
            state[name] = _count(state.get(name)) + count
            note_error(state, f"{state[name]} lines {name} ({name} in the last read: {count})")
    return turns, chunk.start == 0


def _at_end(transcript: str, position: dict[str, Any]) -> bool:
    try:
        return position.get("offset") == os.stat(transcript).st_size
    except OSError:
        return False


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def stored_turns(reading: Reading) -> list[Turn]:
    """The turns worth storing: a continued turn only when it did something (a lagging final line
    alone belongs to a turn stored already)."""
    return [t for t in reading.turns if not t.continued or t.has_activity()]
