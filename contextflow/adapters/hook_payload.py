"""What a hook's payload and environment say about the session: its working folder (which
names the project) and the client that runs the hook (who wrote what the Stop hook carries out)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any


def client_of(payload: Mapping[str, Any], env: Mapping[str, str]) -> str:
    """Which client runs this hook: CONTEXTFLOW_CLIENT (install puts it in each hook command),
    else what the client's environment or payload gives away, else "unknown"."""
    named = env.get("CONTEXTFLOW_CLIENT", "").strip()
    if named and len(named) <= 64 and named.replace("-", "").replace("_", "").replace(".", "").isalnum():
        return named
    if env.get("GEMINI_CLI") or "prompt_response" in payload or payload.get("hook_event_name") == "AfterAgent":
        return "gemini-cli"
    transcript = payload.get("transcript_path")
    transcript = transcript.replace("\\", "/") if isinstance(transcript, str) else ""
    if "/.codex/" in transcript or "/rollout-" in transcript:
        return "codex"
    if env.get("CLAUDECODE") or "/.claude/" in transcript:
        return "claude-code"
    return "unknown"


def payload_cwd(payload: Mapping[str, Any]) -> str:
    """The session's working folder from the payload (clients send `cwd`), else the hook's own."""
    value = payload.get("cwd")
    if isinstance(value, str) and value.strip() and len(value) <= 4_096 and "\0" not in value:
        return value
    return os.getcwd()
