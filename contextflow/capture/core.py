"""Capture one hook call: the turns the transcript reader found -> `capture.turn` events -> the
automatic handoff. `handle` is the one path of every transcript hook (Stop, AfterAgent, SessionEnd,
PreCompact): read the new turns once (`transcript.read`), let the directives act on them, store them.

State (machine-local, `<store state>/capture/<hash of transcript path>.json`, see transcript.py):
besides the reader's read position and pending calls, `{"turn_ids": [...], "digest": {...}, "auto_hash":
str, "last_key": [...], "stored": int, "retries": int}`. Everything in it passed the secret
redaction first.

Turn events (`capture.turn`): `{project, session_id, agent (the client), turn_id, turn,
transcript}`; `turn_id` is a hash of the session id and the turn's content, so a transcript read
again from 0 stores no turn twice. The turn record carries what the turn said (decisions,
questions, todos), each command's outcome and error line, the state of the files it wrote
(`filestate.py`) and the handoff the agent wrote in it (linked by id: the tool call carries no
session). What the next session is told is derived from these records (`recall.py`); the small
derived events are written only when needed: the automatic handoff (`handoff`, `auto: true`)
when the session first has work and when it closes, the session's conversation record when what
it decided or left open changed.
A store write that fails keeps the read position for MAX_RETRIES more calls, then moves on (never stuck).

Off switches: `CONTEXTFLOW_CAPTURE=off` (environment), or a `.contextflow-capture-off` file at
the repository root (or in the working folder). With capture off the reader still reads (the
directives need it), and nothing of the turns is stored.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextflow.capture import transcript
from contextflow.capture.payload import Hook
from contextflow.capture.transcript import Reading
from contextflow.capture.transcript import redacted as redacted
from contextflow.core import hashing
from contextflow.core.project import repository_root
from contextflow.core.settings import read
from contextflow.core.text import cut

if TYPE_CHECKING:
    from contextflow.app import App

from contextflow.capture.turns import TURN_KIND, Turn

OFF_FILE = ".contextflow-capture-off"
KEEP_TURN_IDS = 500
MAX_SESSION_TURNS = 2_000  # turns stored per session; later ones only update the digest
MAX_RETRIES = 2
CLOSING_EVENTS = ("SessionEnd", "PreCompact")


def repo_root(cwd: str) -> str | None:
    """The repository holding `cwd` (its root folder), if any."""
    return repository_root(cwd)


def capture_off(env: Mapping[str, str], cwd: str | None, root: str | None) -> str | None:
    """Why capture is off for this call, or None when it is on (`root`: the repository holding `cwd`)."""
    if read(env).capture is False:
        return "CONTEXTFLOW_CAPTURE=off"
    if cwd:
        for folder in dict.fromkeys([root, cwd]):
            if folder and os.path.exists(os.path.join(folder, OFF_FILE)):
                return f"{OFF_FILE} in {folder}"
    return None


def handle(
    hook: Hook,
    payload_client: str,
    state_dir: Path,
    open_app: Callable[[], App],
    env: Mapping[str, str],
    directives: Callable[[Reading], object] | None = None,
) -> list[dict[str, Any]]:
    """One transcript hook call: read the new turns, hand them to `directives` (the Stop hook's),
    then store them (unless capture is off); returns the turns stored. An error of the directives
    is raised after the turns are stored and the state saved."""
    path = transcript.state_path(state_dir, hook.transcript) if hook.transcript else None
    state = transcript.load_state(path) if path else {}
    before = json.dumps({key: state.get(key) for key in ("cursor", "pending", "last_final")})  # a copy
    reading = transcript.read(hook, state, transcript.parser_of(hook, payload_client))
    failure: Exception | None = None
    if directives is not None:
        try:
            directives(reading)
        except Exception as exc:  # raised below, once the turns are stored
            failure = exc
    stored: list[dict[str, Any]] = []
    try:
        stored = capture(hook, reading, state, open_app, env)
        state.pop("retries", None)
    except Exception as exc:
        retries = state.get("retries", 0)
        retries = retries if isinstance(retries, int) and not isinstance(retries, bool) else MAX_RETRIES
        if retries < MAX_RETRIES:  # read these bytes again next call
            for key, value in json.loads(before).items():
                if value is None:
                    state.pop(key, None)
                else:
                    state[key] = value
            state["retries"] = retries + 1
        else:
            state.pop("retries", None)
        transcript.note_error(state, f"storing the turns failed: {type(exc).__name__}")
        failure = failure or exc
    if path is not None:
        transcript.save_state(path, state)
    if failure is not None:
        raise failure
    return stored


def turn_id(session_id: str, turn: dict[str, Any]) -> str:
    body = json.dumps([session_id, turn], sort_keys=True, separators=(",", ":"))
    return hashing.sha256(body.encode()).hexdigest()[:32]


def capture(
    hook: Hook, reading: Reading, state: dict[str, Any], open_app: Callable[[], App], env: Mapping[str, str]
) -> list[dict[str, Any]]:
    """Store the new turns of one reading (one bounded record each) and, when needed, the small
    events derived from them; returns the turns stored. Opens the store only when there is
    something to write."""
    if hook.transcript is None or not hook.session_id:
        return []
    root = repo_root(hook.cwd) if hook.cwd else None
    if capture_off(env, hook.cwd, root):
        return []
    turns: list[Turn] = transcript.stored_turns(reading)
    closing = hook.event in CLOSING_EVENTS
    if not turns and not closing:
        return []  # most calls of a turn's hooks: nothing new, nothing more to import
    from contextflow.capture import digest as digests
    from contextflow.capture import filestate

    if not turns and not _closing_due(state, digests):
        return []
    seen = [key for key in state.get("turn_ids", []) if isinstance(key, str)]
    machine = ""  # this machine's writer id, read once the first turn's files are recorded
    stored: list[dict[str, Any]] = []
    digest = state.get("digest", {}) if isinstance(state.get("digest"), dict) else {}
    for turn in turns:
        data = redacted(turn.data(root))
        key = turn_id(hook.session_id, data)
        if key in seen:
            continue
        seen.append(key)
        cited = [*data.get("files", {}).get("created", []), *data.get("files", {}).get("edited", [])]
        cited += data.get("handoff", {}).get("files", [])
        files_state = redacted(filestate.states(root, cited, machine := machine or _machine(env)))
        if files_state:
            data["state"] = files_state  # after the id: the same turn read again is the same turn
            _within_bound(data)
        stored.append({"turn_id": key, "turn": data})
    if not stored and not (closing and _closing_due(state, digests)):
        state["turn_ids"] = seen[-KEEP_TURN_IDS:]
        return []
    app = open_app()  # the payload's folder's (its settings name the project: the one rule); the caller closes it
    project = app.settings.default_project
    base = {"project": project, "session_id": hook.session_id, "agent": hook.client, "transcript": hook.transcript}
    items: list[tuple[str, dict[str, Any]]] = []
    count = state.get("stored", 0) if isinstance(state.get("stored"), int) else 0
    known = _stored_before(app, state, stored)
    settled = None  # the digest as of the last turn stored before
    for record in stored:
        if record["turn_id"] not in known:
            _link_handoff(app, project, record["turn"])
        digest = digests.fold(digest, record["turn"])
        if record["turn_id"] in known:  # stored before, and what it derived: neither again
            settled = digest
            count += 1
        elif count < MAX_SESSION_TURNS:
            items.append((TURN_KIND, {**base, **record}))
            count += 1
    if settled is not None:
        _settled({**state, "digest": settled}, state, base, hook.client)
    stored[:] = [record for record in stored if record["turn_id"] not in known]
    work = {**state, "digest": digest}
    handoff = _auto_handoff(app, work, base, hook.client, hook.transcript, closing)
    if handoff is not None:
        items.append(("handoff", handoff))
    conversation = _conversation(work, base, hook.client, closing)
    if conversation is not None:
        items.append(("conversation.save", conversation))
    if items:
        events = app.store.append_many(items)
        work["last_key"] = list(events[-1].key)
    state.update(work)  # only once the events are written
    state.update({"turn_ids": seen[-KEEP_TURN_IDS:], "stored": count})
    return stored


def _stored_before(app: App, state: dict[str, Any], stored: list[dict[str, Any]]) -> set[str]:
    """The turns of `stored` the store holds already, looked up only when this machine's state of the
    transcript names none (lost, or this is its first read): a transcript read again from its start
    stores no turn, automatic handoff or conversation record twice."""
    if state.get("turn_ids"):
        return set()
    from contextflow.capture.stored import known_turns

    known = known_turns(app)
    return {record["turn_id"] for record in stored if record["turn_id"] in known}


def _settled(work: dict[str, Any], state: dict[str, Any], base: dict[str, Any], client: str) -> None:
    """Record in `state` that the automatic handoff and the conversation record of the turns folded into
    `work`'s digest were written when those turns were stored."""
    from contextflow.capture.digest import has_work

    if has_work(work["digest"]):
        state["auto_hash"] = _auto_hash(work["digest"])
    _conversation(work, base, client, closing=False)  # (only its hashes are kept)
    for key in ("conversation_hash", "conversation_whole"):
        if key in work:
            state[key] = work[key]


def _machine(env: Mapping[str, str]) -> str:
    """This machine's writer id (what a claim's state names as where it was made), else ""."""
    from contextflow.core.errors import InputError
    from contextflow.core.locate import writer_id

    try:
        return writer_id(env)
    except (InputError, OSError):
        return ""


def _within_bound(data: dict[str, Any]) -> None:
    """The turn record with its file states still within MAX_TURN_BYTES (the last states go first)."""
    from contextflow.capture.turns import MAX_TURN_BYTES, record_bytes

    files = data["state"]["files"]
    while files and record_bytes(data) > MAX_TURN_BYTES:
        files.popitem()
    if not files:
        del data["state"]


def _link_handoff(app: App, project: str, turn: dict[str, Any]) -> None:
    """A handoff the agent wrote in this turn (its tool or CLI: no session id) is found in the store
    by its summary and named in the turn record, which links it to this session."""
    called = turn.get("handoff")
    if not isinstance(called, dict) or not isinstance(called.get("summary"), str):
        return
    from contextflow.core.errors import StoreError
    from contextflow.sessions import core as sessions

    wanted = called["summary"].rstrip("…").strip()
    try:
        recent = sessions.read_entries(app, sessions.EntryFilter(project, kind="handoff"), 20)
    except StoreError:  # sessions cannot be read completely yet (a new machine's build): stored unlinked
        return
    for event in reversed(recent):
        summary = event.data.get("summary")
        if not event.data.get("auto") and isinstance(summary, str) and summary.strip().startswith(wanted):
            called["id"] = event.id
            return


def _closing_due(state: dict[str, Any], digests: Any) -> bool:
    """Whether a closing call (SessionEnd, PreCompact) with no new turn has something to write."""
    said = state.get("digest", {}).get("substance", {})
    whole = hashing.sha256(json.dumps(said, sort_keys=True).encode()).hexdigest()
    return _auto_due(state, digests) or bool(said and state.get("conversation_whole") != whole)


def _auto_due(state: dict[str, Any], digests: Any) -> bool:
    digest = state.get("digest", {})
    return bool(digests.has_work(digest)) and state.get("auto_hash") != _auto_hash(digest)


def _auto_hash(digest: dict[str, Any]) -> str:
    from contextflow.capture.digest import auto_handoff

    fields = auto_handoff(digest)
    body = json.dumps([fields.get("summary"), fields.get("files"), fields.get("next_steps"), fields.get("tests")])
    return hashing.sha256(body.encode()).hexdigest()


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


def _conversation(state: dict[str, Any], base: dict[str, Any], client: str, closing: bool) -> dict[str, Any] | None:
    """The session as a conversation record (`conversation.save`, one per session, latest wins): written
    when a decision or an open question was added or dropped, and when the session closes if anything
    it said changed since (a todo reworded each turn does not rewrite it)."""
    from contextflow.capture.digest import auto_handoff

    digest = state["digest"]
    said = digest.get("substance", {})
    if not said.get("decisions") and not said.get("questions") and not said.get("todos_said"):
        return None
    decided = [sorted(d.get("decision", "") for d in said.get("decisions", [])), sorted(said.get("questions", []))]
    version = hashing.sha256(json.dumps(decided).encode()).hexdigest()
    whole = hashing.sha256(json.dumps(said, sort_keys=True).encode()).hexdigest()
    if state.get("conversation_hash") == version and not (closing and state.get("conversation_whole") != whole):
        return None
    state["conversation_hash"], state["conversation_whole"] = version, whole
    fields = auto_handoff(digest)
    name = hashing.sha256(f"{base['project']}\0{base['session_id']}".encode()).hexdigest()[:16]
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
    return cut("\n".join(lines), limit, "…")
