#!/usr/bin/env python3
"""Choose BM25's k1 by leaving one conversation out, on the two retrieval fixtures; look at b too.

    .venv/bin/python scripts/tune_bm25.py > docs/bm25-leave-one-out.txt

The on-disk index is tantivy's BM25 with k1 1.2 and b 0.75 fixed; what the ranking can set is how many
times a field's words are repeated (`ranking.weight_scale`), and BM25 over every count times s behaves
exactly as k1 / s. So the candidates are s = 1..4 (k1 1.2, 0.6, 0.4, 0.3), every other lever on.

Folds: the four dialogs of the `dialogs` fixture (a question belongs to the dialog of its evidence) and
the `records` fixture's 66 questions in four round-robin folds. For each fold, the scale with the best
mean recall@5 on the other seven folds (then recall@10, then the smaller scale) is chosen and scored on
the held-out fold; the leave-one-out figure is the mean over all questions of those held-out scores.
The shipped scale (`ranking.TUNED_SCALE`) is the one the procedure chooses on all folds, and it is
kept only if its leave-one-out figure does not fall below plain k1 1.2.

(The k1 x b grid in docs/bm25-leave-one-out.txt ran on the in-memory index search no longer has.)
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
import tempfile  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from typing import Any  # noqa: E402

from contextflow.app import App  # noqa: E402
from contextflow.core.clock import HybridClock  # noqa: E402
from tests.fixtures.retrieval import dialogs  # noqa: E402
from tests.fixtures.retrieval.evaluate import fixture, load  # noqa: E402

SCALES = (1, 2, 3, 4)
Result = list[tuple[str, float, float]]  # per question: (fold, recall@5, recall@10)

os.environ["CONTEXTFLOW_SECRETS"] = "off"


def open_app(folder: Path, clock: Any = None) -> App:
    env = {**os.environ, "CONTEXTFLOW_STORE": str(folder / "store"), "CONTEXTFLOW_STATE": str(folder / "state"),
           "CONTEXTFLOW_WRITER": "tune"}  # fmt: skip
    return App.open(env, **({"clock": HybridClock(clock)} if clock else {}))


def per_question() -> Result:
    """Recall@5 and @10 of every question of both fixtures, each fixture stored afresh."""
    found: Result = []
    with tempfile.TemporaryDirectory(prefix="cf-tune-") as tmp:
        clock = dialogs.FixtureClock()
        app = open_app(Path(tmp) / "dialogs", clock)
        entry_of = {stored: entry for entry, stored in dialogs.load(app, clock).items()}
        for q in dialogs.questions():
            shares = []
            for k in (5, 10):
                refs = [entry_of.get(ref, ref) for ref in dialogs.found_refs(app, q.text, k)]
                shares.append(sum(e in refs for e in q.evidence) / len(q.evidence))
            found.append((q.evidence[0][0], shares[0], shares[1]))
        app.close()
        records, queries = fixture()
        app = open_app(Path(tmp) / "records")
        ids = load(app, records)
        for n, q in enumerate(queries):
            hits = [1.0 if ids[q["target"]] in dialogs.found_refs(app, q["query"], k) else 0.0 for k in (5, 10)]
            found.append((f"records-{n % 4 + 1}", hits[0], hits[1]))
        app.close()
    return found


@contextmanager
def ranking_setting(value: str) -> Iterator[None]:
    before = os.environ.get("CONTEXTFLOW_RANKING")
    os.environ["CONTEXTFLOW_RANKING"] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("CONTEXTFLOW_RANKING", None)
        else:
            os.environ["CONTEXTFLOW_RANKING"] = before


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def score(result: Result, keep: Any) -> tuple[float, float]:
    chosen = [item for item in result if keep(item[0])]
    return mean([r5 for _, r5, _ in chosen]), mean([r10 for _, _, r10 in chosen])


def leave_one_out(results: dict[Any, Result], order: list[Any]) -> tuple[dict[str, Any], float, Any]:
    """The configuration chosen without each fold, the held-out recall@5 of that procedure, and the
    configuration it chooses on every fold. `order` breaks ties (earlier wins)."""
    folds = sorted({fold for fold, _, _ in next(iter(results.values()))})
    chosen: dict[str, Any] = {}
    held: list[float] = []
    for fold in folds:
        best = max(order, key=lambda c, out=fold: (*score(results[c], lambda f: f != out), -order.index(c)))
        chosen[fold] = best
        held += [r5 for f, r5, _ in results[best] if f == fold]
    overall = max(order, key=lambda c: (*score(results[c], lambda f: True), -order.index(c)))
    return chosen, mean(held), overall


def report(title: str, results: dict[Any, Result], order: list[Any], label: Any) -> Any:
    print(f"\n{title}")
    folds = sorted({fold for fold, _, _ in next(iter(results.values()))})
    print(f"  {'setting':18} {'all @5':>7} {'all @10':>8} " + " ".join(f"{fold:>9}" for fold in folds))
    for config in order:
        r5, r10 = score(results[config], lambda f: True)
        cells = " ".join(f"{score(results[config], lambda f, x=fold: f == x)[0]:>9.3f}" for fold in folds)
        print(f"  {label(config):18} {r5:>7.3f} {r10:>8.3f} {cells}")
    chosen, held, overall = leave_one_out(results, order)
    print("  leave one fold out: " + ", ".join(f"{fold} -> {label(c)}" for fold, c in chosen.items()))
    print(f"  held-out recall@5 of the procedure: {held:.3f}; chosen on all folds: {label(overall)}")
    return overall


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.parse_args()
    print("BM25 k1 by leave-one-conversation-out (scripts/tune_bm25.py); recall@5 per fold, every other lever on")
    results = {}
    for scale in SCALES:
        with ranking_setting(f"scale={scale}"):
            results[scale] = per_question()
    chosen = report(
        "on-disk index (tantivy, b 0.75 fixed): k1 = 1.2 / scale",
        results,
        list(SCALES),
        lambda s: f"scale {s} (k1 {1.2 / s:.2f})",
    )
    _, held, _ = leave_one_out(results, list(SCALES))
    plain = score(results[1], lambda f: True)[0]
    shipped = score(results[chosen], lambda f: True)[0]
    print(
        f"  ships: scale {chosen} (k1 {1.2 / chosen:.2f}); recall@5 {shipped:.3f} against {plain:.3f} at k1 1.2, "
        f"held-out {held:.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
