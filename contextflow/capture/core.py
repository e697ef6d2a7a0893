"""Capture one hook call: new transcript bytes -> `capture.turn` events -> the automatic handoff.

On-disk contract (machine-local, `<store state>/capture/<hash of transcript path>.json`):
`{"cursor": {...}, "turn_ids": [...], "digest": {...}, "auto_hash": str, "last_key": [...],
"skipped": int, "bad": int}`. Everything in it passed the secret redaction first.

Turn events (`capture.turn`): `{project, session_id, agent (the client), turn_id, turn,
transcript}`; `turn_id` is a hash of the session id and the turn's content, so a transcript read
again from 0 stores no turn twice. The automatic handoff is a normal `handoff` with `auto: true`
and `provenance {client, transcript}`; it is appended only when its content changed, and not at
all while the newest handoff of the session is one the agent wrote after the last capture.

Off switches: `CONTEXTFLOW_CAPTURE=off` (environment), or a `.contextflow-capture-off` file at
the repository root (or in the working folder).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextflow.capture import cursor as cursors
from contextflow.core.checks import flag
from contextflow.core.fsutil import atomic_write
from contextflow.core.project import repository_root
from contextflow.core.text import cut

if TYPE_CHECKING:
    from contextflow.app import App

from contextflow.capture.turns import TURN_KIND, Turn

OFF_FILE = ".contextflow-capture-off"
TURN_END_EVENTS = ("Stop", "AfterAgent")
KEEP_TURN_IDS = 500
MAX_SESSION_TURNS = 2_000  # turns stored per session; later ones only update the digest


def repo_root(cwd: str) -> str | None:
    """The repository holding `cwd` (its root folder), if any."""
    root = repository_root(Path(cwd))
    return str(root) if root else None


def capture_off(env: Mapping[str, str], cwd: str | None, root: str | None) -> str | None:
    """Why capture is off for this call, or None when it is on (`root`: the repository holding `cwd`)."""
    setting = env.get("CONTEXTFLOW_CAPTURE", "").strip()
    if setting and flag(setting) is False:
        return "CONTEXTFLOW_CAPTURE=off"
    if cwd:
        for folder in dict.fromkeys([root, cwd]):
            if folder and os.path.exists(os.path.join(folder, OFF_FILE)):
                return f"{OFF_FILE} in {folder}"
    return None


def client_of(payload: dict[str, Any], path: str) -> str:
    name = os.path.basename(path)
    if payload.get("hook_event_name") == "AfterAgent" or ("/.gemini/" in path and name.startswith("session-")):
        return "gemini-cli"
    if name.startswith("rollout-") or "/.codex/" in path or "turn_id" in payload:
        return "codex"
    return "claude-code"


def _parser(client: str) -> Callable[[list[bytes], dict[str, int]], list[Turn]]:
    if client == "codex":
        from contextflow.capture import codex

        return codex.parse
    if client == "gemini-cli":
        from contextflow.capture import gemini

        return gemini.parse
    from contextflow.capture import claude

    return claude.parse


def _state_path(state_dir: Path, transcript: str) -> Path:
    folder = state_dir / "capture"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder / (hashlib.sha256(transcript.encode()).hexdigest()[:24] + ".json")


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save(path: Path, state: dict[str, Any]) -> None:
    atomic_write(path, json.dumps(state, separators=(",", ":")).encode(), fsync=False)


def _final_of(payload: dict[str, Any]) -> str | None:
    final = payload.get("last_assistant_message", payload.get("prompt_response"))
    return final if isinstance(final, str) and final.strip() else None


def read_turns(payload: dict[str, Any], state: dict[str, Any], client: str, path: str) -> tuple[list[Turn], int]:
    """The turns in the bytes appended since the cursor (the state's cursor moves on)."""
    chunk = cursors.read_new(path, state.get("cursor"))
    counts: dict[str, int] = {}
    turns = _parser(client)(chunk.lines, counts)
    state["cursor"] = chunk.cursor
    state["skipped"] = state.get("skipped", 0) + chunk.skipped
    state["bad"] = state.get("bad", 0) + counts.get("bad", 0)
    final = _final_of(payload)
    if final and payload.get("hook_event_name") in TURN_END_EVENTS:
        if turns:
            turns[-1].set_final(final)  # Claude's transcript lacks it yet; the payload has the turn's last word
        elif final != state.get("last_final"):
            turns.append(Turn(str(payload.get("prompt") or ""), continued=not payload.get("prompt")))
            turns[-1].set_final(final)
    kept = [t for t in turns if not t.continued or t.has_activity()]  # a lagging final line: stored already
    return kept, chunk.skipped + counts.get("bad", 0)


def redacted(value: Any) -> Any:
    from contextflow.core.secrets import redact_text
    from contextflow.core.text import map_strings

    return map_strings(value, lambda text: redact_text(text)[0])


def turn_id(session_id: str, turn: dict[str, Any]) -> str:
    body = json.dumps([session_id, turn], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(body.encode()).hexdigest()[:32]


def capture(
    payload: dict[str, Any], state_dir: Path, open_app: Callable[[], App], env: Mapping[str, str]
) -> list[dict[str, Any]]:
    """Store the new turns of the payload's transcript and refresh the automatic handoff; returns
    the turns stored. Opens the store only when there is a new turn."""
    path, session_id = payload.get("transcript_path"), payload.get("session_id")
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
    if not isinstance(path, str) or not path or not isinstance(session_id, str) or not session_id.strip():
        return []
    root = repo_root(cwd) if cwd else None
    if capture_off(env, cwd, root):
        return []
    client = client_of(payload, path)
    state_path = _state_path(state_dir, path)
    state = _load(state_path)
    try:
        turns, _ = read_turns(payload, state, client, path)
    except FileNotFoundError:
        turns = []
        final, prompt = _final_of(payload), payload.get("prompt")  # Gemini's AfterAgent: the turn in the payload
        if final and isinstance(prompt, str) and prompt.strip() and final != state.get("last_final"):
            turns = [Turn(prompt)]
            turns[0].set_final(final)
    if not turns:
        _save(state_path, state)
        return []
    seen = list(state.get("turn_ids", []))
    stored: list[dict[str, Any]] = []
    digest = state.get("digest", {})
    from contextflow.capture import digest as digests

    for turn in turns:
        data = redacted(turn.data(root))
        key = turn_id(session_id, data)
        if key in seen:
            continue
        seen.append(key)
        digest = digests.fold(digest, data)
        stored.append({"turn_id": key, "turn": data})
    state["turn_ids"] = seen[-KEEP_TURN_IDS:]
    state["last_final"] = _final_of(payload) or state.get("last_final")
    if not stored:
        _save(state_path, state)
        return []
    state["digest"] = digest
    app = open_app()  # opened for the payload's folder: its settings name the project (the one rule)
    try:
        project = app.settings.default_project
        base = {"project": project, "session_id": session_id.strip(), "agent": client, "transcript": path}
        items: list[tuple[str, dict[str, Any]]] = []
        count = state.get("stored", 0)
        for record in stored:
            if count < MAX_SESSION_TURNS:
                items.append((TURN_KIND, {**base, **record}))
                count += 1
        state["stored"] = count
        handoff = _auto_handoff(app, state, base, client, path)
        if handoff is not None:
            items.append(("handoff", handoff))
        if items:
            events = app.store.append_many(items)
            state["last_key"] = list(events[-1].key)
    finally:
        app.close()
    _save(state_path, state)
    return stored


def _auto_handoff(
    app: App, state: dict[str, Any], base: dict[str, Any], client: str, path: str
) -> dict[str, Any] | None:
    """The automatic handoff to append, or None (unchanged, or the agent wrote one since the last capture)."""
    from contextflow.capture.digest import has_work
    from contextflow.sessions import core as sessions

    if not has_work(state["digest"]):
        return None  # it only talked: its turns are stored, the latest real handoff stands

    latest = sessions.latest_handoff(app, sessions.EntryFilter(base["project"], session_id=base["session_id"]))
    if latest is not None and not latest.data.get("auto") and list(latest.key) > state.get("last_key", []):
        return None  # a handoff the agent wrote since its last activity stands
    data = handoff_data(app, state["digest"], base, client, path)
    digest = hashlib.sha256(json.dumps([data["summary"], data.get("files"), data.get("next_steps")]).encode())
    if state.get("auto_hash") == digest.hexdigest():
        return None
    state["auto_hash"] = digest.hexdigest()
    return data


def handoff_data(app: App, digest: dict[str, Any], base: dict[str, Any], client: str, path: str) -> dict[str, Any]:
    """The automatic handoff of a session whose turns folded into `digest` (also what an import of
    a past session writes)."""
    from contextflow.capture.digest import auto_handoff

    fields = auto_handoff(digest)
    limit = app.settings.max_array_items
    return {
        **{k: v for k, v in base.items() if k != "transcript"},
        "summary": _summary_text(fields, app.settings.max_summary_chars),
        **{name: fields[name][:limit] for name in ("files", "next_steps") if name in fields},
        "auto": True,
        "provenance": {"client": client, "transcript": path, "turns": fields.get("turns", 0)},
    }


def _summary_text(fields: dict[str, Any], limit: int) -> str:
    lines = [f"[automatic handoff] {fields['summary']}"]
    for label, name in (("Tests", "tests"), ("Commands", "commands"), ("Open todos", "open_todos")):
        if fields.get(name):
            lines.append(f"{label}: " + "; ".join(fields[name]))
    if fields.get("errors"):
        lines.append("Errors: " + "; ".join(fields["errors"]))
    return cut("\n".join(lines), limit, "…")
