#!/usr/bin/env python3
"""What the next session is told, checked fact by fact, over recorded sessions of Claude Code,
Gemini CLI and Codex (tests/fixtures/handoff/, written by make_handoff_fixtures.py).

Each case builds its world (benchlib/handoff_world.py): one store folder, one or two machines (a
writer id, a home and a state folder each), real git repositories (with or without a remote, clones,
branches) and plain folders in a temporary folder. Its sessions run in order, each as its client
runs it: `contextflow hook session-start` when it opens, `hook prompt-submit` (Gemini: BeforeAgent)
as each prompt is sent, the transcript written where the client writes it, a Stop (Gemini:
AfterAgent) per turn, SessionEnd at the end, all subprocesses with the client's payload on stdin; a
session killed mid-way runs no Stop or SessionEnd. Around them, what
people do: a handoff written through the CLI while a turn runs, contextflow commands, files edited,
commits, branch switches. Then the next client's session start runs in each folder a fact names.

Each fact (benchlib/handoff_judge.py) is carried, shown stale, shown in the wrong project, lost, or
(planted instructions) live; secrets are looked for everywhere (store, state folders, every session
start). Every session start is measured against each client's limit. Exit status 1 when any fact is
not carried, a secret is found, a session start is over a limit or a step failed; each miss is
printed with its case, its kind and why.

    python scripts/bench_handoff.py [--fixtures FOLDER] [--case NAME] [--show CASE] [--jobs N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib.handoff_judge import VERDICTS, judge, secret_verdict
from benchlib.handoff_world import Folder, World, git, injected, payload, project_hash, transcript_path
from benchlib.report import heading, table
from benchlib.transcripts import PROJECT_HASH, ROOT, SECRETS, WRITERS

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "handoff"
# the lines of a turn's last command and reply a client has not written while the command runs: Claude
# Code its result and the reply, Gemini CLI the call (written with its result) and the reply, Codex the
# completed command item, the reply and task_complete
UNWRITTEN = {"claude-code": 2, "gemini-cli": 2, "codex": 3}
KILLED_AGO = 300  # seconds between a killed session's last write and the next session start
TARGET = "target (every fact carried, none stale or misplaced, no secret, within every limit)"


def with_secrets(text: str) -> str:
    for placeholder, value in SECRETS.items():
        text = text.replace(placeholder, value)
    return text


def filled(text: str, folder: Folder) -> str:
    """A fixture's text as it is on this machine: the real folder, its hash, the real secrets."""
    return with_secrets(text.replace(ROOT, str(folder.path)).replace(PROJECT_HASH, project_hash(folder)))


def write_files(folder: Folder, session: dict[str, Any], lines: list[str], upto: int) -> None:
    """Make the files the transcript's turns so far wrote exist (the client would have written them)."""
    for line in lines[:upto]:
        for path in _written(line, str(folder.path) + "/"):
            target = folder.path / path
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


def replay(world: World, session: dict[str, Any], n: int) -> None:
    """One session as its client runs it (or what a person does at the terminal), then what follows it."""
    folder = world.folders[session.get("folder", "main")]
    for args in (session.get("before") or {}).get("git", []):
        git(folder.path, *args)
    if "person" in session:
        person(world, folder, session["person"])
    else:
        client_session(world, session, n, folder)
    after = session.get("after") or {}
    for path in after.get("edit", []):
        with open(folder.path / path, "a", encoding="utf-8") as handle:
            handle.write("# changed after the handoff\n")
    if after.get("commit"):
        git(folder.path, "add", "-A")
        git(folder.path, "commit", "-qm", after.get("message", "later work"))
    for args in after.get("git", []):
        git(folder.path, *args)


def client_session(world: World, session: dict[str, Any], n: int, folder: Folder) -> None:
    client, sid = session["client"], session["session_id"]
    lines = filled((FIXTURES / session["transcript"]).read_text(), folder).splitlines(keepends=True)
    transcript = transcript_path(client, folder, sid)
    transcript.parent.mkdir(parents=True, exist_ok=True)
    transcript.write_text("".join(lines[: session["head"]]))  # Codex and Gemini CLI write a header first
    written = session["head"]
    opened = world.hook("session-start", payload(client, "start", sid, transcript, folder), folder, client)
    world.starts.append((f"session {n} ({client}) start", injected(opened)))
    killed = session.get("killed", False)
    handoff = session.get("server_handoff")
    for index, end in enumerate(session["turn_ends"]):
        prompt = filled(session["prompts"][index], folder)
        asked = world.hook(
            "prompt-submit", payload(client, "prompt", sid, transcript, folder, prompt=prompt), folder, client
        )
        world.prompts.append((f"session {n} ({client}) prompt {index + 1}", injected(asked)))
        last = index == len(session["turn_ends"]) - 1
        cut = end - UNWRITTEN[client] if last and session.get("cut_before_last_result") else end
        write_files(folder, session, lines, cut)
        with open(transcript, "a", encoding="utf-8") as handle:
            handle.write("".join(lines[written:cut]))
        written = cut
        if handoff and handoff["turn"] == index:  # the agent wrote it while the turn ran: no session id
            world.cli(["handoff", "--agent", client, filled(handoff["summary"], folder)], folder)
        if killed:
            continue  # the client was killed: no hook runs after the session's start
        final = filled(session["finals"][index], folder)
        if client == "gemini-cli":
            extra = {"prompt": prompt, "prompt_response": final}
        else:
            extra = {"last_assistant_message": final}
        world.hook("stop", payload(client, "stop", sid, transcript, folder, **extra), folder, client)
    if killed:  # the next session starts minutes later, not within the same second
        then = time.time() - KILLED_AGO
        os.utime(transcript, (then, then))
        return
    with open(transcript, "a", encoding="utf-8") as handle:
        handle.write("".join(lines[written:]))
    world.hook("session-end", payload(client, "end", sid, transcript, folder), folder, client)


def person(world: World, folder: Folder, steps: list[dict[str, Any]]) -> None:
    """contextflow commands run at the terminal; `as` names the id a command printed, `@name` uses it."""
    ids: dict[str, str] = {}
    for step in steps:
        args = [ids.get(arg[1:], arg) if arg.startswith("@") else filled(arg, folder) for arg in step["cli"]]
        out = world.cli([*args, "--format", "json"] if "as" in step else args, folder)
        if "as" in step:
            try:
                ids[step["as"]] = str(json.loads(out)["id"])
            except (ValueError, KeyError, TypeError):
                world.problems.append(f"contextflow {args[0]} printed no id: {out[:200]!r}")


def next_start(world: World, case: dict[str, Any], key: str) -> str:
    """The next session's start in a folder, by the case's next client."""
    client, folder = case["next"], world.folders[key]
    sid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"bench-handoff/{case['name']}/next/{key}"))
    transcript = transcript_path(client, folder, sid)
    transcript.parent.mkdir(parents=True, exist_ok=True)
    transcript.write_text(filled("".join(WRITERS[client]([], sid)), folder))
    shown = injected(world.hook("session-start", payload(client, "start", sid, transcript, folder), folder, client))
    world.starts.append((f"next session start in {key}", shown))
    return shown


def run_case(case: dict[str, Any], root: Path) -> dict[str, Any]:
    world = World.make(root, case)
    for n, session in enumerate(case["sessions"], 1):
        replay(world, session, n)
    shown = {key: next_start(world, case, key) for key in dict.fromkeys(f.get("at", "main") for f in case["facts"])}
    places = [world.store, *(machine.state for machine in world.machines.values())]
    found = []
    for fact in case["facts"]:
        if "secret" in fact:
            outputs = world.starts + world.prompts
            kept, where = secret_verdict(with_secrets(fact["secret"]), outputs, places, root)
            verdict = (kept, f"{fact['secret'].strip('<>').lower()} {where}")
        else:
            verdict = judge(fact, shown[fact.get("at", "main")], with_secrets)
        found.append((fact["kind"], *verdict))
    return {"found": found, "shown": shown, "starts": world.starts, "problems": world.problems}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fixtures", type=Path, default=None, help="the fixtures folder (default: the repository's)")
    parser.add_argument("--case", action="append", help="run only this case (repeatable)")
    parser.add_argument("--show", help="print this case's next session start(s)")
    parser.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 1), help="cases run at once")
    parser.add_argument("--keep", type=Path, help="run the cases in this new folder and keep it (to look inside)")
    args = parser.parse_args()
    global FIXTURES
    FIXTURES = args.fixtures or FIXTURES
    cases = [c for c in json.loads((FIXTURES / "cases.json").read_text()) if not args.case or c["name"] in args.case]
    with tempfile.TemporaryDirectory(prefix="cf-handoff-") as tmp, ThreadPoolExecutor(max(1, args.jobs)) as pool:
        where = args.keep.resolve() if args.keep else Path(tmp)
        results = list(pool.map(lambda case: run_case(case, where / case["name"]), cases))
    for case, result in zip(cases, results, strict=True):
        if args.show == case["name"]:
            for key, text in result["shown"].items():
                print(f"--- next session start in {key} ({case['next']})\n{text}\n")
    return report(cases, results)


def report(cases: list[dict[str, Any]], results: list[dict[str, Any]]) -> int:
    from contextflow.adapters.session_start import CLIENT_LIMITS

    verdicts: dict[str, Counter[str]] = {}
    misses, secrets, leaks = [], Counter[str](), []
    for case, result in zip(cases, results, strict=True):
        for kind, verdict, why in result["found"]:
            if verdict in ("kept out", "leaked"):
                secrets[verdict] += 1
                if verdict == "leaked":
                    leaks.append(f"{case['name']}: {why}")
                    misses.append(f"{case['name']}: secret: LEAKED: {why}")
                continue
            verdicts.setdefault(kind, Counter())[verdict] += 1
            if verdict != "carried":
                misses.append(f"{case['name']}: {kind}: {verdict.upper()}: {why}")
        misses += [f"{case['name']}: step failed: {problem}" for problem in result["problems"]]
    sessions = sum(len(case["sessions"]) for case in cases)
    clients = sorted({s["client"] for case in cases for s in case["sessions"] if "client" in s})
    heading(f"Facts at the next session start: {len(cases)} cases, {sessions} recorded sessions ({', '.join(clients)})")
    rows = [(kind, str(sum(counts.values())), *(str(counts[v]) for v in VERDICTS)) for kind, counts in verdicts.items()]
    table(("kind of fact", "facts", *VERDICTS), rows)
    total = Counter[str]()
    for counts in verdicts.values():
        total.update(counts)
    print("all facts: " + ", ".join(f"{total[v]} {v}" for v in VERDICTS))
    print(f"secrets: {sum(secrets.values())} planted, {secrets['leaked']} found on disk or in a session start")
    for leak in leaks:
        print(f"  LEAKED {leak}")
    heading("Session start size against each client's limit (characters)")
    size_rows, over = [], []
    for case, result in zip(cases, results, strict=True):
        sizes = [len(text) for _, text in result["starts"]]
        for label, text in result["starts"]:
            over += [
                f"{case['name']}: {label}: {len(text):,} > {name} {limit:,}"
                for _, name, limit in CLIENT_LIMITS
                if limit and len(text) > limit
            ]
        fits = [
            f"{name}: {'fits' if limit is None or max(sizes) <= limit else 'OVER'}" for _, name, limit in CLIENT_LIMITS
        ]
        size_rows.append((case["name"], case["next"], str(len(sizes)), f"{max(sizes):,}", "; ".join(fits)))
    table(("case", "next client", "starts", "largest", "limits"), size_rows)
    limits = ", ".join(f"{label} {limit:,}" if limit else f"{label} none" for _, label, limit in CLIENT_LIMITS)
    print(f"(limits: {limits})")
    misses += [f"OVER A LIMIT: {line}" for line in over]
    if misses:
        heading(f"Misses ({len(misses)})")
        for miss in misses:
            print(f"  {miss}")
    ok = not misses and not leaks
    print(f"\n{TARGET}:", "met" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
