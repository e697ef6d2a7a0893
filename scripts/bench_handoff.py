#!/usr/bin/env python3
"""What the next session is told, checked fact by fact, over recorded sessions of Claude Code,
Gemini CLI and Codex (tests/fixtures/handoff/, written by make_handoff_fixtures.py).

Each case replays its sessions through the real hooks (`contextflow hook stop`, Gemini's
AfterAgent, SessionEnd) on a fresh store and git repository, in order, with what happens around
them (a handoff the agent writes through the server during a turn, files edited and committed
after); then the next client's `hook session-start` runs in the repository. For each kind of fact
it prints how many reached that session start, how many were shown stale and how many were lost,
the secrets found anywhere (store, state folder, output), and each session start's size against
each client's limit. Exit status 1 when a target is missed (every fact carried, none stale, no
secret, every session start within every client's limit).

    python scripts/bench_handoff.py [--fixtures tests/fixtures/handoff] [--show CASE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib.report import heading, table
from benchlib.transcripts import ROOT, SECRETS

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "handoff"
GIT_ENV = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid", "GIT_COMMITTER_NAME": "b"}
GIT_ENV |= {"GIT_COMMITTER_EMAIL": "b@example.invalid", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env={**os.environ, **GIT_ENV}, timeout=60)


def new_repository(root: Path, name: str) -> Path:
    repo = root / name
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    git(repo, "remote", "add", "origin", f"https://github.com/bench/{name}.git")
    (repo / "README.md").write_text("bench\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "start")
    return repo


def with_secrets(text: str) -> str:
    for placeholder, value in SECRETS.items():
        text = text.replace(placeholder, value)
    return text


def hook(event: str, payload: dict[str, Any], env: dict[str, str]) -> str:
    from contextflow.adapters import hooks

    return hooks.run(event, json.dumps(payload).encode(), env)


def write_files(repo: Path, session: dict[str, Any], lines: list[str], upto: int) -> None:
    """Make the files the transcript's turns so far wrote exist (the client would have written them)."""
    for line in lines[:upto]:
        for path in _written(line, str(repo) + "/"):
            target = repo / path
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(f"# written in {session['transcript']}\n")


def _written(line: str, marker: str) -> list[str]:
    found = []
    start = line.find(marker)
    while start >= 0:
        end = min(i for i in (line.find('"', start), line.find("\\", start), len(line)) if i >= 0)
        found.append(line[start + len(marker) : end])
        start = line.find(marker, end)
    return found


def replay(case: dict[str, Any], session: dict[str, Any], n: int, repo: Path, env: dict[str, str], home: Path) -> None:
    """One session through the hooks its client runs: a Stop (AfterAgent) per turn, SessionEnd at the end."""
    client = session["client"]
    source = (FIXTURES / session["transcript"]).read_text()
    lines = with_secrets(source.replace(ROOT, str(repo))).splitlines(keepends=True)
    folder = {
        "claude-code": ".claude/projects/bench",
        "gemini-cli": ".gemini/tmp/bench/chats",
        "codex": ".codex/sessions",
    }
    name = {"codex": f"rollout-{case['name']}-{n}.jsonl", "gemini-cli": f"session-{case['name']}-{n}.jsonl"}
    transcript = home / folder[client] / name.get(client, f"{case['name']}-{n}.jsonl")
    transcript.parent.mkdir(parents=True, exist_ok=True)
    transcript.write_text("")
    run_env = {**env, "CONTEXTFLOW_CLIENT": client}
    base = {"session_id": f"{case['name']}-{n}", "cwd": str(repo), "transcript_path": str(transcript)}
    written = 0
    handoff = session.get("server_handoff")
    for index, end in enumerate(session["turn_ends"]):
        last = index == len(session["turn_ends"]) - 1
        cut = end - 2 if last and session.get("cut_before_last_result") else end  # Stop before the last result
        write_files(repo, session, lines, end)
        with open(transcript, "a", encoding="utf-8") as handle:
            handle.write("".join(lines[written:cut]))
        written = cut
        if handoff and handoff["turn"] == index:  # the server wrote it while the turn ran: no session id
            server_handoff(run_env, repo, client, with_secrets(handoff["summary"]))
        final = with_secrets(session["finals"][index])
        if client == "gemini-cli":
            payload = {**base, "hook_event_name": "AfterAgent", "prompt": with_secrets(session["prompts"][index])}
            hook("stop", {**payload, "prompt_response": final}, run_env)
        else:
            hook("stop", {**base, "hook_event_name": "Stop", "last_assistant_message": final}, run_env)
    with open(transcript, "a", encoding="utf-8") as handle:
        handle.write("".join(lines[written:]))
    hook("session-end", {**base, "hook_event_name": "SessionEnd"}, run_env)
    after = session.get("after") or {}
    for path in after.get("edit", []):
        with open(repo / path, "a", encoding="utf-8") as handle:
            handle.write("# changed after the handoff\n")
    if after.get("commit"):
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "later work")


def server_handoff(env: dict[str, str], repo: Path, client: str, summary: str) -> None:
    from contextflow.app import App
    from contextflow.sessions import core as sessions

    app = App.open(env, cwd=repo)
    try:
        sessions.write_handoff(app, agent=client, summary=summary)
    finally:
        app.close()


def session_start(env: dict[str, str], repo: Path, client: str) -> str:
    payload = {"session_id": "next", "cwd": str(repo), "hook_event_name": "SessionStart", "source": "startup"}
    out = hook("session-start", payload, {**env, "CONTEXTFLOW_CLIENT": client})
    return str(json.loads(out)["hookSpecificOutput"]["additionalContext"]) if out else ""


def files_holding(folder: Path, needle: str) -> list[str]:
    if not folder.exists():
        return []
    return [str(p) for p in folder.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def judge(fact: dict[str, Any], shown: str, places: list[Path]) -> str:
    """reached, stale or lost (secrets: "kept out" or "leaked")."""
    if "secret" in fact:
        value = with_secrets(fact["secret"])
        leaked = value in shown or any(files_holding(folder, value) for folder in places)
        return "leaked" if leaked else "kept out"
    if any(with_secrets(text) in shown for text in fact.get("not_shown", [])):
        return "stale"
    return "reached" if all(with_secrets(text) in shown for text in fact["shown"]) else "lost"


def run_case(case: dict[str, Any], root: Path) -> tuple[list[tuple[str, str]], str]:
    home = root / "home"
    env = {
        "HOME": str(home),
        "CONTEXTFLOW_STORE": str(root / "store"),
        "CONTEXTFLOW_STATE": str(root / "state"),
        "CONTEXTFLOW_WRITER": "bench",
        "PATH": os.environ.get("PATH", ""),
    }
    repo = new_repository(root, case["name"])
    for n, session in enumerate(case["sessions"], 1):
        replay(case, session, n, repo, env, home)
    shown = session_start(env, repo, case["next"])
    places = [root / "store", root / "state"]
    return [(fact["kind"], judge(fact, shown, places)) for fact in case["facts"]], shown


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fixtures", type=Path, default=None, help="the fixtures folder (default: the repository's)")
    parser.add_argument("--show", help="print this case's session start")
    args = parser.parse_args()
    global FIXTURES
    FIXTURES = args.fixtures or FIXTURES
    from contextflow.adapters.session_start import CLIENT_LIMITS

    cases = json.loads((FIXTURES / "cases.json").read_text())
    verdicts: dict[str, Counter[str]] = {}
    sizes = []
    with tempfile.TemporaryDirectory(prefix="cf-handoff-") as tmp:
        for case in cases:
            found, shown = run_case(case, Path(tmp) / case["name"])
            for kind, verdict in found:
                verdicts.setdefault(kind, Counter())[verdict] += 1
            sizes.append((case["name"], case["next"], len(shown)))
            if args.show == case["name"]:
                print(shown)
    sessions = sum(len(case["sessions"]) for case in cases)
    clients = sorted({s["client"] for case in cases for s in case["sessions"]})
    heading(f"Facts at the next session start: {len(cases)} cases, {sessions} recorded sessions ({', '.join(clients)})")
    rows, missed = [], 0
    for kind, counts in verdicts.items():
        if kind == "secret":
            continue
        total = sum(counts.values())
        missed += counts["stale"] + counts["lost"]
        rows.append((kind, str(total), str(counts["reached"]), str(counts["stale"]), str(counts["lost"])))
    table(("kind of fact", "facts", "reached", "shown stale", "lost"), rows)
    secrets = verdicts.get("secret", Counter())
    print(f"\nsecrets: {sum(secrets.values())} planted, {secrets['leaked']} found on disk or in a session start")
    heading("Session start size against each client's limit (characters)")
    size_rows = []
    over = 0
    for name, client, size in sizes:
        fits = [f"{label}: {'fits' if limit is None or size <= limit else 'OVER'}" for _, label, limit in CLIENT_LIMITS]
        over += sum(1 for _, _, limit in CLIENT_LIMITS if limit is not None and size > limit)
        size_rows.append((name, client, f"{size:,}", "; ".join(fits)))
    table(("case", "next client", "size", "limits"), size_rows)
    limits = ", ".join(f"{label} {limit:,}" if limit else f"{label} none" for _, label, limit in CLIENT_LIMITS)
    print(f"(limits: {limits})")
    ok = missed == 0 and secrets["leaked"] == 0 and over == 0
    print("\ntarget (every fact carried, none stale, no secret, within every limit):", "met" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
