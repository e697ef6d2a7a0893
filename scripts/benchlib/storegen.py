"""Synthetic stores: realistic note/handoff logs written straight as event lines.

A store of N events spreads notes and handoffs over ~200 sessions in several projects,
written by three writers (machines) over 60 days, with the default project `shared`
holding the largest share. Lines go through `contextflow.core.events.encode`, so they are
exactly what the server itself would write; only the slow per-event lock is skipped.
"""

from __future__ import annotations

import base64
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path

from contextflow.core.clock import COUNTER_BITS
from contextflow.core.events import Event, encode
from contextflow.core.ids import ALPHABET
from contextflow.core.log import log_path

PROJECTS = (("shared", 40), ("webapp", 20), ("infra", 15), ("ml-pipeline", 15), ("docs", 10))
WRITERS = (("laptop-3f9a1c", 50), ("desktop-8b27e0", 35), ("buildbox-51d4aa", 15))
AGENTS = ("claude", "codex", "gemini", "cursor", "cline")
SESSIONS = 200
SPAN_DAYS = 60
HANDOFF_SHARE = 0.12
UNSESSIONED_SHARE = 0.04
TEXT = (
    "refactor the auth middleware so token refresh retries once before failing; tests for the "
    "expired-token path pass now but the websocket reconnect still drops queued messages. "
    "migrated config loading to pydantic settings, kept env var names; CI green on 3.11 and 3.12. "
    "benchmark shows p95 latency of the search endpoint at 180ms with the new index, was 420ms. "
    "blocked on review from platform team about the terraform module split; pinged in channel. "
    "found the flaky test: it depends on dict ordering in the fixture; fixed by sorting keys. "
    "docs: rewrote quickstart, added a troubleshooting section for proxy errors and certificates. "
    "the training job OOMs at batch 64 on the small GPU; gradient checkpointing brings it to 11GB."
)
WORDS = TEXT.split()
_B32 = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", ALPHABET.encode())


def fast_ids(count: int) -> list[str]:
    """`count` ids shaped like contextflow.core.ids.new_id (16 Crockford base32 chars), made in bulk."""
    raw = os.urandom(10 * count)
    return [base64.b32encode(raw[i : i + 10]).translate(_B32).decode() for i in range(0, 10 * count, 10)]


@dataclass(frozen=True)
class SessionPlan:
    session_id: str
    project: str
    writer: str
    start_ms: int
    end_ms: int
    tasks: tuple[str, ...]
    weight: float


def _words(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(low, high)))


def _plan_sessions(rng: random.Random, now_ms: int) -> list[SessionPlan]:
    span = SPAN_DAYS * 86_400_000
    names = [p for p, _ in PROJECTS]
    shares = [w for _, w in PROJECTS]
    writers = [w for w, _ in WRITERS]
    writer_shares = [s for _, s in WRITERS]
    plans = []
    for n in range(SESSIONS):
        project = rng.choices(names, shares)[0]
        start = now_ms - span + rng.randrange(span - 3_600_000)
        length = rng.randint(1, 72) * 3_600_000
        kind = rng.choice(("feat", "fix", "chore", "spike"))
        session_id = f"{kind}/{_words(rng, 2, 3).replace(' ', '-').strip('.,;:')[:40]}-{n}"
        tasks = tuple(_words(rng, 3, 8).capitalize() for _ in range(rng.randint(1, 3)))
        plans.append(
            SessionPlan(
                session_id,
                project,
                rng.choices(writers, writer_shares)[0],
                start,
                min(start + length, now_ms - 1000),
                tasks,
                1.0 / (1 + n % 50),
            )
        )
    return plans


def _data(rng: random.Random, plan: SessionPlan, kind: str) -> dict[str, object]:
    data: dict[str, object] = {"project": plan.project, "agent": rng.choice(AGENTS)}
    if rng.random() >= UNSESSIONED_SHARE:
        data["session_id"] = plan.session_id
    data["task"] = rng.choice(plan.tasks)
    if kind == "note":
        data["text"] = _words(rng, 12, 90)
        if rng.random() < 0.3:
            data["tags"] = rng.sample(("auth", "ci", "perf", "infra", "docs", "bug", "review"), rng.randint(1, 3))
    else:
        data["summary"] = _words(rng, 25, 120)
        data["next_steps"] = [_words(rng, 4, 14) for _ in range(rng.randint(2, 5))]
        if rng.random() < 0.6:
            data["open_questions"] = [_words(rng, 5, 14) + "?" for _ in range(rng.randint(1, 3))]
        data["files"] = [f"src/{rng.choice(WORDS).strip('.,;:')}/{n}.py" for n in range(rng.randint(1, 6))]
    return data


@dataclass(frozen=True)
class GeneratedStore:
    folder: Path
    events: int
    bytes: int
    seconds: float
    sessions: dict[str, list[str]]  # project -> session ids, most events first


def generate_store(folder: Path, events: int, seed: int = 7) -> GeneratedStore:
    """Write `events` note/handoff events into `folder` (created 0700), one log per writer."""
    began = time.perf_counter()
    rng = random.Random(seed)
    now_ms = time.time_ns() // 1_000_000 - 3_600_000
    plans = _plan_sessions(rng, now_ms)
    chosen = rng.choices(plans, [p.weight for p in plans], k=events)
    stamped = sorted(((rng.randint(p.start_ms, p.end_ms), i) for i, p in enumerate(chosen)))
    ids = fast_ids(events)
    per_writer: dict[str, list[bytes]] = {w: [] for w, _ in WRITERS}
    counts: dict[str, int] = {}
    last_hlc = 0
    for n, (ms, index) in enumerate(stamped):
        plan = chosen[index]
        writer = plan.writer if rng.random() > 0.1 else rng.choice([w for w, _ in WRITERS])
        hlc = max(ms << COUNTER_BITS, last_hlc + 1)
        last_hlc = hlc
        kind = "handoff" if rng.random() < HANDOFF_SHARE else "note"
        lines = per_writer[writer]
        event = Event(ids[n], writer, len(lines) + 1, hlc, kind, _data(rng, plan, kind))
        lines.append(encode(event))
        counts[plan.session_id] = counts.get(plan.session_id, 0) + 1
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    total = 0
    for writer, lines in per_writer.items():
        if not lines:
            continue
        blob = b"".join(lines)
        path = log_path(folder, writer)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, blob)
        finally:
            os.close(fd)
        total += len(blob)
    sessions: dict[str, list[str]] = {}
    for plan in sorted(plans, key=lambda p: -counts.get(p.session_id, 0)):
        if counts.get(plan.session_id):
            sessions.setdefault(plan.project, []).append(plan.session_id)
    return GeneratedStore(folder, events, total, time.perf_counter() - began, sessions)
