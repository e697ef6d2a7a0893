"""Figures and how they are printed: percentiles, tables, and the list of budget targets."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field


def p50(samples: Sequence[float]) -> float:
    return statistics.median(samples) if samples else math.nan


def p95(samples: Sequence[float]) -> float:
    if not samples:
        return math.nan
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def ms(seconds: float) -> str:
    return "n/a" if math.isnan(seconds) else f"{seconds * 1000:.2f}"


def ratio(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.2f}x"


def heading(title: str) -> None:
    print(f"\n== {title}", flush=True)


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    cells = [[str(c) for c in header], *([str(c) for c in row] for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    for n, row in enumerate(cells):
        padded = (c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True)))
        print("  " + "  ".join(padded))
        if n == 0:
            print("  " + "  ".join("-" * w for w in widths))
    print(flush=True)


@dataclass(frozen=True)
class Target:
    name: str
    measured: str
    goal: str
    met: bool | None  # None: not measured


@dataclass
class Targets:
    found: list[Target] = field(default_factory=list)

    def add(self, name: str, measured: str, goal: str, met: bool | None) -> str:
        self.found.append(Target(name, measured, goal, met))
        return verdict(met)

    def print(self) -> None:
        table(("target", "measured", "goal", "met"), [(t.name, t.measured, t.goal, verdict(t.met)) for t in self.found])


def verdict(met: bool | None) -> str:
    return "n/a" if met is None else "yes" if met else "NO"
