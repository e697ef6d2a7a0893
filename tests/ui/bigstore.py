"""A big store for the browser tests and the screenshots: 100,000 events, of which 2,000 knowledge-graph
nodes (with edges among them) and, in each of the 200 sessions, a long automatic handoff as capture
writes them. Notes and handoffs come from the benchmarks' generator (`scripts/benchlib/storegen.py`),
written straight as event lines; the rest is appended the same way by one more writer."""

from __future__ import annotations

import os
import random
import sys
from dataclasses import dataclass
from pathlib import Path

from contextflow.core.clock import COUNTER_BITS
from contextflow.core.events import Event, encode
from contextflow.core.log import log_path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from benchlib.storegen import WORDS, fast_ids, generate_store

EVENTS = 100_000
NODES = 2_000
WRITER = "capturebox-77aa01"
NODE_TYPES = ("fact", "decision", "pattern", "observation", "task", "summary", "open-question")
PATHS = (
    "contextflow/adapters/ui/static/graph.js",
    "src/payments/refunds/asynchronous_settlement_worker.py",
    "tests/integration/test_checkout_end_to_end_with_partial_refunds.py",
    "infrastructure/terraform/modules/observability-dashboards/main.tf",
)


@dataclass(frozen=True)
class BigStore:
    folder: Path
    projects: dict[str, list[str]]  # project -> session ids, busiest first
    nodes: list[str]
    busiest: str  # the project with the most sessions


def _auto_summary(rng: random.Random) -> str:
    """As long as capture's automatic handoffs get: a summary, tests, commands, errors, long file paths."""
    words = " ".join(rng.choices(WORDS, k=160))
    return (
        f"[automatic handoff] {words}\nTests: pytest tests/integration -q -x --maxfail=1 (passed); "
        f"{' '.join(rng.choices(PATHS, k=3))}\nCommands: uv run scripts/regenerate_fixtures_for_every_client.py "
        f"--all-clients --write\nErrors: AssertionError: expected 1234567890 cents, got 1234567889 in {PATHS[2]}"
    )


def build(folder: Path, seed: int = 11) -> BigStore:
    rng = random.Random(seed)
    generated = generate_store(folder, EVENTS - NODES - 200, seed=seed)
    sessions = [(project, sid) for project, ids in generated.sessions.items() for sid in ids]
    ids = fast_ids(NODES + len(sessions))
    base = (time_ms() - 1800_000) << COUNTER_BITS
    lines: list[bytes] = []
    nodes: list[str] = []
    for n in range(NODES):
        data: dict[str, object] = {
            "type": NODE_TYPES[n % len(NODE_TYPES)],
            "content": f"{' '.join(rng.choices(WORDS, k=rng.randint(6, 30)))} (#{n})",
            "metadata": {},
            "tags": [f"project:{rng.choice(list(generated.sessions))}"] + (["tier:pinned"] if n % 97 == 0 else []),
            "agent": rng.choice(("claude", "codex", "gemini")),
        }
        if nodes and rng.random() < 0.8:
            data["links"] = [
                {"to": target, "type": rng.choice(("DEPENDS_ON", "RELATES_TO", "DERIVED_FROM"))}
                for target in dict.fromkeys(rng.choices(nodes[-200:], k=rng.randint(1, 2)))
            ]
        lines.append(encode(Event(ids[n], WRITER, len(lines) + 1, base + len(lines), "graph.node", data)))
        nodes.append(ids[n])
    for i, (project, sid) in enumerate(sessions):
        data = {
            "project": project,
            "agent": rng.choice(("claude", "codex", "gemini")),
            "session_id": sid,
            "summary": _auto_summary(rng),
            "files": list(PATHS),
            "next_steps": ["rerun the partial refunds suite on the desktop once the settlement worker restarts"],
            "auto": True,
            "provenance": {
                "client": "claude-code",
                "transcript": f"/home/dev/.claude/projects/x/{i}.jsonl",
                "turns": 40,
            },
        }
        lines.append(encode(Event(ids[NODES + i], WRITER, len(lines) + 1, base + len(lines), "handoff", data)))
    fd = os.open(log_path(folder, WRITER), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, b"".join(lines))
    finally:
        os.close(fd)
    busiest = max(generated.sessions, key=lambda p: len(generated.sessions[p]))
    return BigStore(folder, generated.sessions, nodes, busiest)


def time_ms() -> int:
    import time

    return time.time_ns() // 1_000_000
