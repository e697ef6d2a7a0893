"""A capture store: a simulated year of one heavy user, written straight as event lines.

About 4 sessions a day over 365 days on two machines, in five repositories (`shared`, the one the
benchmarks' session start runs in, holds the largest share), each session ~35 captured turns
(`capture.turn`, records shaped as `capture/turns.py` stores them: request, files, commands, tests,
final reply, sometimes decisions and open questions, the files' state), the automatic handoff capture
writes when the session first has work and again when it closes, the session as a conversation
record, and now and then a handoff or note the agent wrote. The default size (58,101 events, about
70 MB) is the one the issue measured. Lines go through `contextflow.core.events.encode`.
"""

from __future__ import annotations

import hashlib
import os
import random
import time
from pathlib import Path

from benchlib.storegen import WORDS, GeneratedStore, fast_ids
from contextflow.core.clock import COUNTER_BITS
from contextflow.core.events import Event, encode
from contextflow.core.log import log_path

YEAR_EVENTS = 58_101
PROJECTS = (("shared", 50), ("webapp", 20), ("infra", 12), ("ml-pipeline", 10), ("docs", 8))
WRITERS = (("laptop-3f9a1c", 70), ("desktop-8b27e0", 30))
AGENTS = ("claude-code", "codex", "gemini")
TURNS = (15, 55)  # turns a session, uniformly
DAYS = 365


def _words(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(low, high))).strip(" .,;:")


def _path(rng: random.Random) -> str:
    return f"src/{rng.choice(WORDS).strip('.,;:')}/{rng.randint(0, 60)}.py"


def _turn(rng: random.Random, n: int) -> dict[str, object]:
    edited = sorted({_path(rng) for _ in range(rng.randint(0, 4))})
    record: dict[str, object] = {
        "request": _words(rng, 6, 25)[:200],
        "files": {k: v for k, v in (("edited", edited), ("read", [_path(rng) for _ in range(rng.randint(0, 5))])) if v},
        "final": _words(rng, 35, 105)[:1000] + (f". Next step: {_words(rng, 4, 10)}" if rng.random() < 0.3 else ""),
    }
    if rng.random() < 0.6:
        exit_code = 0 if rng.random() < 0.8 else 1
        record["commands"] = [{"command": "pytest -q tests", "exit": exit_code}, {"command": "git status", "exit": 0}]
        record["tests"] = [{"command": "pytest -q tests", "exit": exit_code, "passed": exit_code == 0}]
    if rng.random() < 0.12:
        decision = {"decision": _words(rng, 5, 14), "reasoning": _words(rng, 5, 14), "status": "chosen"}
        record["decisions"] = [decision]
    if rng.random() < 0.08:
        record["questions"] = [_words(rng, 5, 12) + "?"]
    if rng.random() < 0.05:
        record["todos_said"] = [_words(rng, 4, 10)]
    if edited:
        blobs = {path: hashlib.sha1(f"{path}{n}".encode()).hexdigest() for path in edited}
        record["state"] = {"commit": hashlib.sha1(str(n).encode()).hexdigest(), "files": blobs}
    return {k: v for k, v in record.items() if v}


def generate_capture_store(folder: Path, events: int = YEAR_EVENTS, seed: int = 11) -> GeneratedStore:
    """Write about `events` events of a year of captured sessions into `folder` (created 0700)."""
    began = time.perf_counter()
    rng = random.Random(seed)
    now_ms = time.time_ns() // 1_000_000 - 3_600_000
    per_session = (TURNS[0] + TURNS[1]) / 2 + 3  # turns, automatic handoffs, a conversation, a note now and then
    sessions = max(1, round(events / per_session))  # spread over the year (more follow until `events` are written)
    ids = fast_ids(events + 8 * sessions)
    lines: dict[str, list[bytes]] = {w: [] for w, _ in WRITERS}
    hlc, written, names = 0, 0, {}
    projects, shares = [p for p, _ in PROJECTS], [w for _, w in PROJECTS]
    writers, writer_shares = [w for w, _ in WRITERS], [s for _, s in WRITERS]

    def put(writer: str, ms: int, kind: str, data: dict[str, object]) -> None:
        nonlocal hlc, written
        hlc = max(ms << COUNTER_BITS, hlc + 1)
        log = lines[writer]
        log.append(encode(Event(ids[written], writer, len(log) + 1, hlc, kind, data)))
        written += 1

    n = -1
    while written < events:
        n += 1
        project = rng.choices(projects, shares)[0]
        writer = rng.choices(writers, writer_shares)[0]
        agent = rng.choice(AGENTS)
        sid = f"{agent}-{n:05d}-{os.urandom(4).hex()}"
        base = {"project": project, "session_id": sid, "agent": agent}
        ms = now_ms - DAYS * 86_400_000 + n * (DAYS * 86_400_000 // sessions)
        summary = ""
        for t in range(rng.randint(*TURNS)):
            if written >= events:
                break
            ms += rng.randint(20_000, 300_000)
            turn = _turn(rng, n * 1000 + t)
            turn_id = hashlib.sha256(f"{sid}{t}".encode()).hexdigest()[:32]
            transcript = f"/home/u/.claude/projects/{project}/{sid}.jsonl"
            put(writer, ms, "capture.turn", {**base, "transcript": transcript, "turn_id": turn_id, "turn": turn})
            summary = str(turn["final"])
            if t == 1 or (t > 1 and rng.random() < 0.02):  # first work, then a closing call
                auto = {**base, "summary": f"[automatic handoff] {summary[:600]}", "auto": True}
                auto["provenance"] = {"client": agent, "transcript": transcript, "turns": t + 1}
                put(writer, ms + 1, "handoff", auto)
        if written < events:
            conversation = {"conversation_id": f"capture-{sid}", "source": agent, **base}
            conversation |= {"conversation_type": "single_topic", "topic": _words(rng, 3, 8), "summary": summary[:2000]}
            put(writer, ms + 2, "conversation.save", conversation)
        if written < events and rng.random() < 0.15:
            written_handoff = {**base, "summary": _words(rng, 20, 60), "next_steps": [_words(rng, 4, 10)]}
            put(writer, ms + 3, "handoff", written_handoff)
        if written < events and rng.random() < 0.3:
            put(writer, ms + 4, "note", {**base, "text": _words(rng, 10, 60)})
        names.setdefault(project, []).append(sid)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    total = 0
    for writer, found in lines.items():
        blob = b"".join(found)
        fd = os.open(log_path(folder, writer), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, blob)
        finally:
            os.close(fd)
        total += len(blob)
    return GeneratedStore(folder, written, total, time.perf_counter() - began, names)
