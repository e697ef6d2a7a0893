"""Every way text reaches the store, for the secret tests and `scripts/bench_secrets.py`.

Capture channels go through a real Claude Code transcript and the Stop hook (`contextflow hook
stop`): the person's prompt, a command (failing, so its error line repeats it), a tool's output,
the reply and a handoff the agent wrote (as the turn records it). Store channels go through the
features' own writes: a handoff written by the tool, a context record, a graph node, a
server-memory import. `stored(store, state)` is everything on disk
afterwards: the store's logs and blobs, and the machine-local state folder.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

CAPTURE_CHANNELS = ("prompt", "command", "tool output", "reply", "handoff")
STORE_CHANNELS = ("handoff (tool)", "record", "node", "import")
CHANNELS = CAPTURE_CHANNELS + STORE_CHANNELS


def _line(kind: str, n: int, content: Any, **extra: Any) -> str:
    entry = {"type": kind, "uuid": f"{kind}-{n}", "message": {"role": kind, "content": content}, **extra}
    return json.dumps(entry)


def claude_turn(n: int, prompt: str, command: str, output: str, exit_code: int, reply: str, summary: str) -> list[str]:
    """One turn of a Claude Code transcript: a prompt, a Bash call and its result, a handoff call, a reply."""
    failed = exit_code != 0
    result = (f"Exit code {exit_code}\n" if failed else "") + output
    return [
        _line("user", n, prompt),
        _line("assistant", n, [{"type": "tool_use", "id": f"bash-{n}", "name": "Bash", "input": {"command": command}}]),
        _line("user", n, [{"type": "tool_result", "tool_use_id": f"bash-{n}", "content": result, "is_error": failed}]),
        _line(
            "assistant",
            n,
            [
                {
                    "type": "tool_use",
                    "id": f"handoff-{n}",
                    "name": "mcp__contextflow__write_shared_handoff",
                    "input": {"summary": summary, "agent": "claude"},
                }
            ],
        ),
        _line("user", n, [{"type": "tool_result", "tool_use_id": f"handoff-{n}", "content": "ok"}]),
        _line("assistant", n, [{"type": "text", "text": reply}]),
    ]


def turn_for(channel: str, n: int, text: str) -> list[str]:
    """A turn carrying `text` in one capture channel (and harmless text in the others)."""
    parts = {
        "prompt": "look at the deploy",
        "command": "ls -1",
        "output": "",
        "exit": 0,
        "reply": "Looked at it; all good.",
        "summary": "",
    }
    if channel == "prompt":
        parts["prompt"] = text
    elif channel == "command":
        parts.update(command=text, exit=1, output="error: connection refused")
    elif channel == "tool output":
        parts.update(command="make deploy", exit=2, output=f"deploying\nerror: rejected {text}")
    elif channel == "reply":
        parts["reply"] = f"I decided to keep it. {text}"
    elif channel == "handoff":
        parts["summary"] = f"Deployed. {text}"
    lines = claude_turn(
        n,
        str(parts["prompt"]),
        str(parts["command"]),
        str(parts["output"]),
        int(parts["exit"]),  # type: ignore[call-overload]
        str(parts["reply"]),
        str(parts["summary"]),
    )
    return lines if parts["summary"] else [line for line in lines if "handoff-" not in line]


def run_stop_hook(main: Callable[[list[str]], int], transcript: Path, session: str, cwd: Path, final: str) -> None:
    """`contextflow hook stop` with Claude Code's payload for `transcript`, in this process."""
    payload = {
        "session_id": session,
        "transcript_path": str(transcript),
        "cwd": str(cwd),
        "hook_event_name": "Stop",
        "last_assistant_message": final,
    }
    stdin = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode()))
    try:
        with redirect_stdout(io.StringIO()):
            code = main(["hook", "stop"])
    finally:
        sys.stdin = stdin
    assert code == 0, f"the Stop hook exited {code}"


def capture(main: Callable[[list[str]], int], folder: Path, channel: str, texts: list[str], session: str) -> None:
    """Every text through one capture channel: one turn each, one transcript, one Stop hook call."""
    lines = [line for n, text in enumerate(texts) for line in turn_for(channel, n, text)]
    transcript = folder / f"{session}.jsonl"
    transcript.write_text("\n".join(lines) + "\n")
    final = json.loads(lines[-1])["message"]["content"][0]["text"]
    run_stop_hook(main, transcript, session, folder, final)
    transcript.unlink()  # the client's own file holds them verbatim; ours must not


def store(app: Any, channel: str, texts: list[str], folder: Path) -> None:
    """Every text through one store channel: a handoff written by the tool, a context record, a graph
    node, an import."""
    if channel == "handoff (tool)":
        from contextflow.sessions.core import write_handoff

        for text in texts:
            write_handoff(app, agent="claude", summary=f"Deployed. {text}", next_steps=[f"rotate {text}"])
    elif channel == "record":
        from contextflow.records.core import set_record

        for n, text in enumerate(texts):
            set_record(app, key=f"cfg:item-{n}", value={"note": text, "owner": "ops"})
    elif channel == "node":
        from contextflow.graph.writes import add_node

        for n, text in enumerate(texts):
            add_node(app, type="fact", content=f"deploy fact {n}: {text}", tags=["topic:deploy"])
    elif channel == "import":
        from contextflow.imports.run import run_import

        memory = folder / "memory.json"
        entities = [
            {"type": "entity", "name": f"Service {n}", "entityType": "service", "observations": [text]}
            for n, text in enumerate(texts)
        ]
        memory.write_text("\n".join(json.dumps(entity) for entity in entities))
        run_import(app, str(memory), fmt="server-memory")
        memory.unlink()


def stored(store_dir: Path, state_dir: Path) -> Iterator[tuple[Path, str]]:
    """Every file of the store and the state folder, as text."""
    for folder in (store_dir, state_dir):
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not path.is_symlink():
                yield path, path.read_bytes().decode("utf-8", "replace")
