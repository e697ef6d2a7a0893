"""Print what each real client's model is shown for `resume_session` and `get_context`.

    .venv/bin/python -m tests.e2e.what_models_see [--full]

Runs the live-loop scenario once on one machine folder: Claude Code stores a note, a handoff
and a fact; then Claude Code, Gemini CLI and Codex each resume. For each client and tool it
prints the size of the tool result as it appeared in the next request body (tokens are
characters / 4), whether it is the server's text or its JSON, and the start of it (all of it
with --full), and the session-start context in the first request; then the server's own
renderings of the same calls (its text, and structuredContent when it sends any).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import anyio

from tests.e2e.conftest import CLIENTS, install_client
from tests.e2e.live_loop import (
    PROJECT,
    RESUME_SCRIPT,
    SESSION,
    claude_code,
    codex_cli,
    gemini_cli,
    make_place,
    store_script,
    tokens,
)
from tests.e2e.mock_models import AnthropicMock, GeminiMock, MockModel, ResponsesMock

START_MARK = "SessionStart hook additional context"  # how Claude Code labels the hook's context
CALLS = {
    "resume_session": {"session_id": SESSION, "project": PROJECT},
    "get_context": {"query": "parser", "project": PROJECT},
}


def form(text: str) -> str:
    """JSON when one of the first lines opens an object (Codex puts `Wall time` lines first)."""
    return "JSON" if any(line.startswith("{") for line in text.splitlines()[:3]) else "text"


def show(label: str, text: str, full: bool) -> None:
    print(f"== {label}: {len(text)} chars, ~{tokens(text)} tokens, {form(text)}")
    print(text if full else text[:400] + ("..." if len(text) > 400 else ""))


async def server_renderings(full: bool) -> None:
    from contextflow.app import App
    from tests.conftest import connect, text_of

    app = App.open()
    try:
        async with connect(app) as client:
            for tool, args in CALLS.items():
                result = await client.call_tool(tool, args)
                show(f"server {tool} text block", text_of(result), full)
                structured = result.structured_content
                if structured is not None:
                    show(f"server {tool} structuredContent", json.dumps(structured, separators=(",", ":")), full)
    finally:
        app.close()


def main(argv: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="contextflow-models-see-") as folder:
        run(Path(folder), "--full" in argv)


def run(folder: Path, full: bool) -> None:
    place = make_place(folder)
    mocks: list[MockModel] = [AnthropicMock().start(), GeminiMock().start(), ResponsesMock().start()]
    try:
        claude = claude_code(install_client(CLIENTS["claude"]), mocks[0], place)
        claude.session("Save where we are.", store_script("claude"))
        seen = {
            "Claude Code": claude.session("Where were we?", RESUME_SCRIPT),
            "Gemini CLI": gemini_cli(install_client(CLIENTS["gemini"]), mocks[1], place).session(
                "Where were we?", RESUME_SCRIPT
            ),
            "Codex": codex_cli(install_client(CLIENTS["codex"]), mocks[2], place).session(
                "Where were we?", RESUME_SCRIPT
            ),
        }
    finally:
        for mock in mocks:
            mock.stop()
    for client, session in seen.items():
        for tool in CALLS:
            show(f"{client} {tool}", session.result(tool), full)
        started = [text for text in session.first_turn().texts() if START_MARK in text]
        if started:
            show(f"{client} session-start context", started[0], full)
        else:
            print(f"== {client} session-start context: none")
    os.environ.update({**place.store_env(), "HOME": str(place.home)})
    anyio.run(server_renderings, full)


if __name__ == "__main__":
    main(sys.argv[1:])
