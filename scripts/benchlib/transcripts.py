"""Write a scripted session as each client records it: a Claude Code transcript, a Gemini CLI chat
file, a Codex rollout (the line shapes of the real samples in tests/fixtures/capture/).

A session is a list of turns; a turn is a prompt, steps and a final reply. Steps:
`{"say": text}`, `{"write": path, "content": text}`, `{"edit": path}`, `{"read": path}` (Codex: a
`cat` command it parses as a read), `{"run": command, "exit": n, "output": text}`, `{"handoff": summary,
"files": [...]}` (the agent calls write_shared_handoff). Paths are relative to the working folder, written under ROOT
(replaced by the real folder on use); every line carries what the client writes around the turn
(Claude Code: cwd, sessionId, version, timestamps; Codex: the `session_meta` line; Gemini CLI: the
chat header, its projectHash as PROJECT_HASH, the SHA-256 of the folder, put in on use).
"""

from __future__ import annotations

import json
from typing import Any

ROOT = "/REPO"
PROJECT_HASH = "<<PROJECT_HASH>>"
CLAUDE_VERSION, CODEX_VERSION = "2.1.330", "0.169.0"
SECRETS = {  # put together here so no token-shaped string sits in a fixture
    "<<GITHUB_TOKEN>>": "ghp_" + "A1b2C3d4E5f6G7h8I9j0" + "K1l2M3n4O5p6Q7r8",
    "<<AWS_KEY>>": "AKIA" + "Z3MPLE7K4Q2W9XYZ",
    "<<PASSWORD>>": "Tr0ub4dor-" + "horse-staple-77",
    # said in prose, with no key=value or token shape a pattern knows
    "<<MYSQL_PASSWORD>>": "plum" + "Orbit" + "4417quartz",
    "<<API_TOKEN>>": "q7VtK2mZ" + "9xW4bR8nL3pD",
    # exported in a command, then repeated in the reply with nothing around it
    "<<DEPLOY_TOKEN>>": "Zx9" + "Kp2Lm7" + "Qr4Tv6",
}
Turn = dict[str, Any]


def _line(value: dict[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":")) + "\n"


def _stamp(n: int) -> str:
    """The n-th instant of a recorded session (a second apart)."""
    return f"2026-11-25T20:{n // 60 % 60:02d}:{n % 60:02d}.000Z"


def claude(turns: list[Turn], session: str) -> list[str]:
    """One line per transcript entry, each with the fields Claude Code writes around a message."""
    lines: list[str] = []
    n = 0
    parent: str | None = None

    def entry(kind: str, message: dict[str, Any]) -> None:
        nonlocal n, parent
        n += 1
        uid = f"{session}-{n:04d}"
        value = {"parentUuid": parent, "isSidechain": False, "type": kind, "message": message, "uuid": uid}
        value |= {"timestamp": _stamp(n), "userType": "external", "cwd": ROOT, "sessionId": session}
        lines.append(_line({**value, "version": CLAUDE_VERSION}))
        parent = uid

    def assistant(content: list[dict[str, Any]]) -> None:
        entry("assistant", {"role": "assistant", "content": content})

    for turn in turns:
        entry("user", {"role": "user", "content": turn["prompt"]})
        for step in turn["steps"]:
            if "say" in step:
                assistant([{"type": "text", "text": step["say"]}])
                continue
            call_id = f"toolu_{session}-{n + 1:04d}"
            name, args, result, error = _claude_call(step)
            assistant([{"type": "tool_use", "id": call_id, "name": name, "input": args}])
            block = {"type": "tool_result", "tool_use_id": call_id, "content": result, "is_error": error}
            entry("user", {"role": "user", "content": [block]})
        assistant([{"type": "text", "text": turn["final"]}])
    return lines


def _claude_call(step: dict[str, Any]) -> tuple[str, dict[str, Any], str, bool]:
    if "write" in step:
        return (
            "Write",
            {"file_path": f"{ROOT}/{step['write']}", "content": step.get("content", "")},
            "File created",
            False,
        )
    if "edit" in step:
        args = {"file_path": f"{ROOT}/{step['edit']}", "old_string": "a", "new_string": "b"}
        return "Edit", args, "The file has been updated.", False
    if "read" in step:
        return "Read", {"file_path": f"{ROOT}/{step['read']}"}, "     1\t(the file)", False
    if "handoff" in step:
        args = {"agent": "claude-code", "summary": step["handoff"], "files": step.get("files", [])}
        return "mcp__contextflow__write_shared_handoff", args, "Handoff written.", False
    code = int(step.get("exit", 0))
    output = str(step.get("output", ""))
    return "Bash", {"command": step["run"]}, (f"Exit code {code}\n{output}" if code else output), code != 0


def gemini(turns: list[Turn], session: str) -> list[str]:
    head = {"sessionId": session, "projectHash": PROJECT_HASH, "startTime": _stamp(0), "lastUpdated": _stamp(0)}
    lines = [_line({**head, "kind": "main"})]
    n = 0
    for turn in turns:
        n += 1
        lines.append(
            _line(
                {"id": f"{session}-u{n}", "timestamp": _stamp(n), "type": "user", "content": [{"text": turn["prompt"]}]}
            )
        )
        calls, texts = [], []
        for step in turn["steps"]:
            if "say" in step:
                texts.append(step["say"])
                continue
            name, args, output = _gemini_call(step)
            response = {"functionResponse": {"name": name, "response": {"output": output}}}
            calls.append({"name": name, "args": args, "status": "success", "result": [response]})
        for k, call in enumerate(calls):
            message = {"id": f"{session}-g{n}-{k}", "timestamp": _stamp(n), "type": "gemini", "content": ""}
            lines.append(_line({**message, "toolCalls": [call]}))
        text = "\n\n".join([*texts, turn["final"]])
        lines.append(_line({"id": f"{session}-g{n}", "timestamp": _stamp(n), "type": "gemini", "content": text}))
    return lines


def _gemini_call(step: dict[str, Any]) -> tuple[str, dict[str, Any], str]:
    if "write" in step:
        return "write_file", {"file_path": f"{ROOT}/{step['write']}", "content": step.get("content", "")}, "ok"
    if "edit" in step:
        return "replace", {"file_path": f"{ROOT}/{step['edit']}", "old_string": "a", "new_string": "b"}, "ok"
    if "read" in step:
        return "read_file", {"file_path": f"{ROOT}/{step['read']}"}, "(the file)"
    if "handoff" in step:
        args = {"agent": "gemini-cli", "summary": step["handoff"], "files": step.get("files", [])}
        return "write_shared_handoff", args, "Handoff written."
    output = str(step.get("output", "")) or "(empty)"
    return "run_shell_command", {"command": step["run"]}, f"Output: {output}\nExit Code: {int(step.get('exit', 0))}"


def codex(turns: list[Turn], session: str) -> list[str]:
    """A rollout: the session_meta line Codex writes when the session starts, then the turns' items."""
    lines: list[str] = []
    n = 0

    def event(payload: dict[str, Any], kind: str = "event_msg") -> None:
        nonlocal n
        lines.append(_line({"timestamp": _stamp(n), "ordinal": n, "type": kind, "payload": payload}))
        n += 1

    meta = {"session_id": session, "id": session, "timestamp": _stamp(0), "cwd": ROOT, "originator": "codex_exec"}
    event({**meta, "cli_version": CODEX_VERSION, "source": "exec"}, "session_meta")

    def item(value: dict[str, Any]) -> None:
        event({"type": "item_completed", "thread_id": session, "item": value})

    for turn in turns:
        item({"type": "UserMessage", "id": f"u{n}", "content": [{"type": "text", "text": turn["prompt"]}]})
        for step in turn["steps"]:
            if "say" in step:
                item({"type": "AgentMessage", "id": f"m{n}", "content": [{"type": "text", "text": step["say"]}]})
            elif "write" in step or "edit" in step:
                path, kind = (step["write"], "add") if "write" in step else (step["edit"], "update")
                item(
                    {
                        "type": "FileChange",
                        "id": f"c{n}",
                        "changes": {f"{ROOT}/{path}": {"type": kind}},
                        "status": "completed",
                    }
                )
            elif "handoff" in step:
                args = {"agent": "codex", "summary": step["handoff"], "files": step.get("files", [])}
                event(
                    {
                        "type": "function_call",
                        "name": "mcp__contextflow__write_shared_handoff",
                        "arguments": json.dumps(args),
                    },
                    "response_item",
                )
            elif "read" in step:  # Codex reads with a shell command, which it parses as a read
                read = {"type": "read", "cmd": f"cat {step['read']}", "name": step["read"], "path": step["read"]}
                item(
                    {
                        "type": "CommandExecution",
                        "id": f"x{n}",
                        "command": ["bash", "-lc", f"cat {step['read']}"],
                        "parsed_cmd": [read],
                        "exit_code": 0,
                        "aggregated_output": "(the file)",
                    }
                )
            else:
                item(
                    {
                        "type": "CommandExecution",
                        "id": f"x{n}",
                        "command": ["bash", "-lc", step["run"]],
                        "exit_code": int(step.get("exit", 0)),
                        "aggregated_output": str(step.get("output", "")),
                    }
                )
        item({"type": "AgentMessage", "id": f"m{n}", "content": [{"type": "text", "text": turn["final"]}]})
        event({"type": "task_complete", "last_agent_message": turn["final"]})
    return lines


WRITERS = {"claude-code": claude, "gemini-cli": gemini, "codex": codex}
