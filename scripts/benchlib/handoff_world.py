"""Where a handoff case runs: machines sharing one store folder, working folders, and the hooks run
as each client runs them.

- A machine is a writer id with its own home and machine-local state folder; every machine of a
  case writes the same store folder (what a sync tool would carry between them).
- A working folder is a git repository (with a remote, or without one: `remote: null`), a clone of
  another folder (same history and remote, on any machine), or a plain folder without git.
- A hook is `contextflow hook EVENT` in a subprocess, in the working folder, with the client's
  payload on stdin and what `contextflow install` puts in each hook command (`CONTEXTFLOW_CLIENT`);
  a transcript is written where the client writes it under the machine's home.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TREE = Path(__file__).resolve().parents[2]  # the contextflow tree whose code the hooks run
CONTEXTFLOW = [sys.executable, "-m", "contextflow"]
GIT_ENV = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid", "GIT_COMMITTER_NAME": "b"}
GIT_ENV |= {"GIT_COMMITTER_EMAIL": "b@example.invalid", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
HOOK_TIMEOUT = 120  # seconds; a hook that takes longer is a failure of its own


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=folder,
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
        timeout=60,
    )
    return done.stdout


@dataclass(frozen=True)
class Machine:
    writer: str
    home: Path
    state: Path


@dataclass(frozen=True)
class Folder:
    key: str
    path: Path
    machine: Machine


@dataclass
class World:
    """One case's machines, folders and store; what every session start and prompt hook gave the model."""

    root: Path
    machines: dict[str, Machine] = field(default_factory=dict)
    folders: dict[str, Folder] = field(default_factory=dict)
    starts: list[tuple[str, str]] = field(default_factory=list)  # (label, what a session start gave the model)
    prompts: list[tuple[str, str]] = field(default_factory=list)  # (label, what a prompt-submit hook gave it)
    problems: list[str] = field(default_factory=list)  # hooks that failed to run

    @property
    def store(self) -> Path:
        return self.root / "store"

    @classmethod
    def make(cls, root: Path, case: dict[str, Any]) -> World:
        world = cls(root)
        for key, writer in (case.get("machines") or {"main": "bench"}).items():
            world.machines[key] = Machine(writer, root / key / "home", root / key / "state")
        default = {"main": {"path": case["name"], "remote": f"https://github.com/bench/{case['name']}.git"}}
        for key, spec in (case.get("folders") or default).items():
            world.folders[key] = world._folder(key, spec)
        return world

    def _folder(self, key: str, spec: dict[str, Any]) -> Folder:
        machine = self.machines[spec.get("machine", "main")]
        path = self.root / "work" / spec["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        if spec.get("plain"):
            path.mkdir()
            (path / "notes.txt").write_text("a folder outside any repository\n")
        elif spec.get("clone_of"):
            source = self.folders[spec["clone_of"]].path
            git(path.parent, "clone", "-q", str(source), path.name)
            remote = git(source, "remote").split()
            if remote:
                git(path, "remote", "set-url", "origin", git(source, "remote", "get-url", remote[0]).strip())
            else:
                git(path, "remote", "remove", "origin")
        else:
            path.mkdir()
            git(path, "init", "-q", "-b", "main")
            if spec.get("remote"):
                git(path, "remote", "add", "origin", spec["remote"])
            (path / "README.md").write_text(f"{spec.get('readme', 'bench')}\n")
            git(path, "add", "-A")
            git(path, "commit", "-qm", "start")
        return Folder(key, path, machine)

    def env(self, machine: Machine, client: str | None = None) -> dict[str, str]:
        env = {
            "HOME": str(machine.home),
            "CONTEXTFLOW_STORE": str(self.store),
            "CONTEXTFLOW_STATE": str(machine.state),
            "CONTEXTFLOW_WRITER": machine.writer,
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": str(TREE),
            "LANG": "C.UTF-8",
            "TZ": "UTC",
        }
        return {**env, "CONTEXTFLOW_CLIENT": client} if client else env

    def hook(self, event: str, payload: dict[str, Any], folder: Folder, client: str) -> str:
        """`contextflow hook EVENT` as the client runs it; its stdout."""
        done = subprocess.run(
            [*CONTEXTFLOW, "hook", event],
            input=json.dumps(payload),
            cwd=folder.path,
            env=self.env(folder.machine, client),
            capture_output=True,
            text=True,
            timeout=HOOK_TIMEOUT,
            check=False,
        )
        if done.returncode != 0:
            self.problems.append(f"hook {event} exited {done.returncode}: {done.stderr.strip()[-300:]}")
        return done.stdout

    def cli(self, args: list[str], folder: Folder) -> str:
        """A contextflow command a person (or the agent's shell) runs in the folder; its stdout."""
        done = subprocess.run(
            [*CONTEXTFLOW, *args],
            cwd=folder.path,
            env=self.env(folder.machine),
            capture_output=True,
            text=True,
            timeout=HOOK_TIMEOUT,
            check=False,
        )
        if done.returncode != 0:
            self.problems.append(f"contextflow {args[0]} exited {done.returncode}: {done.stderr.strip()[-300:]}")
        return done.stdout


def transcript_path(client: str, folder: Folder, session_id: str) -> Path:
    """Where the client writes a session's record (Claude Code: a folder per working folder; Codex: a
    folder per day; Gemini CLI: a folder per project name)."""
    home, now = folder.machine.home, time.gmtime()
    if client == "claude-code":
        return home / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(folder.path)) / f"{session_id}.jsonl"
    if client == "codex":
        day = time.strftime("%Y/%m/%d", now)
        return (
            home / ".codex" / "sessions" / day / f"rollout-{time.strftime('%Y-%m-%dT%H-%M-%S', now)}-{session_id}.jsonl"
        )
    stamp = time.strftime("%Y-%m-%dT%H-%M", now)
    return home / ".gemini" / "tmp" / folder.path.name / "chats" / f"session-{stamp}-{session_id[:8]}.jsonl"


def project_hash(folder: Folder) -> str:
    return hashlib.sha256(str(folder.path).encode()).hexdigest()


def payload(client: str, event: str, session_id: str, transcript: Path, folder: Folder, **extra: Any) -> dict[str, Any]:
    """The JSON the client sends a hook (the fields of tests/fixtures/capture/*-Stop.json and the like)."""
    base: dict[str, Any] = {"session_id": session_id, "transcript_path": str(transcript), "cwd": str(folder.path)}
    names = {"start": "SessionStart", "prompt": "UserPromptSubmit", "stop": "Stop", "end": "SessionEnd"}
    gemini = {"prompt": "BeforeAgent", "stop": "AfterAgent"}
    base["hook_event_name"] = gemini.get(event, names[event]) if client == "gemini-cli" else names[event]
    if event == "start":
        base["source"] = "startup"
    if client == "codex":
        base |= {"model": "gpt-5.5", "permission_mode": "bypassPermissions"}
    if client == "gemini-cli":
        base["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    if event == "stop":
        base["stop_hook_active"] = False
    if event == "end":
        base["reason"] = "exit" if client == "gemini-cli" else "other"
    return {**base, **extra}


def injected(stdout: str) -> str:
    """The text a session start gives the model (hookSpecificOutput.additionalContext), "" for none."""
    if not stdout.strip():
        return ""
    try:
        value = json.loads(stdout)
    except ValueError:
        return f"(not JSON: {stdout[:200]!r})"
    return str(((value or {}).get("hookSpecificOutput") or {}).get("additionalContext") or "")
