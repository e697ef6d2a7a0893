"""The stdio server answers every request it read before its input ended, then exits.

`printf '...' | contextflow serve`: the pipe closes while the writes run; each one is stored and
each one is answered on stdout (the SDK used to cancel the handlers still running at end of input).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "printf", "version": "0"}},
}


def _note(request_id: int) -> dict[str, object]:
    arguments = {"text": f"note number {request_id}", "agent": "printf", "session_id": "pipe"}
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "append_shared_note", "arguments": arguments},
    }


def test_three_piped_writes_get_three_answers(tmp_path: Path) -> None:
    messages = [INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    messages += [_note(n) for n in (2, 3, 4)]
    piped = "".join(json.dumps(message) + "\n" for message in messages).encode()
    done = subprocess.run(
        [sys.executable, "-m", "contextflow", "serve"],
        input=piped,
        capture_output=True,
        env=dict(os.environ),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    answers = [json.loads(line) for line in done.stdout.decode().splitlines() if line.strip()]
    answered = {answer.get("id") for answer in answers}
    assert {2, 3, 4} <= answered, answers
    for answer in answers:
        if answer.get("id") in (2, 3, 4):
            assert "result" in answer and not answer["result"].get("isError"), answer
    stored = b"".join(path.read_bytes() for path in (tmp_path / "store").glob("events.*.jsonl"))
    assert all(f"note number {n}".encode() in stored for n in (2, 3, 4))
