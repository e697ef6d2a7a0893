"""The sweep: turns no hook captured (a client killed mid-turn, a hook that never ran), read from the
clients' own records of this repository before a session start answers, and after each Stop.

Where: each client's own folder (`capture/client_folders.py`: Claude Code, Codex, Gemini CLI; the
clients' own variables move them, tests point them at a tmp folder), and OpenCode's session database
(`capture/opencode.py`: the sessions whose folder is the repository's).

Each transcript goes through the one capture path (`core.handle`, event `transcript.SWEPT`), with the
per-transcript state the hooks keep: its read position, its pending calls, its turn ids. So a turn a hook stored
is never stored again, and a sweep reads only the bytes no hook read; the `<ctx:...>` directives in
those bytes are carried out as the Stop hook would have (`turn_directives.carry_out`), once. Claude
Code's calls still waiting for their result (the command a killed session ran) are recorded as run
without a result.

Bounds: the `client_folders.NEWEST` transcripts of each client, `transcript.SWEPT_READ` bytes read
in one transcript a sweep (the rest at the next hook), none when more than MAX_UNREAD bytes are left
to read (that is `contextflow import`'s work: named in doctor), MAX_CPU seconds of CPU a sweep (the
rest waits for the next hook). A transcript written in the last `quiet` seconds belongs
to a session still running: its own hooks read it. What the sweep knows between calls is in
`<store state>/sweep.json`: each transcript's signature when it was last found caught up (an unchanged
one costs one stat), the session and folder read from a rollout's or chat's first line, and the files
it refused (a FIFO, a folder, a link out of the client's folder, unreadable, too large), which doctor
shows (`capture/health.py`). Nothing here blocks: every file is opened non-blocking, regular files only.
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextflow.capture import transcript
from contextflow.capture.client_folders import NEWEST, Found, claude, codex, gemini
from contextflow.capture.payload import Hook

if TYPE_CHECKING:
    from contextflow.app import App

MAX_UNREAD = 64 << 20  # bytes not read yet past which a transcript is left to `contextflow import`
MAX_CPU = 0.4  # seconds of CPU a sweep spends capturing; the rest waits for the next hook
QUIET_AT_START = 2.0  # seconds without a write before a session start sweeps a transcript
QUIET_AT_STOP = 600.0  # a Stop hook sweeps only transcripts left alone this long (killed, not running)
MAX_SEEN = 500
MAX_PROBLEMS = 20
STATE_NAME = "sweep.json"
TOO_LARGE = "more than a sweep reads"
LEFT = "read in part: the rest at the next hook"


def sweep(
    state_dir: Path,
    cwd: str,
    env: Mapping[str, str],
    open_app: Callable[[], App],
    *,
    quiet: float = QUIET_AT_START,
    skip: str | None = None,
) -> list[str]:
    """Capture the turns of this repository's transcripts that no hook read; returns what went wrong
    (one line each, no transcript text). `skip`: the transcript the calling hook just read."""
    from contextflow.capture.core import capture_off
    from contextflow.core.project import repository_root

    began = time.process_time()
    found_root = repository_root(Path(cwd))
    root = str(found_root) if found_root else cwd
    if capture_off(env, cwd, root):
        return []  # (read later, once it is on again: nothing moved past)
    known = _load(state_dir / STATE_NAME)
    before = json.dumps(known, sort_keys=True)
    problems: dict[str, list[str]] = {}
    errors: list[str] = []
    now = time.time()
    earlier: dict[str, Any] = known["problems"]
    found: list[Found] = []
    listings: list[Callable[[], list[Found]]] = [
        lambda: claude(env, cwd, root, problems),
        lambda: codex(env, root, known["heads"], problems),
        lambda: gemini(env, cwd, root, known["heads"], problems),
    ]
    for listing in listings:
        try:
            found += listing()
        except Exception as exc:  # one client's folder never stops the others'
            errors.append(f"sweep: a client folder was not listed: {type(exc).__name__}")
    for item in found:
        if item.path == skip:
            continue
        if known["seen"].get(item.path) == item.signature:  # unchanged since the last look: one stat
            if item.path in earlier:
                problems[item.path] = earlier[item.path]
            continue
        if now - item.signature[2] / 1e9 < quiet:
            continue  # being written: its own hooks read it
        if time.process_time() - began > MAX_CPU:
            break
        try:
            why = _capture(item, state_dir, cwd, env, open_app, errors)
        except Exception as exc:  # one transcript never stops the others
            why = f"not captured: {type(exc).__name__}"
        if why and why != LEFT:
            problems[item.path] = [item.client, why]
        if not why or why.startswith(TOO_LARGE):
            known["seen"][item.path] = item.signature  # read to its end: looked at again when it changes
    if time.process_time() - began <= MAX_CPU:
        _opencode(env, cwd, root, state_dir, open_app, known, problems, quiet, errors)
    for path, (client, why) in problems.items():
        if earlier.get(path) != [client, why]:  # said once in hooks.log; doctor says it while it lasts
            errors.append(f"sweep: {client} transcript {path}: {why}")
    known["problems"] = dict(list(problems.items())[:MAX_PROBLEMS])
    known["seen"] = dict(list(known["seen"].items())[-MAX_SEEN:])
    known["heads"] = dict(list(known["heads"].items())[-MAX_SEEN:])
    if json.dumps(known, sort_keys=True) != before:
        from contextflow.core.fsutil import atomic_write

        atomic_write(state_dir / STATE_NAME, json.dumps(known, separators=(",", ":")).encode(), fsync=False)
    return errors


def problems(state_dir: Path) -> dict[str, list[str]]:
    """The transcripts the last sweep refused: path -> [client, why] (for doctor)."""
    found: dict[str, list[str]] = _load(state_dir / STATE_NAME)["problems"]
    return found


def _load(path: Path) -> dict[str, Any]:
    data = transcript.load_state(path)  # the guarded reader: {} when missing, damaged or not a file
    known: dict[str, Any] = {}
    for name in ("seen", "heads", "problems", "opencode"):
        value = data.get(name)
        known[name] = value if isinstance(value, dict) else {}
    known["problems"] = {
        path: why
        for path, why in known["problems"].items()
        if isinstance(why, list) and len(why) == 2 and all(isinstance(part, str) for part in why)
    }
    return known


def _capture(
    item: Found, state_dir: Path, cwd: str, env: Mapping[str, str], open_app: Callable[[], App], failed: list[str]
) -> str:
    """Read one transcript's new bytes through the hooks' capture path: "" when it is read to its end,
    LEFT when bytes remain for the next sweep, else why it was not read."""
    from contextflow.capture import core

    state = transcript.load_state(transcript.state_path(state_dir, item.path))
    position: dict[str, Any] = state["cursor"] if isinstance(state.get("cursor"), dict) else {}
    offset = position.get("offset") if position.get("ino") == item.signature[0] else 0
    offset = offset if isinstance(offset, int) and 0 <= offset <= item.signature[1] else 0
    if offset == item.signature[1]:
        return ""  # the hooks read it all
    unread = item.signature[1] - offset
    if unread > MAX_UNREAD:
        return f"{TOO_LARGE} ({unread / 1e6:.1f} MB not read yet); `contextflow import` its folder stores it"
    from contextflow.capture.read_position import open_regular

    try:
        open_regular(item.path).close()  # (never blocks: a FIFO put there since the listing is refused)
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    hook = Hook(transcript.SWEPT, item.session_id or Path(item.path).stem, item.path, cwd, None, None, item.client)
    core.handle(hook, item.client, state_dir, open_app, env, _directives(hook, state_dir, open_app, failed))
    after = transcript.load_state(transcript.state_path(state_dir, item.path)).get("cursor")
    return "" if isinstance(after, dict) and after.get("offset") == item.signature[1] else LEFT


def _directives(
    hook: Hook, state_dir: Path, open_app: Callable[[], App], failed: list[str]
) -> Callable[[transcript.Reading], None]:
    """The `<ctx:...>` directives of the bytes the sweep reads, carried out as the Stop hook would have
    (each once: the keys carried out are kept per session, so a hook reading the rest runs none again);
    what failed is added to `failed` (the turns are stored whatever happens here)."""

    def carry(reading: transcript.Reading) -> None:
        from contextflow.capture.turn_directives import carry_out

        try:
            failed.extend(
                f"sweep: {hook.client} directive: {e}"
                for e in carry_out(hook, reading, state_dir / "hooks", open_app)[1]
            )
        except Exception as exc:
            failed.append(f"sweep: {hook.client} directives not carried out: {type(exc).__name__}")

    return carry


def _opencode(
    env: Mapping[str, str],
    cwd: str,
    root: str,
    state_dir: Path,
    open_app: Callable[[], App],
    known: dict[str, Any],
    problems: dict[str, list[str]],
    quiet: float,
    failed: list[str],
) -> None:
    """OpenCode's newest sessions in this repository, read when its database changed since the last sweep."""
    from contextflow.capture.opencode import database

    path = database(env)
    signature = []
    for name in (path, f"{path}-wal"):
        try:
            info = os.stat(name)
        except OSError:
            info = None
        if name == path and (info is None or not stat.S_ISREG(info.st_mode)):
            return  # no OpenCode here (a FIFO in its place is never opened)
        signature += [info.st_ino, info.st_size, info.st_mtime_ns] if info is not None else [0, 0, 0]
    if known["opencode"].get(path) == signature or time.time() - max(signature[2], signature[5]) / 1e9 < quiet:
        return
    from contextflow.capture import core
    from contextflow.capture.opencode import sessions_in
    from contextflow.capture.opencode import transcript as name_of

    try:
        found = sessions_in(path, list(dict.fromkeys([cwd, root])), NEWEST)
    except Exception as exc:  # a database it cannot read: said, and tried again when it changes
        problems[path] = ["opencode", f"not read: {type(exc).__name__}"]
        known["opencode"] = {path: signature}
        return
    broke = False
    for session in found:
        hook = Hook(transcript.SWEPT, session, name_of(env, session), cwd, None, None, "opencode")
        try:
            core.handle(hook, "opencode", state_dir, open_app, env, _directives(hook, state_dir, open_app, failed))
        except Exception as exc:
            problems[f"{path}#{session[:64]}"] = ["opencode", f"not captured: {type(exc).__name__}"]
            broke = True
    if not broke:
        known["opencode"] = {path: signature}
