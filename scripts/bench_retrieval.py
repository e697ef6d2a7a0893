#!/usr/bin/env python3
"""Benchmark retrieval: recall per question type on the two quality fixtures, and get_context latency.

Prints figures only, never fails on a missed target.

    scripts/bench_retrieval.py                        recall@5 and @10 per question type on both fixtures
    scripts/bench_retrieval.py --levers               the same with each ranking lever off in turn, and with all off
    scripts/bench_retrieval.py --ranking=-speaker     one setting of CONTEXTFLOW_RANKING (read by the ranking)
    scripts/bench_retrieval.py --misses               also list the questions that missed at 5
    scripts/bench_retrieval.py --sizes 10000,100000   then get_context latency on stores of those sizes
    scripts/bench_retrieval.py --quick                then a 2k store (seconds)
    scripts/bench_retrieval.py --locomo locomo10.json recall@5 and @10 per category on LoCoMo instead (not shipped)

The fixtures (tests/fixtures/retrieval): `dialogs`, 287 turns of four two-speaker dialogs stored as
session notes and timeline thoughts from January to June 2026, with 95 questions (paraphrase, temporal,
multihop, speaker); `records`, 225 conversation records, notes and handoffs with 66 questions (62 share a
word with their answer, 4 are paraphrases). Recall@k of a question is the share of its evidence among the
first k results. Latency stores are filled through Store.append_many (the real write and fold path) with
synthetic notes, handoffs and conversation records whose words follow a Zipf distribution over the
records fixture's vocabulary plus a long tail, with the fixture's own records mixed in.

`--locomo PATH` reads LoCoMo's locomo10.json (github.com/snap-research/LoCoMo, data/locomo10.json, CC BY-NC:
never copied here) and stores it as the dialogs fixture stores a dialog, all ten conversations in one store
before the first question: one project per conversation, one session per LoCoMo session, each turn a session
note by its speaker at the session's date and time (turns 3 minutes apart; a shared image adds its caption).
Each question of categories 1-4 (5 is unanswerable) is asked in its conversation's project with the
in-process `retrieval.get_context`, the call the MCP `get_context` tool makes, "now" being a day after the
conversation's last session.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
if (VENV / "bin" / "python").exists() and Path(sys.prefix).resolve() != VENV.resolve():
    os.execv(str(VENV / "bin" / "python"), [str(VENV / "bin" / "python"), __file__, *sys.argv[1:]])
sys.path.insert(0, str(ROOT))

import argparse  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from datetime import datetime, timedelta  # noqa: E402
from itertools import accumulate  # noqa: E402
from typing import Any  # noqa: E402

from contextflow.app import App  # noqa: E402
from contextflow.conversations import core as conversations  # noqa: E402
from contextflow.core.clock import HybridClock  # noqa: E402
from contextflow.search import retrieval  # noqa: E402
from contextflow.sessions import core as sessions  # noqa: E402
from tests.fixtures.retrieval import dialogs  # noqa: E402
from tests.fixtures.retrieval.evaluate import fixture, load, recall_at  # noqa: E402

P95_TARGET_MS = 30.0
BATCH = 1_000
PROJECTS = ("shop", "api", "platform", "web", "mobile", "analytics", "billing", "auth", "growth", "chat")
AGENTS = ("claude_code", "codex", "gemini_cli", "cursor", "cline")


os.environ["CONTEXTFLOW_SECRETS"] = "off"  # synthetic text holds no secrets; scanning it only slows the build


def open_app(folder: Path, clock: Any = None) -> App:
    env = {
        **os.environ,
        "CONTEXTFLOW_STORE": str(folder / "store"),
        "CONTEXTFLOW_STATE": str(folder / "state"),
        "CONTEXTFLOW_WRITER": "bench",
    }
    for name in ("MCP_SHARED_CONTEXT_FILE", "MCP_SHARED_CONTEXT_FOLDER", "MCP_SHARED_CONTEXT_PROJECT"):
        env.pop(name, None)
    return App.open(env, clock=HybridClock(clock) if clock is not None else None)


# -- recall per question type ---------------------------------------------------------------------

Table = dict[str, dict[str, dict[int, float]]]  # fixture -> question type -> k -> recall
KS = (5, 10)


def quality(ranking: str | None, misses: bool = False) -> tuple[Table, dict[str, int]]:
    """Recall@5 and @10 per question type on both fixtures, each stored afresh under `ranking`
    (CONTEXTFLOW_RANKING; None: unset). Returns the table and the number of questions per type."""
    if ranking is None:
        os.environ.pop("CONTEXTFLOW_RANKING", None)
    else:
        os.environ["CONTEXTFLOW_RANKING"] = ranking
    table: Table = {"dialogs": {}, "records": {}}
    counts: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="cf-bench-quality-") as tmp:
        clock = dialogs.FixtureClock()
        app = open_app(Path(tmp) / "dialogs", clock)
        ids = dialogs.load(app, clock)
        asked = dialogs.questions()
        for kind in (*dialogs.TYPES, "all"):
            chosen = [q for q in asked if kind in (q.type, "all")]
            counts[f"dialogs {kind}"] = len(chosen)
            table["dialogs"][kind] = {}
            for k in KS:
                value, missed = dialogs.recall(app, ids, chosen, k)
                table["dialogs"][kind][k] = value
                if misses and k == KS[0] and kind != "all":
                    for miss in missed:
                        wanted, got = " ".join(miss.question.evidence), " ".join(miss.found)
                        print(f"  miss@{k} dialogs {kind}: {miss.question.text!r} wants {wanted}, got {got}")
        app.close()
        records, queries = fixture()
        app = open_app(Path(tmp) / "records")
        ids = load(app, records)
        for kind, picked in (
            ("shares words", [q for q in queries if q["shares_words"]]),
            ("paraphrase", [q for q in queries if not q["shares_words"]]),
            ("all", queries),
        ):
            counts[f"records {kind}"] = len(picked)
            table["records"][kind] = {}
            for k in KS:
                found = recall_at(app, ids, picked, k)
                table["records"][kind][k] = found.value
                if misses and k == KS[0] and kind != "all":
                    for lost in found.misses:
                        got = " ".join(lost.found)
                        print(f"  miss@{k} records {kind}: {lost.query!r} wants {lost.target}, got {got}")
        app.close()
    return table, counts


def print_quality(table: Table, counts: dict[str, int], title: str) -> None:
    print(f"\n{title}")
    print(f"  {'fixture':8} {'question type':14} {'n':>3} {'recall@5':>9} {'recall@10':>10}")
    for name, types in table.items():
        for kind, values in types.items():
            print(f"  {name:8} {kind:14} {counts[f'{name} {kind}']:>3} {values[5]:>9.3f} {values[10]:>10.3f}")


def print_levers(results: dict[str, Table], counts: dict[str, int], levers: tuple[str, ...]) -> None:
    """Recall with every lever on and all off, then each lever's gain: on minus off (the others on), and
    alone over all off."""
    on, off = results["all on"], results["all off"]
    names = ["all on", "all off", *levers]
    print("\nrecall@5 / @10 per question type with every lever on and all off (plain BM25 with recency); then each")
    print("lever's gain with the others on (on minus off), and alone (over all off)")
    print(f"  {'fixture':8} {'question type':14} {'n':>3} " + " ".join(f"{name:>15}" for name in names))
    for fixture_name, types in on.items():
        for kind in types:
            for row in (0, 1):
                cells = []
                for name in names:
                    if name in ("all on", "all off"):
                        here = results[name][fixture_name][kind]
                        cells.append(f"{here[5]:.3f} / {here[10]:.3f}" if row == 0 else "")
                        continue
                    if row == 0:
                        high, low = on[fixture_name][kind], results[f"-{name}"][fixture_name][kind]
                    else:
                        high, low = results[f"+{name}"][fixture_name][kind], off[fixture_name][kind]
                    cells.append(f"{high[5] - low[5]:+.3f} / {high[10] - low[10]:+.3f}")
                if row == 0:
                    head = f"  {fixture_name:8} {kind:14} {counts[f'{fixture_name} {kind}']:>3} "
                else:
                    head = f"  {'':8} {'  alone':14} {'':>3} "
                print(head + " ".join(f"{cell:>15}" for cell in cells))


class Words:
    """Zipf-distributed words over a vocabulary of the fixture's words spread at random ranks
    among a synthetic long tail: some fixture words are common, most are rare, as in real text."""

    def __init__(self, records: list[dict[str, Any]], rng: random.Random, tail: int = 40_000) -> None:
        real = sorted({word for item in records for word in json.dumps(item["record"]).split() if word.isalpha()})
        self.words = real + [f"x{rng.getrandbits(40):010x}" for _ in range(tail)]
        rng.shuffle(self.words)
        self.cumulative = list(accumulate(1.0 / (rank + 1) for rank in range(len(self.words))))
        self.rng = rng

    def text(self, count: int) -> str:
        return " ".join(self.rng.choices(self.words, cum_weights=self.cumulative, k=count))

    def items(self, count: int, length: int) -> list[str]:
        return [self.text(length) for _ in range(count)]


def synthetic(words: Words, rng: random.Random) -> tuple[str, dict[str, Any]]:
    project, agent = rng.choice(PROJECTS), rng.choice(AGENTS)
    shape = rng.random()
    if shape < 0.6:
        return "note", {
            "project": project,
            "agent": agent,
            "text": words.text(rng.randint(15, 60)),
            "task": words.text(4),
        }
    if shape < 0.75:
        return "handoff", {
            "project": project,
            "agent": agent,
            "summary": words.text(rng.randint(30, 80)),
            "next_steps": words.items(3, 8),
            "files": words.items(2, 2),
        }
    record = conversations.validate_record(
        {
            "topic": words.text(4),
            "summary": words.text(rng.randint(80, 200)),
            "categories": words.items(3, 1),
            "decisions": [
                {
                    "decision": words.text(10),
                    "reasoning": words.text(20),
                    "status": rng.choice(("chosen", "chosen", "rejected")),
                }
                for _ in range(rng.randint(1, 4))
            ],
            "open_questions": words.items(2, 10),
            "related_entities": words.items(4, 1),
        }
    )
    conversation_id = f"c{rng.getrandbits(64):016x}"
    return "conversation.save", {"conversation_id": conversation_id, "source": agent, "project": project, **record}


def fill(app: App, count: int, records: list[dict[str, Any]]) -> tuple[dict[str, str], float]:
    """`count` records in all: the fixture's plus synthetic ones. Returns fixture ids and seconds taken."""
    rng = random.Random(count)
    words = Words(records, rng)
    started = time.perf_counter()
    ids = load(app, records)
    remaining = count - len(records)
    while remaining > 0:
        size = min(BATCH, remaining)
        app.store.append_many([synthetic(words, rng) for _ in range(size)])
        remaining -= size
    return ids, time.perf_counter() - started


def latencies(app: App, queries: list[str], reps: int) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU (thread) milliseconds per call; CPU time leaves out waiting for a busy machine."""
    from contextflow.search import derived

    derived.search_for(app.store).index()  # built here: a search far behind answers from what is built so far
    for query in queries[:10]:
        retrieval.get_context(app, query=query)  # warm up
    wall, cpu = [], []
    for n in range(reps):
        started, started_cpu = time.perf_counter(), time.thread_time()
        retrieval.get_context(app, query=queries[n % len(queries)])
        cpu.append((time.thread_time() - started_cpu) * 1000)
        wall.append((time.perf_counter() - started) * 1000)
    return wall, cpu


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def latency(sizes: list[int], reps: int) -> None:
    records, queries = fixture()
    sharing = [q for q in queries if q["shares_words"]]
    texts = [q["query"] for q in queries]
    load_avg = os.getloadavg()[0]
    print(
        f"\nget_context latency, in-process, warm, default limit and budget ({reps} calls per size; "
        f"machine load {load_avg:.1f} on {os.cpu_count()} cores)"
    )
    print(
        f"  {'records':>8} {'build s':>8} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7} {'cpu p50':>8} "
        f"{'cpu p95':>8} {'recall@5':>9} {'RSS MB':>7}"
    )
    with tempfile.TemporaryDirectory(prefix="cf-bench-retrieval-") as tmp:
        for size in sizes:
            app = open_app(Path(tmp) / f"store-{size}")
            ids, seconds = fill(app, size, records)
            wall, cpu = latencies(app, texts, reps)
            found = recall_at(app, ids, sharing, 5)
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(
                f"  {size:>8} {seconds:>8.1f} {statistics.median(wall):>7.2f} {percentile(wall, 0.95):>7.2f} "
                f"{max(wall):>7.2f} {statistics.median(cpu):>8.2f} {percentile(cpu, 0.95):>8.2f} "
                f"{found.value:>9.3f} {rss:>7.0f}"
            )
            app.close()
    print(f"\ntarget: get_context p95 < {P95_TARGET_MS:.0f} ms at 100k records (figures only; nothing here fails)")


# -- LoCoMo (a path given; the data set is never shipped) -----------------------------------------

LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def locomo_time(text: str) -> datetime:
    """LoCoMo's session stamp, e.g. "1:56 pm on 8 May, 2023", as UTC."""
    moment = datetime.strptime(" ".join(text.split()), "%I:%M %p on %d %B, %Y")
    return moment.replace(tzinfo=dialogs.NOW.tzinfo)


def locomo_store(
    app: App, clock: dialogs.FixtureClock, sample: dict[str, Any], project: str
) -> tuple[dict[str, str], int]:
    """One conversation: every turn a session note at its time. Returns stored id -> dia_id and "now"
    (a day after its last session)."""
    talk = sample["conversation"]
    numbers = sorted(int(key.split("_")[1]) for key in talk if key.startswith("session_") and key.count("_") == 1)
    dia_of: dict[str, str] = {}
    last = dialogs.NOW
    for number in numbers:
        at = locomo_time(talk[f"session_{number}_date_time"])
        for turn in talk[f"session_{number}"]:
            clock.now_ms = dialogs.ms(at)
            text = turn["text"] + (f" [shares a photo: {turn['blip_caption']}]" if turn.get("blip_caption") else "")
            event = sessions.append_note(
                app, agent=turn["speaker"], text=text, project=project, session_id=f"session-{number}"
            )
            dia_of[event.id] = turn["dia_id"]
            last, at = at, at + dialogs.TURN_GAP
    clock.now_ms = dialogs.NOW_MS
    return dia_of, dialogs.ms(last + timedelta(days=1))


def locomo_evidence(item: dict[str, Any], known: set[str]) -> list[str]:
    """The question's evidence dia_ids that name a stored turn ("D8:6; D9:17" split; unknown ones left out)."""
    found = [part for entry in item.get("evidence", []) for part in entry.replace(";", " ").replace(",", " ").split()]
    return [entry for entry in found if entry in known]


def locomo(path: Path) -> None:
    samples = json.loads(path.read_text())
    sums: dict[str, dict[int, float]] = {}
    counts: dict[str, int] = {}
    skipped = turns = partial = short = 0
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cf-bench-locomo-") as tmp:
        clock = dialogs.FixtureClock()
        app = open_app(Path(tmp), clock)
        stored = []  # every conversation is stored before the first question: one store holds them all
        for number, sample in enumerate(samples):
            project = f"locomo-{sample.get('sample_id', number)}"
            stored.append((sample, project, *locomo_store(app, clock, sample, project)))
        for sample, project, dia_of, now in stored:
            turns += len(dia_of)
            known = set(dia_of.values())
            for item in sample["qa"]:
                name = LOCOMO_CATEGORIES.get(item.get("category", 5))
                evidence = locomo_evidence(item, known)
                if name is None:
                    continue
                if not evidence:
                    skipped += 1
                    continue
                for kind in (name, "all"):
                    counts[kind] = counts.get(kind, 0) + 1
                for k in KS:
                    result = retrieval.get_context(app, query=item["question"], project=project, limit=k, now_ms=now)
                    found = [dia_of.get(shown.hit.doc.ref, "") for shown in result.shown]
                    partial += bool(result.partial)
                    short += len(result.shown) < k
                    share = sum(entry in found for entry in evidence) / len(evidence)
                    for kind in (name, "all"):
                        sums.setdefault(kind, dict.fromkeys(KS, 0.0))[k] += share
        app.close()
    print(f"\nLoCoMo recall ({path.name}: {len(samples)} conversations, {turns} turns stored as session notes;")
    print("  questions of categories 1-4 asked in process with retrieval.get_context, the MCP get_context tool's call;")
    print(f"  {skipped} left out: no evidence naming a stored turn; {time.perf_counter() - started:.0f} s;")
    calls = len(KS) * counts.get("all", 0)
    print(f"  of {calls} calls, {partial} partial, {short} short of k)")
    print(f"  {'category':14} {'n':>5} {'recall@5':>9} {'recall@10':>10}")
    for kind in (*LOCOMO_CATEGORIES.values(), "all"):
        if counts.get(kind):
            values = sums[kind]
            n = counts[kind]
            print(f"  {kind:14} {n:>5} {values[5] / n:>9.3f} {values[10] / n:>10.3f}")


def lever_names() -> tuple[str, ...]:
    try:
        from contextflow.search import ranking
    except ImportError:
        return ()
    return tuple(ranking.LEVERS)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--ranking", help="a CONTEXTFLOW_RANKING setting, e.g. -neighbours,-speaker (default: unset)")
    parser.add_argument("--levers", action="store_true", help="each lever off in turn, and all off")
    parser.add_argument("--misses", action="store_true", help="list the questions that missed at 5")
    parser.add_argument("--quick", action="store_true", help="then get_context latency on a 2k store")
    parser.add_argument("--sizes", help="then get_context latency on stores of these sizes (comma-separated)")
    parser.add_argument("--reps", type=int, default=300, help="timed get_context calls per size (default 300)")
    parser.add_argument("--locomo", type=Path, help="LoCoMo's locomo10.json: recall per category on it instead")
    args = parser.parse_args()
    if args.locomo is not None:
        if not args.locomo.is_file():
            parser.error(f"--locomo {args.locomo}: no such file; pass LoCoMo's data/locomo10.json")
        locomo(args.locomo)
        return 0
    if args.levers:
        levers = lever_names()
        results: dict[str, Table] = {}
        counts: dict[str, int] = {}
        settings = [("all on", None), ("all off", "none")]
        settings += [(f"-{lever}", f"-{lever}") for lever in levers] + [
            (f"+{lever}", f"none,+{lever}") for lever in levers
        ]
        for name, setting in settings:
            results[name], counts = quality(setting)
        print_levers(results, counts, levers)
    else:
        table, counts = quality(args.ranking, args.misses)
        setting = args.ranking if args.ranking is not None else os.environ.get("CONTEXTFLOW_RANKING", "")
        print_quality(table, counts, f"recall per question type (CONTEXTFLOW_RANKING={setting!r})")
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else [2000] if args.quick else []
    if sizes:
        latency(sizes, args.reps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
