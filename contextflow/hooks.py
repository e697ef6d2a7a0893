"""Claude Code hooks: `contextflow hook session-start | prompt-submit | stop`.

Each reads the JSON Claude Code sends on stdin (`session_id`, `transcript_path`, `cwd`,
`hook_event_name`, ...) and prints what that event accepts:

- session-start: the composed default view, the active session's latest handoff and the
  open timeline threads, within `CONTEXTFLOW_HOOK_BUDGET` tokens (default 8000), as
  `hookSpecificOutput.additionalContext`;
- prompt-submit: results waiting from the last reply's `<ctx:recall|status|expand>`;
- stop: carries out the `<ctx:...>` directives in the last assistant message (from
  `last_assistant_message` when the client sends it, else the transcript JSONL).

A hook never breaks the client: whatever fails, it exits 0, prints nothing, and logs the
reason to stderr and to `hooks.log` in the machine-local state folder. What waits between
hook calls (per Claude session) and the current task live in that state folder too.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson

from contextflow import timeutil
from contextflow.app import App
from contextflow.graph import directives, model
from contextflow.graph.compose import DEFAULT_QUERY, compose
from contextflow.graph.ops import graph
from contextflow.locate import locate_store, state_root, store_state_dir
from contextflow.text import estimate_tokens, quote

EVENTS = {"session-start": "SessionStart", "prompt-submit": "UserPromptSubmit", "stop": "Stop"}
DEFAULT_BUDGET = 8_000
MAX_STDIN = 1 << 20
MAX_TRANSCRIPT_TAIL = 4 << 20
MAX_LOG_BYTES = 1 << 20
PROCESSED_KEEP = 50


def log_reason(message: str, env: Mapping[str, str] | None = None) -> None:
    """Say why a hook did nothing: on stderr, and in the machine-local hooks.log."""
    line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} contextflow hook: {message}"
    try:
        print(line, file=sys.stderr)
        path = state_root(env) / "hooks.log"
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if path.exists() and path.stat().st_size > MAX_LOG_BYTES:
            path.replace(path.with_suffix(".log.old"))
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
    except Exception:  # logging must not fail the hook either
        pass


def hook_budget(env: Mapping[str, str]) -> int:
    raw = env.get("CONTEXTFLOW_HOOK_BUDGET", "").strip()
    if raw.isdigit() and 200 <= int(raw) <= model.MAX_BUDGET:
        return int(raw)
    return DEFAULT_BUDGET


def run(event: str, raw: bytes, env: Mapping[str, str] | None = None) -> str:
    """The hook's stdout for this event and stdin; "" when it has nothing to say or failed."""
    env = os.environ if env is None else env
    try:
        if event not in EVENTS:
            raise ValueError(f"unknown hook event {event!r}; use one of {', '.join(EVENTS)}")
        payload = orjson.loads(raw[:MAX_STDIN]) if raw.strip() else {}
        if not isinstance(payload, dict):
            raise ValueError("stdin is not a JSON object")
        folder = locate_store(env).folder
        hooks = hook_dir(folder, env)
        if event == "prompt-submit":  # answers from machine-local state: no need to read the store
            return _inject("UserPromptSubmit", prompt_submit(hooks, payload, hook_budget(env)))
        if event == "stop":
            stop(payload, hooks, lambda: App.open(env))
            return "{}"
        if not folder.is_dir():
            log_reason(f"no store at {folder} yet; nothing to inject", env)
            return ""
        app = App.open(env)
        try:
            return _inject("SessionStart", session_start(app, hooks, hook_budget(env)))
        finally:
            app.close()
    except Exception as exc:
        log_reason(f"{event} did nothing: {type(exc).__name__}: {exc}", env)
        return ""


def _inject(event_name: str, text: str) -> str:
    if not text.strip():
        return ""
    output = {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}}
    return orjson.dumps(output).decode()


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
        data = orjson.loads(_pending_path(hooks, session_id).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {"items": [], "processed": []}
    return data if isinstance(data, dict) else {"items": [], "processed": []}


def save_pending(hooks: Path, session_id: Any, data: dict[str, Any]) -> None:
    path = _pending_path(hooks, session_id)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_bytes(orjson.dumps(data))
    os.replace(temp, path)


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


# -- session-start ---------------------------------------------------------------------


def default_query(app: App, hooks: Path) -> tuple[str, int | None]:
    saved = graph(app).saved_view("default")
    if saved is not None:
        return saved.query, saved.budget
    task = current_task(hooks)
    if task:
        working = f"(tag:tier:working AND tag:task:{task})"
        return DEFAULT_QUERY.replace("tag:tier:working", working), None
    return DEFAULT_QUERY, None


def handoff_text(app: App, budget_chars: int) -> str:
    from contextflow import sessions

    session_id = sessions.active_session(app)
    if not session_id:
        return ""
    where = sessions.EntryFilter(app.settings.default_project, session_id=session_id)
    event = sessions.latest_handoff(app, where)
    if event is None:
        return ""
    from contextflow.render import entry_text

    return "## Latest handoff of the active session\n\n" + clip_block(entry_text(event), budget_chars)


def threads_text(app: App, budget_chars: int) -> str:
    """Open timeline threads; empty when there are none."""
    from contextflow import orient, timeline  # not imported by hooks that need no threads

    found = timeline.where_am_i(app, status="active", limit=5)
    if not found:
        return ""
    now = timeutil.now()
    body = "\n\n".join(orient.whereabouts_text(where, now) for where in found)
    return "## Open threads\n\n" + clip_block(body, budget_chars)


def clip_block(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 20)].rstrip() + "\n[... clipped]"


def session_start(app: App, hooks: Path, budget: int) -> str:
    share = budget  # characters each for the handoff and the threads: a quarter of the budget (4 chars a token)
    extras = [part for part in (handoff_text(app, share), threads_text(app, share)) if part]
    used = sum(estimate_tokens(part) + 1 for part in extras)
    query, saved_budget = default_query(app, hooks)
    room = min(budget - used, saved_budget or budget)
    graph_text = ""
    if room >= 100:
        composed = compose(app, query, room)
        if composed.included:
            graph_text = composed.text
    parts = [part for part in (graph_text, *extras) if part]
    return "\n\n".join(parts)


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
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return []


def _is_prompt(content: Any) -> bool:
    """A user entry that is a person's prompt, not a tool result."""
    if isinstance(content, str):
        return True
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "text" for b in content)


def last_assistant_text(transcript: Path) -> str:
    """The text of the assistant's last turn: its entries after the last user prompt."""
    with open(transcript, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - MAX_TRANSCRIPT_TAIL))
        lines = handle.read().split(b"\n")
    texts: list[str] = []
    for raw in reversed(lines):
        try:
            entry = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(entry, dict) or entry.get("isSidechain"):
            continue
        message = entry.get("message")
        if not isinstance(message, dict):
            message = {}
        if entry.get("type") == "assistant":
            texts = _text_blocks(message.get("content")) + texts
        elif entry.get("type") == "user" and _is_prompt(message.get("content")):
            break
    return "\n".join(texts)


def stop(payload: dict[str, Any], hooks: Path, open_app: Callable[[], App]) -> list[str]:
    """Carry out the directives of the last reply; returns what was done. The store is
    opened only when there is something to do."""
    text = payload.get("last_assistant_message")
    if not isinstance(text, str):
        path = payload.get("transcript_path")
        if not isinstance(path, str) or not path:
            raise ValueError("the Stop payload has neither last_assistant_message nor transcript_path")
        text = last_assistant_text(Path(path).expanduser())
    found = directives.parse(text)
    if not found:
        return []
    session_id = payload.get("session_id")
    pending = load_pending(hooks, session_id)
    digest = hashlib.sha256(text.encode()).hexdigest()
    processed = [str(d) for d in pending.get("processed", [])]
    if digest in processed:
        return []  # the same reply seen again (the client re-ran the hook)
    task = current_task(hooks)
    app = open_app()
    try:
        runner = directives.Runner(app, task)
        outcome = runner.run(found)
    finally:
        app.close()
    if runner.task != task:
        set_current_task(hooks, runner.task)
    items = [str(item) for item in pending.get("items", [])] + outcome.pending
    if outcome.done:
        items.append("## ctx\n\n" + quote("\n".join(outcome.done)))
    save_pending(hooks, session_id, {"items": items, "processed": [*processed, digest][-PROCESSED_KEEP:]})
    for error in outcome.errors:
        log_reason(error)
    return outcome.done

