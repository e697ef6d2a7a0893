"""Write a scripted session as each client records it: a Claude Code transcript, a Gemini CLI chat
file, a Codex rollout (the line shapes of the real samples in tests/fixtures/capture/).

A session is a list of turns; a turn is a prompt, steps and a final reply. Steps:
`{"say": text}`, `{"write": path, "content": text}`, `{"edit": path}`, `{"run": command, "exit": n,
"output": text}`, `{"handoff": summary, "files": [...]}` (the agent calls write_shared_handoff).
Paths are relative to the repository, written under ROOT (replaced by the real folder on use).
"""

from __future__ import annotations

import json
from typing import Any

ROOT = "/REPO"
SECRETS = {  # put together here so no token-shaped string sits in a fixture
    "<<GITHUB_TOKEN>>": "ghp_" + "A1b2C3d4E5f6G7h8I9j0" + "K1l2M3n4O5p6Q7r8",
    "<<AWS_KEY>>": "AKIA" + "Z3MPLE7K4Q2W9XYZ",
    "<<PASSWORD>>": "Tr0ub4dor-" + "horse-staple-77",
}
Turn = dict[str, Any]


def _line(value: dict[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":")) + "\n"


def claude(turns: list[Turn], session: str) -> list[str]:
    """One line per transcript entry. The Stop hook's cut points are marked by the caller."""
    lines: list[str] = []
    n = 0

    def uid() -> str:
        nonlocal n
        n += 1
        return f"{session}-{n:04d}"

    for turn in turns:
        lines.append(
            _line(
                {
                    "type": "user",
                    "uuid": uid(),
                    "sessionId": session,
                    "isSidechain": False,
                    "message": {"role": "user", "content": turn["prompt"]},
                }
            )
        )
        for step in turn["steps"]:
            if "say" in step:
                content = [{"type": "text", "text": step["say"]}]
                lines.append(
                    _line(
                        {
                            "type": "assistant",
                            "uuid": uid(),
                            "isSidechain": False,
                            "message": {"role": "assistant", "content": content},
                        }
                    )
                )
                continue
            call_id = f"toolu_{uid()}"
            name, args, result, error = _claude_call(step)
            use = {"type": "tool_use", "id": call_id, "name": name, "input": args}
            lines.append(
                _line(
                    {
                        "type": "assistant",
                        "uuid": uid(),
                        "isSidechain": False,
                        "message": {"role": "assistant", "content": [use]},
                    }
                )
            )
            block = {"type": "tool_result", "tool_use_id": call_id, "content": result, "is_error": error}
            lines.append(
                _line(
                    {
                        "type": "user",
                        "uuid": uid(),
                        "isSidechain": False,
                        "message": {"role": "user", "content": [block]},
                    }
                )
            )
        final = [{"type": "text", "text": turn["final"]}]
        lines.append(
            _line(
                {
                    "type": "assistant",
                    "uuid": uid(),
                    "isSidechain": False,
                    "message": {"role": "assistant", "content": final},
                }
            )
        )
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
    if "handoff" in step:
        args = {"agent": "claude-code", "summary": step["handoff"], "files": step.get("files", [])}
        return "mcp__contextflow__write_shared_handoff", args, "Handoff written.", False
    code = int(step.get("exit", 0))
    output = str(step.get("output", ""))
    return "Bash", {"command": step["run"]}, (f"Exit code {code}\n{output}" if code else output), code != 0


def gemini(turns: list[Turn], session: str) -> list[str]:
    lines = [_line({"sessionId": session, "projectHash": "0" * 64, "kind": "main"})]
    n = 0
    for turn in turns:
        n += 1
        lines.append(_line({"id": f"{session}-u{n}", "type": "user", "content": [{"text": turn["prompt"]}]}))
        calls, texts = [], []
        for step in turn["steps"]:
            if "say" in step:
                texts.append(step["say"])
                continue
            name, args, output = _gemini_call(step)
            response = {"functionResponse": {"name": name, "response": {"output": output}}}
            calls.append({"name": name, "args": args, "status": "success", "result": [response]})
        for k, call in enumerate(calls):
            lines.append(_line({"id": f"{session}-g{n}-{k}", "type": "gemini", "content": "", "toolCalls": [call]}))
        text = "\n\n".join([*texts, turn["final"]])
        lines.append(_line({"id": f"{session}-g{n}", "type": "gemini", "content": text}))
    return lines


def _gemini_call(step: dict[str, Any]) -> tuple[str, dict[str, Any], str]:
    if "write" in step:
        return "write_file", {"file_path": f"{ROOT}/{step['write']}", "content": step.get("content", "")}, "ok"
    if "edit" in step:
        return "replace", {"file_path": f"{ROOT}/{step['edit']}", "old_string": "a", "new_string": "b"}, "ok"
    if "handoff" in step:
        args = {"agent": "gemini-cli", "summary": step["handoff"], "files": step.get("files", [])}
        return "write_shared_handoff", args, "Handoff written."
    output = str(step.get("output", "")) or "(empty)"
    return "run_shell_command", {"command": step["run"]}, f"Output: {output}\nExit Code: {int(step.get('exit', 0))}"


def codex(turns: list[Turn], session: str) -> list[str]:
    lines: list[str] = []
    n = 0

    def event(payload: dict[str, Any], kind: str = "event_msg") -> None:
        nonlocal n
        n += 1
        lines.append(
            _line({"timestamp": f"2026-11-25T20:00:{n % 60:02d}.000Z", "ordinal": n, "type": kind, "payload": payload})
        )

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
