#!/usr/bin/env python3
"""Secret scanning on hostile text: the slowest rule, as a ratio to plain text of the same size.

Every write is scanned for secrets (`contextflow.core.secrets.find`), so a rule that backtracks
quadratically lets one large write stall a server. For each rule this picks the text that costs
it the most (`tests/hostile/scan_inputs.py`: its trigger words repeated, or followed by one long
run), scans it through `secrets.find` at --size characters (default 1 MB) and prints the CPU
time beside that of plain prose of the same size. Each text is scanned at growing sizes first;
when the growth measured so far says the next size would take longer than --limit seconds, it
stops there: the figure printed is then the measured one at that size, a lower bound (">="), and
an estimate at full size from the measured growth ("~").

    .venv/bin/python scripts/bench_secrets.py [--size 1000000] [--limit 30] [--top 8] [--evidence-only]
                                              [--sample N]

It first prints both sides of redaction by evidence: how many of the generated credential forms
(`tests/hostile/secret_corpus.py`) stay in clear, and the findings (false positives) in ordinary
code, shell scripts and prose found on this machine. Then every channel: synthetic credentials of
every kind (`tests/hostile/secret_kinds.py`: random values in each vendor's format, bare and under
token/key/secret/password/auth in text, JSON, YAML and env forms) written through the prompt, a
command, a tool's output, the reply and a handoff of captured turns (a Claude Code transcript and
the Stop hook), a context record, a graph node and an import (`tests/hostile/secret_channels.py`);
it prints how many values stay in clear in the store and in the state folder (must be 0), and what
redacting one captured turn costs. `--sample N` writes every Nth text only (CI).

`scripts/bench` runs it as its `secret scan` section. State (the cached library patterns) goes
to a temporary folder unless CONTEXTFLOW_STATE is set.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(Path(__file__).resolve().parent), str(ROOT)]

from benchlib.report import heading, table  # noqa: E402

STEP = 4  # each stage is four times the last


@dataclass(frozen=True)
class Row:
    kind: str
    text: str  # how the hostile text is built
    size: int  # the largest size scanned
    seconds: float  # at that size
    growth: float  # exponent measured over the last two sizes (1 linear, 2 quadratic)
    complete: bool  # scanned at full size


@dataclass(frozen=True)
class Report:
    size: int
    plain: float  # seconds for plain text of `size` characters
    rows: list[Row]

    def ratio(self, row: Row) -> float:
        return row.seconds / self.plain

    def estimate(self, row: Row) -> float:
        """The ratio at full size: measured, or extrapolated from the measured growth."""
        return self.ratio(row) * (self.size / row.size) ** row.growth

    def slowest(self) -> Row:
        return max(self.rows, key=self.estimate)


def _cost(text: str) -> float:
    from contextflow.core import secrets

    began = time.process_time()
    secrets.find(text)
    return time.process_time() - began


def _stages(size: int) -> list[int]:
    sizes = [256]
    while sizes[-1] * STEP < size:
        sizes.append(sizes[-1] * STEP)
    return [*sizes, size]


def measure_rule(kind: str, label: str, make: Callable[[int], str], size: int, limit: float) -> Row:
    seen: list[tuple[int, float]] = []
    growth = 3.0  # until two sizes are measured, assume the worst seen (cubic)
    for stage in _stages(size):
        if seen:
            last_size, last = seen[-1]
            if len(seen) > 1:
                before_size, before = seen[-2]
                growth = max(1.0, math.log(max(last, 1e-6) / max(before, 1e-6)) / math.log(last_size / before_size))
            if last * (stage / last_size) ** growth > limit:
                return Row(kind, label, last_size, last, growth, False)
        seen.append((stage, _cost(make(stage))))
    return Row(kind, label, size, seen[-1][1], growth, True)


def measure(size: int, limit: float) -> Report:
    from contextflow.core.secret_rules import rules
    from tests.hostile import scan_inputs

    plain_text = scan_inputs.plain(size)
    _cost(plain_text)  # patterns compiled first
    plain = min(_cost(plain_text) for _ in range(3))
    rows = []
    for rule in rules():
        label, make = scan_inputs.worst(rule, keep=1)[0]
        rows.append(measure_rule(rule.kind, label, make, size, limit))
    return Report(size, plain, rows)


def describe(report: Report, row: Row) -> str:
    if row.complete:
        return f"{report.ratio(row):.1f}x"
    return f">= {report.ratio(row):.1f}x (~{report.estimate(row):.2g}x)"


def print_report(report: Report, top: int = 8) -> None:
    heading("secret scan")
    print(f"  secrets.find on {report.size:,} characters, CPU time; plain prose {report.plain * 1000:.1f} ms")
    print("  each rule on the text that costs it most (its trigger words repeated, or one long run);")
    print("  '>=': stopped at a smaller size, measured there; '~': extrapolated to full size by its growth")
    rows = sorted(report.rows, key=report.estimate, reverse=True)[:top]
    table(
        ("rule", "hostile text", "chars scanned", "ms", "growth", "vs plain"),
        [
            (
                row.kind,
                row.text[:44],
                f"{row.size:,}",
                f"{row.seconds * 1000:.1f}",
                f"n^{row.growth:.1f}",
                describe(report, row),
            )
            for row in rows
        ],
    )
    slowest = report.slowest()
    print(
        f"  slowest rule on {report.size:,} hostile characters: {slowest.kind}, {describe(report, slowest)} "
        f"plain text\n",
        flush=True,
    )


def evidence(show: int = 5) -> None:
    """Both sides of redaction by evidence: the generated credential corpus (every context rule x every
    value shape x what follows; must be 0 in clear) and ordinary code, shell and prose from this machine
    (every finding there is a false positive)."""
    from contextflow.core import secrets
    from tests.hostile.secret_corpus import benign_files, credential_texts

    heading("redaction by evidence")
    corpus = list(credential_texts())
    clear = [(rule, shape, after) for rule, shape, after, core, text in corpus if core in secrets.redact_text(text)[0]]
    print(f"  credential corpus: {len(corpus):,} texts, {len(clear)} in clear")
    for rule, shape, after in clear[:show]:
        print(f"    in clear: {rule} / {shape} / followed by {after}")
    totals: dict[str, list[int]] = {}
    examples: list[str] = []
    for what, path in benign_files():
        text = path.read_bytes().decode("utf-8", "replace")
        counts = totals.setdefault(what, [0, 0, 0])  # files, bytes, findings
        counts[0] += 1
        counts[1] += len(text)
        for finding in secrets.find(text):
            counts[2] += 1
            line = text.count("\n", 0, finding.start) + 1
            examples.append(f"{what}: {finding.kind} at {path}:{line}")
    rows = [
        [what, f"{files:,}", f"{size / 1e6:.1f} MB", f"{found:,}", f"{found / (size / 1e6):.2f}"]
        for what, (files, size, found) in totals.items()
    ]
    print("  ordinary text from this machine (stdlib code, shell scripts, package docs): false positives")
    table(["text", "files", "size", "findings", "per MB"], rows)
    for example in examples[:show]:
        print(f"    {example}")


def channels(sample: int = 1) -> list[tuple[str, int, int, int, int]]:
    """(channel, texts, values, values in clear in the store, in the state folder) for every channel, each
    given its own values (a leak is the channel's); a value is in clear when any part of its random
    body is on disk (`secret_kinds.leaked`)."""
    from contextflow.adapters.cli import main as cli
    from contextflow.app import App
    from tests.hostile import secret_channels
    from tests.hostile.secret_kinds import forms, leaked, values

    written: dict[str, list[tuple[Any, str]]] = {}  # channel -> ((kind, value), text)
    with tempfile.TemporaryDirectory(prefix="contextflow-bench-channels-") as folder:
        base = Path(folder)
        saved = {
            name: os.environ.get(name) for name in ("CONTEXTFLOW_STORE", "CONTEXTFLOW_STATE", "CONTEXTFLOW_WRITER")
        }
        os.environ.update(
            CONTEXTFLOW_STORE=str(base / "store"), CONTEXTFLOW_STATE=str(base / "state"), CONTEXTFLOW_WRITER="bench"
        )
        try:
            (base / "work").mkdir()
            for seed, channel in enumerate(secret_channels.CHANNELS):
                pairs = [(kind, value, text) for kind, value in values(seed) for _, text in forms(kind, value)]
                pairs = pairs[seed % sample :: sample]
                written[channel] = [((kind, value), text) for kind, value, text in pairs]
                texts = [text for *_, text in pairs]
                if channel in secret_channels.CAPTURE_CHANNELS:
                    secret_channels.capture(cli, base / "work", channel, texts, f"bench-{seed}")
                else:
                    app = App.open()
                    try:
                        secret_channels.store(app, channel, texts, base / "work")
                    finally:
                        app.close()
            in_store = "\n".join(text for _, text in secret_channels.stored(base / "store", base / "missing"))
            in_state = "\n".join(text for _, text in secret_channels.stored(base / "missing", base / "state"))
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
    rows = []
    for channel, items in written.items():
        owners = {owner for owner, _ in items}
        store = sum(leaked(kind, value, in_store) for kind, value in owners)
        state = sum(leaked(kind, value, in_state) for kind, value in owners)
        rows.append((channel, len(items), len(owners), store, state))
    return rows


def turn_cost(turns: int = 200) -> float:
    """Milliseconds to build and redact one captured turn (what a Stop hook does per turn): a prompt,
    three commands with output (one failing), a reply of a few paragraphs, a handoff."""
    from contextflow.capture.transcript import redacted
    from contextflow.capture.turns import Turn

    reply = "I looked at the failing deploy and decided to pin the client. " * 12
    output = "collected 12 items\n" + "tests/test_x.py::test_%d PASSED\n" * 40
    began = time.process_time()
    for n in range(turns):
        turn = Turn(f"please fix the deploy of service {n}; it fails on staging since the last release")
        turn.command("git status --short", 0, " M app.py\n")
        turn.command(f"pytest -q tests/test_{n}.py", 0, output)
        turn.command("make deploy", 2, "deploying\nerror: connection refused by staging (timeout after 30s)")
        turn.say("m1", reply)
        turn.set_final(reply)
        turn.handoff_written("Pinned the client; deploy passes on staging.")
        redacted(turn.data("/repo"))
    return (time.process_time() - began) * 1000 / turns


def print_channels(sample: int) -> None:
    from tests.hostile.secret_kinds import FORMS, KINDS, WORDS

    heading("secrets on every channel")
    print(
        f"  {len(KINDS)} kinds of credential, bare and under {', '.join(WORDS)} in {', '.join(FORMS)} forms"
        + (f"; every {sample}th text" if sample > 1 else "")
    )
    rows = channels(sample)
    table(["channel", "texts", "values", "in clear, store", "in clear, state folder"], rows)
    print(f"  values in clear in the store: {sum(r[3] for r in rows)}; in the state folder: {sum(r[4] for r in rows)}")
    print(f"  one captured turn built and redacted: {turn_cost():.2f} ms CPU", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--size", type=int, default=1_000_000, help="characters per text (default 1,000,000)")
    parser.add_argument("--limit", type=float, default=30.0, help="seconds one scan may take (default 30)")
    parser.add_argument("--top", type=int, default=8, help="rules to list (default 8)")
    parser.add_argument("--evidence-only", action="store_true", help="only the corpora (no scan cost)")
    parser.add_argument("--sample", type=int, default=1, help="write every Nth text through the channels (default 1)")
    args = parser.parse_args()
    if args.size < 1024:
        parser.error("--size needs 1024 characters or more")
    with tempfile.TemporaryDirectory(prefix="contextflow-bench-secrets-") as state:
        os.environ.setdefault("CONTEXTFLOW_STATE", state)
        evidence()
        print_channels(max(1, args.sample))
        if not args.evidence_only:
            print_report(measure(args.size, args.limit), args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
