"""`contextflow hook cursor`: the one command `contextflow install cursor` puts under each of
Cursor's agent events (`capture.cursor_events` says what they carry). Every event but `stop`
becomes one redacted line of the conversation's journal; `stop` captures the journal's new lines
(the turn, the automatic handoff) and carries out `<ctx:...>` directives in the agent's response.
Cursor's documented hooks cannot add context to a session, so nothing is injected.

Prints what Cursor reads from each event: `{}` for each event it knows but beforeSubmitPrompt, and
`{"continue": true}` for that one and for any payload it cannot take (which may be that event: Cursor
waits for the answer before it sends the prompt); `hooks.run` answers the same when anything fails."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any


def run_cursor(payload: dict[str, Any], hooks: Path, env: Mapping[str, str], capture: Callable[..., object]) -> str:
    from contextflow.capture import cursor_events
    from contextflow.capture.core import capture_off, repo_root
    from contextflow.capture.transcript import redacted

    event = payload.get("hook_event_name")
    known = isinstance(event, str) and event in cursor_events.EVENTS and event != "beforeSubmitPrompt"
    answer = "{}" if known else '{"continue":true}'
    conversation = payload.get("conversation_id")
    if not cursor_events.is_cursor(payload) or not isinstance(conversation, str) or not conversation.strip():
        return answer
    cwd = cursor_events.workspace(payload)
    if capture_off(env, cwd, repo_root(cwd) if cwd else None):
        return answer
    journal = cursor_events.journal_path(hooks.parent, conversation.strip())
    if event != "stop":
        line = cursor_events.record(payload)
        if line is not None:
            cursor_events.append(journal, redacted(line))
        return answer
    if not journal.is_file():
        return answer  # no event of this conversation was journaled: nothing to capture
    turn = {
        "session_id": conversation.strip(),
        "cwd": cwd,
        "transcript_path": str(journal),
        "hook_event_name": "stop",
        "conversation_id": conversation,
    }
    capture(turn)  # the directives are read from the journal's responses (capture.cursor_events)
    return answer
