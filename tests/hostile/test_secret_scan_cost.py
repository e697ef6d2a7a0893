"""Secret scanning costs time linear in the text, for every rule, whatever the text holds.

For each rule, the text that costs it the most (`scan_inputs.worst`: the rule's own trigger
words repeated, or followed by one long run: unclosed quotes, its token alphabet, spaces) is
scanned at 200,000 characters through `secrets.find`, and the CPU time must stay within RATIO
times that of plain prose of the same size. The time is this thread's (`thread_time`): threads
an earlier test left running in the process, an index's merger say, must not count. A rule that
rescans from every start grows with the square of the size, a thousand times plain text or more
at this size (`mysql ` repeated took 40 s against 17 ms). Each text is scanned at smaller sizes
first, so a quadratic (or cubic) rule fails within seconds instead of running for minutes.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

import pytest

from contextflow.core import secrets
from contextflow.core.secret_rules import EVENT_RULES, EXTRA_RULES, LIBRARY_DETECTORS, Rule, rules
from tests.hostile import scan_inputs

SIZE = 200_000
RATIO = 50  # linear rules that check each candidate (a JWT's parts decoded) cost up to about 25x; quadratic 1000x
# Under a tracer (coverage, as CI runs the suite) the Python each candidate costs runs about 3x slower, while
# the scan of plain text, all regex, does not: `SECRET="` repeated measured 14-18x plain, 45-53x traced.
TRACED = 3 if sys.gettrace() is not None else 1
STAGES = (256, 1024, 4096, 16_384, 65_536, SIZE)


def _cost(text: str, also: Sequence[Rule] = ()) -> float:
    began = time.thread_time()
    secrets.find(text, also)
    return time.thread_time() - began


@pytest.fixture(scope="module")
def plain_cost() -> float:
    text = scan_inputs.plain(SIZE)
    secrets.find(text)  # patterns compiled before timing
    return min(_cost(text) for _ in range(5))


def _slowest(text: str) -> str:
    """The rule that spends the most on `text`, for the failure message."""
    spent, rule = max(((scan_inputs.cost(rule.pattern, text), rule) for rule in rules()), key=lambda item: item[0])
    return f"{rule.kind} ({spent:.2f} s alone): {rule.pattern.pattern[:120]}"


def _assert_linear(rule: Rule, plain_cost: float, also: Sequence[Rule] = ()) -> None:
    budget = RATIO * TRACED * plain_cost
    for label, make in scan_inputs.worst(rule, keep=1):
        for size in STAGES:
            text = make(size)
            spent = _cost(text, also)
            if spent > budget and size == SIZE:
                spent = min(spent, _cost(text, also), _cost(text, also))  # a noisy machine: the best of three
            assert spent <= budget, (
                f"{rule.kind}: {label} at {size:,} characters took {spent:.3f} s, {spent / plain_cost:.0f}x plain "
                f"text of {SIZE:,} ({plain_cost * 1000:.1f} ms); slowest rule: {_slowest(text)}"
            )


@pytest.mark.parametrize("rule", EXTRA_RULES, ids=[f"{n}-{rule.kind}" for n, rule in enumerate(EXTRA_RULES)])
def test_each_of_our_rules_scans_a_text_built_against_it_in_linear_time(rule: Rule, plain_cost: float) -> None:
    _assert_linear(rule, plain_cost)


@pytest.mark.parametrize("detector", list(LIBRARY_DETECTORS))
def test_each_detect_secrets_pattern_scans_a_text_built_against_it_in_linear_time(
    detector: str, plain_cost: float
) -> None:
    import importlib

    module, name = detector.split(".")
    kind = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name).secret_type
    ours = rules()[len(EXTRA_RULES) :]
    patterns = [rule for rule in ours if rule.kind == kind]
    assert patterns, f"no pattern of {detector} is scanned"
    for rule in patterns:
        _assert_linear(rule, plain_cost)


@pytest.mark.parametrize("trigger_rule", EVENT_RULES, ids=[rule.kind for _, rule in EVENT_RULES])
def test_each_event_wide_rule_scans_a_text_built_against_it_in_linear_time(
    trigger_rule: tuple[object, Rule], plain_cost: float
) -> None:
    _, rule = trigger_rule
    _assert_linear(rule, plain_cost, also=[rule])


def test_the_plain_text_baseline_is_a_real_scan(plain_cost: float) -> None:
    """The ratio means something only if plain text is scanned, not skipped: some rules run on it."""
    text = scan_inputs.plain(SIZE)
    lowered = text.lower()
    assert any(any(needle in lowered for needle in rule.needles) for rule in rules())
    assert secrets.find(text) == []
    assert plain_cost > 0
