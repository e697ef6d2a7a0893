"""Capture one hook call: new transcript bytes -> one bounded `capture.turn` event per turn.

On-disk contract (machine-local, `<store state>/capture/<hash of transcript path>.json`):
`{"cursor": {...}, "turn_ids": [...], "digest": {...}, "auto_hash": str, "last_key": [...],
"skipped": int, "bad": int}`. Everything in it passed the secret redaction first.

Turn events (`capture.turn`): `{project, session_id, agent (the client), turn_id, turn,
transcript}`; `turn_id` is a hash of the session id and the turn's content, so a transcript read
again from 0 stores no turn twice. The turn record carries what the turn said (decisions,
questions, todos), each command's outcome and error line, the state of the files it wrote
(`filestate.py`) and the handoff the agent wrote in it (linked by id: the tool call carries no
session). What the next session is told is derived from these records (`recall.py`); the small
derived events are written only when needed: the automatic handoff (`handoff`, `auto: true`)
when the session first has work and when it closes, the session's conversation record when what
it decided or left open changed.

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

if TYPE_CHECKING:
    from contextflow.app import App

from contextflow.capture.turns import TURN_KIND, Turn

OFF_FILE = ".contextflow-capture-off"
TURN_END_EVENTS = ("Stop", "AfterAgent")
CLOSING_EVENTS = ("SessionEnd", "PreCompact")
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
    """Store the new turns of the payload's transcript (one bounded record each) and, when needed,
    the small events derived from them; returns the turns stored. Opens the store only when there
    is something to write."""
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
    seen = list(state.get("turn_ids", []))
    stored: list[dict[str, Any]] = []
    digest = state.get("digest", {})
    from contextflow.capture import digest as digests
    from contextflow.capture import filestate

    for turn in turns:
        data = redacted(turn.data(root))
        key = turn_id(session_id, data)
        if key in seen:
            continue
        seen.append(key)
        cited = [*data.get("files", {}).get("created", []), *data.get("files", {}).get("edited", [])]
        cited += data.get("handoff", {}).get("files", [])
        files_state = filestate.states(root, cited)
        if files_state:
            data["state"] = files_state  # after the id: the same turn read again is the same turn
        stored.append({"turn_id": key, "turn": data})
    state["turn_ids"] = seen[-KEEP_TURN_IDS:]
    state["last_final"] = _final_of(payload) or state.get("last_final")
    closing = payload.get("hook_event_name") in CLOSING_EVENTS
    if not stored and not (closing and _auto_due(state, digests)):
        _save(state_path, state)
        return []
    app = open_app()  # opened for the payload's folder: its settings name the project (the one rule)
    try:
        project = app.settings.default_project
        base = {"project": project, "session_id": session_id.strip(), "agent": client, "transcript": path}
        items: list[tuple[str, dict[str, Any]]] = []
        count = state.get("stored", 0)
        for record in stored:
            _link_handoff(app, project, record["turn"])
            digest = digests.fold(digest, record["turn"])
            if count < MAX_SESSION_TURNS:
                items.append((TURN_KIND, {**base, **record}))
                count += 1
        state["stored"] = count
        state["digest"] = digest
        handoff = _auto_handoff(app, state, base, client, path, closing)
        if handoff is not None:
            items.append(("handoff", handoff))
        record = _conversation(state, base, client)
        if record is not None:
            items.append(("conversation.save", record))
        if items:
            events = app.store.append_many(items)
            state["last_key"] = list(events[-1].key)
    finally:
        app.close()
    _save(state_path, state)
    return stored


def _link_handoff(app: App, project: str, turn: dict[str, Any]) -> None:
    """A handoff the agent wrote in this turn (its tool or CLI: no session id) is found in the store
    by its summary and named in the turn record, which links it to this session."""
    called = turn.get("handoff")
    if not isinstance(called, dict) or not isinstance(called.get("summary"), str):
        return
    from contextflow.sessions import core as sessions

    wanted = called["summary"].rstrip("…").strip()
    for event in reversed(sessions.read_entries(app, sessions.EntryFilter(project, kind="handoff"), 20)):
        summary = event.data.get("summary")
        if not event.data.get("auto") and isinstance(summary, str) and summary.strip().startswith(wanted):
            called["id"] = event.id
            return


def _auto_due(state: dict[str, Any], digests: Any) -> bool:
    digest = state.get("digest", {})
    return bool(digests.has_work(digest)) and state.get("auto_hash") != _auto_hash(digest)


def _auto_hash(digest: dict[str, Any]) -> str:
    from contextflow.capture.digest import auto_handoff

    fields = auto_handoff(digest)
    body = json.dumps([fields.get("summary"), fields.get("files"), fields.get("next_steps"), fields.get("tests")])
    return hashlib.sha256(body.encode()).hexdigest()


def _auto_handoff(
    app: App, state: dict[str, Any], base: dict[str, Any], client: str, path: str, closing: bool
) -> dict[str, Any] | None:
    """The automatic handoff event to append, or None. What a session start shows is derived from
    the turn records; this event only lists the session among the project's sessions: it is written
    when the session first has work, and again when it closes (SessionEnd, PreCompact) if changed."""
    from contextflow.capture.digest import has_work

    digest = state["digest"]
    if not has_work(digest) or state.get("auto_hash") == _auto_hash(digest):
        return None
    if state.get("auto_hash") and not closing:
        return None
    if digest.get("handoff") and not digest["handoff"].get("work_after"):
        return None  # the agent's own handoff stands
    state["auto_hash"] = _auto_hash(digest)
    return handoff_data(app, digest, base, client, path)


def _conversation(state: dict[str, Any], base: dict[str, Any], client: str) -> dict[str, Any] | None:
    """The session as a conversation record (`conversation.save`, one per session, latest wins), when
    what it decided or left open changed."""
    from contextflow.capture.digest import auto_handoff

    digest = state["digest"]
    said = digest.get("substance", {})
    if not said.get("decisions") and not said.get("questions") and not said.get("todos_said"):
        return None
    version = hashlib.sha256(json.dumps(said, sort_keys=True).encode()).hexdigest()
    if state.get("conversation_hash") == version:
        return None
    state["conversation_hash"] = version
    fields = auto_handoff(digest)
    name = hashlib.sha256(f"{base['project']}\0{base['session_id']}".encode()).hexdigest()[:16]
    return {
        "conversation_id": f"capture-{name}",
        "source": client,
        "project": base["project"],
        "session_id": base["session_id"],
        "conversation_type": "single_topic",
        "topic": str(digest.get("request") or "captured session")[:200],
        "summary": str(fields.get("summary", ""))[:2_000],
        "decisions": [
            {"decision": d["decision"], "reasoning": d.get("reasoning", ""), "status": d["status"]}
            for d in said.get("decisions", [])
        ],
        "open_questions": [*said.get("questions", []), *said.get("todos_said", [])],
        "related_entities": digest.get("files", [])[:20],
    }


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
    if fields.get("decisions"):
        from contextflow.capture.digest import decision_text

        lines.append("Decisions: " + "; ".join(decision_text(d) for d in fields["decisions"][-5:]))
    if fields.get("open_questions"):
        lines.append("Open questions: " + "; ".join(fields["open_questions"][-5:]))
    if fields.get("errors"):
        lines.append("Errors: " + "; ".join(fields["errors"]))
    text = "\n".join(lines)
    return text if len(text) <= limit else text[: limit - 1] + "…"
