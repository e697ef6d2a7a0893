"""Client hooks: `contextflow hook session-start | prompt-submit | stop | session-end | pre-compact | cursor`.

Each reads the JSON the client sends on stdin (`capture.payload`: one reader for every client)
and prints what that event accepts, as `hookSpecificOutput.additionalContext`:

- session-start: the latest handoff, the open timeline threads, the recent sessions and the
  composed default view, in that order, within `CONTEXTFLOW_HOOK_BUDGET` tokens (default 2250,
  about 9,000 characters: Claude Code and Codex show at most 10,000 characters of a hook's output);
- prompt-submit: results waiting from the last reply's `<ctx:recall|status|expand>`;
- stop, session-end, pre-compact: the one transcript path (`capture.core.handle`): the new turns
  are read once (`capture.transcript`), stop carries out their `<ctx:...>` directives
  (`capture.turn_directives`, also from the client's final reply when the transcript lags), and
  the turns are captured (`capture.core`).
- session-start first, and stop after its own transcript: the sweep (`capture.sweep`), the turns of
  this repository's transcripts that no hook read (a client killed mid-turn), through the same path.

- cursor: every Cursor agent event (`adapters.cursor_hook`: a journal line per event, `stop` the
  transcript path above on that journal).

A hook run by contextflow's Claude Code plugin or Gemini CLI extension (`CONTEXTFLOW_VIA`) does
nothing while hooks `contextflow install` wrote are in the client's settings (`admin.packaged`).

A hook never breaks the client: whatever fails, it exits 0, prints nothing (Cursor's events: `{"continue":true}`,
the one answer valid for each of them), and logs the reason
(redacted) to stderr and to `hooks.log` in the machine-local state folder, where what waits
between calls and the current task live too.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextflow.capture import payload as payloads
from contextflow.core.locate import Location, locate_store, state_root, store_state_dir
from contextflow.core.settings import HOOK_BUDGET, MAX_HOOK_BUDGET, read

if TYPE_CHECKING:  # imported where used: every prompt a user types runs a hook, and pays for its imports
    from contextflow.app import App
    from contextflow.capture.transcript import Reading

EVENTS = {
    "session-start": "SessionStart",
    "prompt-submit": "UserPromptSubmit",
    "stop": "Stop",
    "session-end": "SessionEnd",  # capture only
    "pre-compact": "PreCompact",  # capture only
    "cursor": "Cursor",  # every Cursor agent event (adapters/cursor_hook.py)
}
DEFAULT_BUDGET, MAX_BUDGET = HOOK_BUDGET, MAX_HOOK_BUDGET  # tokens (core.settings)
MAX_STDIN = 1 << 20
MAX_LOG_BYTES = 1 << 20
MAX_LOG_LINE = 2_000
SESSION_START_TABLES = (
    "sessions",
    "capture",
    "timeline",
    "graph-state",
)  # the derived formats a session start reads (in this order)
# what an event prints whatever failed: Cursor waits for an answer to beforeSubmitPrompt, and a refused
# payload may be that event (`{"continue":true}` is a valid answer to every Cursor event)
REFUSED_ANSWER = {"cursor": '{"continue":true}'}


def _dumps(value: Any) -> str:  # the stdlib's JSON: orjson's import costs a hook more than its speed saves
    return json.dumps(value, separators=(",", ":"))  # ASCII: a lone surrogate read from a transcript still writes


def log_reason(message: str, env: Mapping[str, str] | None = None) -> None:
    """Say why a hook did nothing: on stderr, and in the machine-local hooks.log (redacted, one line)."""
    try:
        from contextflow.core.secrets import redact_text

        message = redact_text(" ".join(message.split())[:MAX_LOG_LINE])[0]
    except Exception:  # the redaction failing must not put the message on disk as it was
        message = "(a message that could not be redacted)"
    line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} contextflow hook: {message}"
    try:
        print(line, file=sys.stderr)
        path = state_root(env) / "hooks.log"
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(path, flags, 0o600)  # never waits: a FIFO planted there is refused below
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise OSError(f"{path} is not a regular file")
            if info.st_size > MAX_LOG_BYTES:
                path.replace(path.with_suffix(".log.old"))
            os.write(fd, (line + "\n").encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except Exception:  # logging must not fail the hook either
        pass


def hook_budget(env: Mapping[str, str]) -> int:
    """CONTEXTFLOW_HOOK_BUDGET when it is from 200 to MAX_BUDGET tokens, else DEFAULT_BUDGET (a hook never fails)."""
    return read(env).hook_budget


def run(event: str, raw: bytes, env: Mapping[str, str] | None = None) -> str:
    """The hook's stdout for this event and stdin; "" when it has nothing to say or failed."""
    env = os.environ if env is None else env
    try:
        if event not in EVENTS:
            raise ValueError(f"unknown hook event {event!r}; use one of {', '.join(EVENTS)}")
        if len(raw) > MAX_STDIN:
            raise ValueError(f"stdin is over {MAX_STDIN:,} bytes; a hook payload is a small JSON object")
        payload = json.loads(raw) if raw.strip() else {}
        if not isinstance(payload, dict):
            raise ValueError("stdin is not a JSON object")
        if read(env).via:  # run by the plugin or extension: one set of hooks per client
            from contextflow.admin.packaged import defers

            reason = defers(env, payloads.payload_cwd(payload))
            if reason:
                log_reason(f"{event}: {reason}", env)
                return ""
        location = locate_store(env)  # once a call: the Apps below are opened on it
        with Apps(env, location) as apps:
            return _answer(event, payload, env, location, apps)
    except Exception as exc:
        log_reason(f"{event} did nothing: {type(exc).__name__}: {exc}", env)
        return REFUSED_ANSWER.get(event, "")


def _answer(event: str, payload: dict[str, Any], env: Mapping[str, str], location: Location, apps: Apps) -> str:
    folder = location.folder
    hooks = hook_dir(folder, env)
    if event == "cursor":
        from contextflow.adapters.cursor_hook import run_cursor

        return run_cursor(payload, hooks, env, lambda turn: transcript_event("stop", turn, hooks, env, apps))
    if event == "prompt-submit":  # answers from machine-local state: no need to read the store
        from contextflow.capture.turn_directives import prompt_submit

        session_id = payloads.read(payload, env).session_id
        return _inject("UserPromptSubmit", prompt_submit(hooks, session_id, hook_budget(env)))
    if event in ("stop", "session-end", "pre-compact"):
        done = transcript_event(event, payload, hooks, env, apps)
        if event == "stop":  # then what no hook read: sessions killed long enough ago to be over
            _sweep(payload, hooks, env, apps, stop=True)
        return "{}" if event == "stop" and done else ""
    _sweep(payload, hooks, env, apps, stop=False)  # first what no hook read: a killed session's turns
    if not folder.is_dir():
        log_reason(f"no store at {folder} yet; nothing to inject", env)
        return ""
    app = apps.opener(payload)()
    from contextflow.core.projections import soundly  # (damaged tables, an unfinished build: as operations)

    return soundly(app, lambda: session_start_output(app, hooks, hook_budget(env), cwd=payloads.payload_cwd(payload)))


class Apps:
    """A hook call's Apps, one per working folder the payloads name, each opened when first needed (most
    calls write nothing) and all closed when the call ends: the turns it captures, the directives it carries
    out and the session start it answers share one store and one connection to the tables. Whoever is
    handed one borrows it, never closes it."""

    def __init__(self, env: Mapping[str, str], location: Location) -> None:
        self._env, self._location = env, location
        self._open: dict[str | None, App] = {}

    def opener(self, payload: Mapping[str, Any]) -> Callable[[], App]:
        """The App for the payload's folder (its settings name the project: the one rule)."""
        cwd = payloads.payload_cwd(payload)

        def opened() -> App:
            if cwd not in self._open:
                from contextflow.app import App

                self._open[cwd] = App.open(self._env, cwd=cwd, location=self._location)
            return self._open[cwd]

        return opened

    def __enter__(self) -> Apps:
        return self

    def __exit__(self, *exc: object) -> None:
        for app in self._open.values():
            app.close()


def transcript_event(event: str, payload: dict[str, Any], hooks: Path, env: Mapping[str, str], apps: Apps) -> bool:
    """Stop, SessionEnd, PreCompact: the new turns read once, their directives carried out (also
    those the transcript only held after the last Stop), the turns captured
    (`contextflow.capture.core.handle`). False when it failed (logged)."""
    from contextflow.capture import core

    hook = payloads.read(payload, env)
    if hook.refused:
        log_reason(f"{event}: {hook.refused}; the transcript is not read", env)
    elif hook.transcript is None and not (event == "stop" and hook.final):
        lacking = " and no final reply" if event == "stop" else ""
        log_reason(f"{event}: the payload names no transcript_path{lacking}", env)
        return event != "stop"

    def directives(reading: Reading) -> None:
        if event == "stop" and hook.transcript and reading.missing and not hook.final and not reading.error:
            raise FileNotFoundError("the transcript is not there and the payload carries no final reply")
        if reading.error:
            log_reason(f"{event}: {reading.error}", env)
        from contextflow.capture.turn_directives import carry_out

        for error in carry_out(hook, reading, hooks, apps.opener(payload))[1]:
            log_reason(error, env)

    try:
        core.handle(
            hook,
            payloads.client_of(payload, {}),
            hooks.parent,
            apps.opener(payload),
            env,
            directives,
        )
    except Exception as exc:  # no message: it may quote a command or a reply
        log_reason(f"{event} did nothing: {type(exc).__name__}", env)
        return False
    return True


def _sweep(payload: dict[str, Any], hooks: Path, env: Mapping[str, str], apps: Apps, *, stop: bool) -> None:
    """The turns of this repository's transcripts that no hook read (`capture.sweep`); never fails the hook."""
    try:
        from contextflow.capture import sweep

        quiet = sweep.QUIET_AT_STOP if stop else sweep.QUIET_AT_START
        skip = payloads.read(payload, env).transcript if stop else None  # (a session start may resume a killed one)
        for error in sweep.sweep(
            hooks.parent, payloads.payload_cwd(payload), env, apps.opener(payload), quiet=quiet, skip=skip
        ):
            log_reason(error, env)
    except Exception as exc:  # no message: it may quote a path or a line
        log_reason(f"the sweep did nothing: {type(exc).__name__}", env)


def session_start_output(app: App, hooks: Path, budget: int, project: str | None = None, cwd: str | None = None) -> str:
    """What `hook session-start` prints for this app: the exact JSON a client receives (and what
    `start-preview` and the page show: this one path). When any of its readings was partial (read from
    the logs' newest events while a build is unfinished, or beside tables that do not serve), it says so."""
    from contextflow.adapters.session_start import NOTHING_YET_NOTE, PARTIAL_NOTE, read_partially, session_start
    from contextflow.core.projections import one_wait
    from contextflow.core.text import clean

    with one_wait():  # (another process's lock on the tables: waited for once, not once per read)
        building = _answer_while_building(app)
        with _as_of_now(app):  # the logs are checked once for all its reads
            text = session_start(app, hooks, budget, project, cwd)
            partial = building or read_partially(app)
    if partial:  # (said also when the newest events hold nothing of this project: the agent knows why)
        shown = clean(project or app.settings.default_project, True)
        text = f"{text}\n\n{PARTIAL_NOTE}" if text.strip() else NOTHING_YET_NOTE.format(project=shown)
    return _inject("SessionStart", text)


def _as_of_now(app: App) -> contextlib.AbstractContextManager[None]:
    from contextflow.sessions.stored import disk

    return app.tables().as_of_now() if disk(app) else contextlib.nullcontext()


def _answer_while_building(app: App) -> bool:
    """Whether this session start's sessions are partial: a fresh machine (or a derived format rebuilt)
    whose tables a background process is building, or tables another process holds locked past the wait,
    are read with the rows of the logs' remaining bytes (`core/rest.py`), whole, or of their newest bytes
    only when too much remains (then the answer says so; the timeline's and the graph's readings say it for
    themselves: `read_partially`)."""
    from contextflow.sessions.stored import disk

    if not disk(app):
        return False
    tables = app.tables()
    tables.update(ahead=False)  # (the logs' newest events answer it, this machine's among them)
    if not tables.building and tables.serves(SESSION_START_TABLES, wait=0):
        return False  # (the tables answer: the rest is not even imported)
    from contextflow.core.rest import reading

    read = reading(tables, SESSION_START_TABLES[:2], wait=0)
    return read.partial is not None


def _inject(event_name: str, text: str) -> str:
    if not text.strip():
        return ""
    output = {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}}
    return _dumps(output)


# -- machine-local state between calls ---------------------------------------------------


def hook_dir(folder: Path, env: Mapping[str, str]) -> Path:
    """Machine-local: what waits between hook calls, per store (never in the synced folder)."""
    from contextflow.core.fsutil import derived_folder

    return derived_folder(store_state_dir(folder, env) / "hooks")
