"""Client hooks: `contextflow hook session-start | prompt-submit | stop`.

Each reads the JSON the client sends on stdin (Claude Code, Codex and Gemini CLI send the same
fields) and prints what that event accepts, as `hookSpecificOutput.additionalContext`:

- session-start: the latest handoff, the open timeline threads, the recent sessions and the
  composed default view, in that order, within `CONTEXTFLOW_HOOK_BUDGET` tokens (default 2250,
  about 9,000 characters: Claude Code and Codex show at most 10,000 characters of a hook's output);
- prompt-submit: results waiting from the last reply's `<ctx:recall|status|expand>`;
- stop: carries out the `<ctx:...>` directives of every assistant message of the turn that no
  earlier call processed (Claude Code's transcript JSONL; remembered by message uuid), plus the
  client's final reply (`last_assistant_message`, Gemini's `prompt_response`) when the
  transcript does not hold it.

A hook never breaks the client: whatever fails, it exits 0, prints nothing, and logs the reason
to stderr and to `hooks.log` in the machine-local state folder, where what waits between calls
and the current task live too.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from contextflow.adapters.hook_payload import client_of, payload_cwd
from contextflow.core.fsutil import atomic_write
from contextflow.core.locate import locate_store, state_root, store_state_dir
from contextflow.core.text import quote

if TYPE_CHECKING:  # imported where used: every prompt a user types runs a hook, and pays for its imports
    from contextflow.app import App
    from contextflow.graph import directives

EVENTS = {
    "session-start": "SessionStart",
    "prompt-submit": "UserPromptSubmit",
    "stop": "Stop",
    "session-end": "SessionEnd",  # capture only
    "pre-compact": "PreCompact",  # capture only
}
DEFAULT_BUDGET = 2_250  # tokens, about 9,000 characters: see session_start.CLIENT_LIMIT_CHARS
MAX_BUDGET = 2_000_000  # graph.model.MAX_BUDGET, copied so a hook need not import the graph (a test checks)
MAX_STDIN = 1 << 20
MAX_TRANSCRIPT_TAIL = 4 << 20
MAX_LOG_BYTES = 1 << 20
PROCESSED_KEEP = 500  # message keys remembered per Claude session


def _dumps(value: Any) -> str:  # the stdlib's JSON: orjson's import costs a hook more than its speed saves
    return json.dumps(value, separators=(",", ":"))  # ASCII: a lone surrogate read from a transcript still writes


def log_reason(message: str, env: Mapping[str, str] | None = None) -> None:
    """Say why a hook did nothing: on stderr, and in the machine-local hooks.log."""
    line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} contextflow hook: {message}"
    try:
        print(line, file=sys.stderr)
        path = state_root(env) / "hooks.log"
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if path.exists() and path.stat().st_size > MAX_LOG_BYTES:
            path.replace(path.with_suffix(".log.old"))
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
        with open(fd, "a", encoding="utf-8") as handle:  # private, as every state file (doctor checks)
            handle.write(line + "\n")
    except Exception:  # logging must not fail the hook either
        pass


def hook_budget(env: Mapping[str, str]) -> int:
    raw = env.get("CONTEXTFLOW_HOOK_BUDGET", "").strip()
    if raw.isdigit() and 200 <= int(raw) <= MAX_BUDGET:
        return int(raw)
    return DEFAULT_BUDGET


def run(event: str, raw: bytes, env: Mapping[str, str] | None = None) -> str:
    """The hook's stdout for this event and stdin; "" when it has nothing to say or failed."""
    env = os.environ if env is None else env
    try:
        if event not in EVENTS:
            raise ValueError(f"unknown hook event {event!r}; use one of {', '.join(EVENTS)}")
        payload = json.loads(raw[:MAX_STDIN]) if raw.strip() else {}
        if not isinstance(payload, dict):
            raise ValueError("stdin is not a JSON object")
        folder = locate_store(env).folder
        hooks = hook_dir(folder, env)
        if event == "prompt-submit":  # answers from machine-local state: no need to read the store
            return _inject("UserPromptSubmit", prompt_submit(hooks, payload, hook_budget(env)))
        if event in ("stop", "session-end", "pre-compact"):
            if event == "stop":
                stop(payload, hooks, lambda: _open_app(env, payload), client_of(payload, env))
            capture(payload, hooks.parent, env)
            return "{}" if event == "stop" else ""
        if not folder.is_dir():
            log_reason(f"no store at {folder} yet; nothing to inject", env)
            return ""
        app = _open_app(env, payload)
        try:
            return session_start_output(app, hooks, hook_budget(env))
        finally:
            app.store.save_snapshot_soon()  # a first read's snapshot is saved by a forked child: the client waits not
            app.close()
    except Exception as exc:
        log_reason(f"{event} did nothing: {type(exc).__name__}: {exc}", env)
        return ""


def capture(payload: dict[str, Any], state_dir: Path, env: Mapping[str, str]) -> None:
    """Store the turn's activity and the automatic handoff (contextflow.capture); never raises."""
    try:
        from contextflow.capture.core import capture as capture_turns

        capture_turns(payload, state_dir, lambda: _open_app(env, payload), env)
    except Exception as exc:
        log_reason(f"capture did nothing: {type(exc).__name__}", env)  # no message: it may quote a command


def _open_app(env: Mapping[str, str], payload: Mapping[str, Any]) -> App:
    from contextflow.app import App

    return App.open(env, cwd=payload_cwd(payload))


def session_start_output(app: App, hooks: Path, budget: int, project: str | None = None) -> str:
    """What `hook session-start` prints for this app: the exact JSON a client receives."""
    from contextflow.adapters.session_start import session_start

    return _inject("SessionStart", session_start(app, hooks, budget, project))


def _inject(event_name: str, text: str) -> str:
    if not text.strip():
        return ""
    output = {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}}
    return _dumps(output)


# -- machine-local state between calls ---------------------------------------------------


def hook_dir(folder: Path, env: Mapping[str, str]) -> Path:
    """Machine-local: what waits between hook calls, per store (never in the synced folder)."""
    path = store_state_dir(folder, env) / "hooks"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def _pending_path(hooks: Path, session_id: Any) -> Path:
    key = hashlib.sha256(str(session_id or "no-session").encode()).hexdigest()[:24]
    return hooks / f"pending-{key}.json"


def load_pending(hooks: Path, session_id: Any) -> dict[str, Any]:
    try:
        data = json.loads(_pending_path(hooks, session_id).read_bytes())
    except (OSError, ValueError):
        data = None
    return data if isinstance(data, dict) else {"items": [], "processed": []}


def save_pending(hooks: Path, session_id: Any, data: dict[str, Any]) -> None:
    atomic_write(_pending_path(hooks, session_id), _dumps(data).encode(), fsync=False)


def current_task(hooks: Path) -> str | None:
    try:
        return (hooks / "current-task.txt").read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def set_current_task(hooks: Path, name: str | None) -> None:
    path = hooks / "current-task.txt"
    if name:
        path.write_text(name + "\n", encoding="utf-8")
    else:
        path.unlink(missing_ok=True)


# -- prompt-submit ----------------------------------------------------------------------


def prompt_submit(hooks: Path, payload: dict[str, Any], budget: int) -> str:
    session_id = payload.get("session_id")
    pending = load_pending(hooks, session_id)
    items = [str(item) for item in pending.get("items", []) if item]
    if not items:
        return ""
    pending["items"] = []
    save_pending(hooks, session_id, pending)
    text = "\n\n".join(items)
    limit = budget * 4
    return text if len(text) <= limit else text[: limit - 40] + "\n[... clipped to the hook budget]"


# -- stop ------------------------------------------------------------------------------


def _text_blocks(content: Any) -> list[str]:
    """The texts of a message; a user entry without any is a tool result, not a person's prompt."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return []


class Message(NamedTuple):
    """One assistant message of the current turn: its key (transcript uuid) and its text."""

    key: str
    text: str


def _read_tail(transcript: Path) -> list[bytes]:
    with open(transcript, "rb") as handle:
        handle.seek(max(0, handle.seek(0, os.SEEK_END) - MAX_TRANSCRIPT_TAIL))
        return handle.read().split(b"\n")


def turn_messages(transcript: Path) -> list[Message]:
    """The assistant messages of the last turn (after the last user prompt), oldest first.
    A line that is not a transcript entry is skipped."""
    found: list[Message] = []
    for raw in reversed(_read_tail(transcript)):
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("isSidechain") or entry.get("isMeta"):
            continue
        message = entry["message"] if isinstance(entry.get("message"), dict) else {}
        if entry.get("type") == "assistant":
            key = entry.get("uuid")
            key = key if isinstance(key, str) and key else "sha:" + _digest(raw.decode("utf-8", "replace"))
            found.append(Message(key, "\n".join(_text_blocks(message.get("content")))))
        elif entry.get("type") == "user" and _text_blocks(message.get("content")):
            break
    found.reverse()
    return found


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def read_turn(payload: dict[str, Any]) -> tuple[list[Message], str | None]:
    """The turn's assistant messages from the transcript, and the final reply the client sent
    (`last_assistant_message`; Gemini's `prompt_response`), if any."""
    final = payload.get("last_assistant_message", payload.get("prompt_response"))
    final = final if isinstance(final, str) else None
    path = payload.get("transcript_path")
    if not isinstance(path, str) or not path:
        if final is None:
            raise ValueError("the Stop payload has neither last_assistant_message nor transcript_path")
        return [], final
    try:
        return turn_messages(Path(path).expanduser()), final
    except OSError as exc:
        if final is None:
            raise
        if not isinstance(exc, FileNotFoundError):
            log_reason(f"stop: cannot read the transcript ({exc.strerror or exc}); using the last message only")
    return [], final


def _squashed(text: str) -> str:
    return "".join(text.split())


def _directive_key(directive: directives.Directive) -> str:
    return "dir:" + _digest(_dumps([directive.name, sorted(directive.attrs.items()), directive.body]))


class Work(NamedTuple):
    """What one Stop call carries out, and the state it leaves."""

    todo: list[directives.Directive]
    processed: list[str]  # message keys (transcript uuids; "sha:" digests of final replies)
    early: list[str]  # directives carried out from a final reply the transcript did not hold yet


def _directives_in(text: str) -> list[directives.Directive]:
    if "<ctx:" not in text:  # most replies: skip importing the graph machinery
        return []
    from contextflow.graph import directives

    return directives.parse(text)


def plan_turn(messages: list[Message], final: str | None, processed: list[str], early: list[str]) -> Work:
    """Each transcript message not processed before is carried out, except directives already
    carried out from the final reply while the transcript lagged (each such key is used up
    once). The final reply counts only when the transcript does not hold it."""
    done = set(processed)
    waiting = list(early)
    todo: list[directives.Directive] = []
    new: list[str] = []
    for message in messages:
        if message.key in done:
            continue
        new.append(message.key)
        for directive in _directives_in(message.text):
            key = _directive_key(directive)
            if key in waiting:
                waiting.remove(key)
                continue
            todo.append(directive)
    if final is not None and final.strip():
        key = "sha:" + _digest(final)
        held = bool(messages) and _squashed(final) in _squashed("\n".join(m.text for m in messages))
        if not held and key not in done:
            new.append(key)
            found = _directives_in(final)
            todo += found
            waiting += [_directive_key(directive) for directive in found]
    return Work(todo, [*processed, *new][-PROCESSED_KEEP:], waiting[-PROCESSED_KEEP:])


def stop(payload: dict[str, Any], hooks: Path, open_app: Callable[[], App], agent: str = "unknown") -> list[str]:
    """Carry out the directives of every assistant message of the turn not processed before,
    written under `agent` (the client, `client_of`); returns what was done. The store is opened
    only when there is something to do."""
    session_id = payload.get("session_id")
    messages, final = read_turn(payload)
    pending = load_pending(hooks, session_id)
    processed = [str(d) for d in pending.get("processed", []) if isinstance(d, str)]
    early = [str(d) for d in pending.get("early", []) if isinstance(d, str)]
    work = plan_turn(messages, final, processed, early)
    if not work.todo:
        if work.early != early:
            save_pending(hooks, session_id, {**pending, "processed": work.processed, "early": work.early})
        return []  # nothing to carry out: no need to remember the messages either
    task = current_task(hooks)
    from contextflow.graph import directives

    app = open_app()
    try:
        runner = directives.Runner(app, task, agent)
        outcome = runner.run(work.todo)
    finally:
        app.close()
    if runner.task != task:
        set_current_task(hooks, runner.task)
    items = [str(item) for item in pending.get("items", [])] + outcome.pending
    if outcome.done:
        items.append("## ctx\n\n" + quote("\n".join(outcome.done)))
    save_pending(hooks, session_id, {"items": items, "processed": work.processed, "early": work.early})
    for error in outcome.errors:
        log_reason(error)
    return outcome.done
