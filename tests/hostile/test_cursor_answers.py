"""Cursor waits for `{"continue": true}` before it sends a prompt: a payload contextflow refuses (not
JSON, too large, the wrong types, a failure while journaling) still gets that answer, never nothing."""

from __future__ import annotations

import io
import json

import pytest

from contextflow.adapters import hooks
from contextflow.adapters.cli import main

CONTINUE = {"continue": True}


def answer(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], raw: bytes) -> str:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(raw)))
    assert main(["hook", "cursor"]) == 0
    return capsys.readouterr().out.strip()


PROMPT = {
    "hook_event_name": "beforeSubmitPrompt",
    "conversation_id": "c1",
    "generation_id": "g1",
    "workspace_roots": ["/work/app"],
    "prompt": "fix the parser",
}


@pytest.mark.parametrize(
    "raw",
    [
        b'{"hook_event_name": "beforeSubmitPrompt", "prompt": ',  # cut short
        b"\xff\xfe not json",
        b"[1, 2, 3]",  # JSON, not an object
        json.dumps({**PROMPT, "prompt": "x" * (hooks.MAX_STDIN + 10)}).encode(),  # oversized
        json.dumps({**PROMPT, "conversation_id": ["c1"], "workspace_roots": "/work/app"}).encode(),  # wrong types
        json.dumps({**PROMPT, "hook_event_name": {"beforeSubmitPrompt": 1}}).encode(),
        json.dumps({**PROMPT, "workspace_roots": [7], "prompt": 42}).encode(),
    ],
    ids=["cut", "binary", "array", "oversized", "types", "event-object", "roots-and-prompt"],
)
def test_a_refused_payload_still_gets_a_valid_continue_answer(monkeypatch, capsys, raw):
    assert json.loads(answer(monkeypatch, capsys, raw)) == CONTINUE


def test_a_failure_while_journaling_still_answers_continue(monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("contextflow.capture.cursor_events.append", broken)
    assert json.loads(answer(monkeypatch, capsys, json.dumps(PROMPT).encode())) == CONTINUE


def test_the_other_clients_hooks_still_print_nothing_when_refused(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"not json")))
    assert main(["hook", "stop"]) == 0
    assert capsys.readouterr().out == ""
