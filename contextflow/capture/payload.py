"""One reader of a hook's payload (and environment), for every hook event and every client.

`read(payload, env)` gives a `Hook`: the event, the session id, the transcript path (only a sane
one: a non-empty string of at most MAX_PATH bytes without NUL; anything else is `transcript=None`
and `refused` says why), the working folder, the final reply the client sent (Claude Code and
Codex: `last_assistant_message`; Gemini CLI's AfterAgent: `prompt_response`), the prompt (Gemini
CLI's AfterAgent carries it) and the client (`client_of`). Plain data, stdlib only: every hook
call pays for this module's import.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, NamedTuple

from contextflow.core import settings

MAX_PATH = 4_096  # bytes: Linux's PATH_MAX; a longer "path" is refused, never opened
TURN_END_EVENTS = ("Stop", "AfterAgent")


class Hook(NamedTuple):
    event: str  # the payload's hook_event_name ("" when absent)
    session_id: str | None
    transcript: str | None
    cwd: str | None
    final: str | None
    prompt: str | None
    client: str
    refused: str | None = None  # why a transcript_path given was not taken

    @property
    def turn_end(self) -> bool:
        return self.event in TURN_END_EVENTS


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _sane_path(value: Any) -> tuple[str | None, str | None]:
    """(the path, None), or (None, why it is refused); (None, None) when there is none."""
    if not isinstance(value, str) or not value:
        return None, None
    if len(value) > MAX_PATH or len(value.encode("utf-8", "surrogatepass")) > MAX_PATH:
        return None, f"transcript_path is {len(value):,} characters long (at most {MAX_PATH:,})"
    if "\0" in value:
        return None, "transcript_path holds a NUL byte"
    return os.path.expanduser(value), None


OPENCODE_EVENTS = ("session.idle", "session.compacted")  # what OpenCode's plugin names its calls


def read(payload: Mapping[str, Any], env: Mapping[str, str]) -> Hook:
    transcript, refused = _sane_path(payload.get("transcript_path"))
    session_id = _text(payload.get("session_id"))
    event = payload.get("hook_event_name")
    if event in OPENCODE_EVENTS and session_id and len(session_id) <= 256:
        from contextflow.capture.opencode import transcript as opencode_transcript

        transcript, refused = opencode_transcript(env, session_id.strip()), None  # its session database
    return Hook(
        event=event if isinstance(event, str) else "",
        session_id=session_id.strip() if session_id and len(session_id) <= 256 else None,
        transcript=transcript,
        cwd=_cwd(payload),
        final=_text(payload.get("last_assistant_message", payload.get("prompt_response"))),
        prompt=_text(payload.get("prompt")),
        client=client_of(payload, env),
        refused=refused,
    )


def client_of(payload: Mapping[str, Any], env: Mapping[str, str]) -> str:
    """Which client runs this hook: CONTEXTFLOW_CLIENT (install puts it in each hook command),
    else what the client's environment or payload gives away, else "unknown"."""
    named = settings.read(env).client
    if named and len(named) <= 64 and named.replace("-", "").replace("_", "").replace(".", "").isalnum():
        return named
    if payload.get("hook_event_name") in OPENCODE_EVENTS:
        return "opencode"
    if payload.get("hook_event_name") == "stop" and "conversation_id" in payload:
        return "cursor"  # the journal `contextflow hook cursor` keeps
    transcript = payload.get("transcript_path")
    transcript = transcript[:MAX_PATH].replace("\\", "/") if isinstance(transcript, str) else ""
    name = transcript.rsplit("/", 1)[-1]
    if (
        env.get("GEMINI_CLI")
        or "prompt_response" in payload
        or payload.get("hook_event_name") == "AfterAgent"
        or ("/.gemini/" in transcript and name.startswith("session-"))
    ):
        return "gemini-cli"
    if "/.codex/" in transcript or name.startswith("rollout-") or "turn_id" in payload:
        return "codex"
    if env.get("CLAUDECODE") or "/.claude/" in transcript:
        return "claude-code"
    return "unknown"


def _cwd(payload: Mapping[str, Any]) -> str | None:
    value = payload.get("cwd")
    if isinstance(value, str) and value.strip() and len(value) <= MAX_PATH and "\0" not in value:
        return value
    return None


def payload_cwd(payload: Mapping[str, Any]) -> str:
    """The session's working folder from the payload (clients send `cwd`), else the hook's own."""
    return _cwd(payload) or os.getcwd()
