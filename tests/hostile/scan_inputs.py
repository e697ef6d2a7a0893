"""Texts built to make one secret rule slow, and plain text to compare them with.

A backtracking regex turns quadratic when a scan that starts at one occurrence of its trigger
runs far and fails, and starts again at the next occurrence. So the inputs for a rule are its
own trigger words (its needles and the literal runs of its pattern) repeated with the
separators and character runs its gaps accept, or followed by one long run (an unclosed quote,
a run of its token alphabet, spaces). `worst` picks the slowest few by timing the rule alone on
small texts; `scripts/bench_secrets.py` and `tests/hostile/test_secret_scan_cost.py` time them
at full size through `secrets.find`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from re import _parser  # the standard library's own regex parser: the literal runs of a pattern
from typing import Any

from contextflow.core.secret_rules import Rule
from contextflow.core.text import folded

SEPARATORS = ("", " ", "_", "-", ".", ":", "=", "/", "@", "\t", "'", '"', '="', "a:", " a ", " -u ", "\n")
RUNS = ("a", "A", "1", "aB3/", "0f", "a.", "a:", "a@", "a=", " ", "-", "_", "x ", "/", "\\a")
AFTER = ("", " ", "=", '"')
PLAIN = (
    "The build runs the tests before each release; a failing check stops the deploy and the log "
    "names the file and the line. We moved the cache to the shared folder, kept the old layout for "
    "readers, and wrote down why in the design notes: fewer moving parts, one writer per file. "
)

Make = Callable[[int], str]


def plain(size: int) -> str:
    """Ordinary developer prose of `size` characters."""
    return (PLAIN * (size // len(PLAIN) + 1))[:size]


def _literals(pattern: re.Pattern[str]) -> set[str]:
    found: set[str] = set()

    def walk(items: Any) -> None:
        run = ""
        for op, arg in items:
            if op is _parser.LITERAL:
                run += chr(arg)
                continue
            if run:
                found.add(run)
                run = ""
            if op is _parser.SUBPATTERN:
                walk(arg[-1])
            elif op is _parser.BRANCH:
                for branch in arg[1]:
                    walk(branch)
            elif op in (_parser.MAX_REPEAT, _parser.MIN_REPEAT, _parser.POSSESSIVE_REPEAT):
                walk(arg[2])
            elif op in (_parser.ASSERT, _parser.ASSERT_NOT):
                walk(arg[1])
            elif op is _parser.ATOMIC_GROUP:
                walk(arg)
        if run:
            found.add(run)

    walk(_parser.parse(pattern.pattern, pattern.flags))
    return found


_REPEATS = (_parser.MAX_REPEAT, _parser.MIN_REPEAT, _parser.POSSESSIVE_REPEAT)


def _opening(items: Any) -> tuple[str, bool]:
    """A text the pattern matches up to its first variable-length part, and whether it got there.

    `(?:cloudant|cl)(?:_|-|)(?:api|)(?:key|pwd)(?: *)...` gives `cloudant_apikey`: the words
    alone would not reach the spaces that follow.
    """
    text = ""
    for op, arg in items:
        if op is _parser.LITERAL:
            text += chr(arg)
        elif op is _parser.IN:
            chars = [
                chr(a) if o is _parser.LITERAL else chr(a[0]) for o, a in arg if o in (_parser.LITERAL, _parser.RANGE)
            ]
            if not chars or arg[0][0] is _parser.NEGATE:
                return text, True
            text += chars[0]
        elif op in (_parser.SUBPATTERN, _parser.BRANCH, _parser.ATOMIC_GROUP):
            choices = [arg[-1]] if op is _parser.SUBPATTERN else arg[1] if op is _parser.BRANCH else [arg]
            found = [_opening(choice) for choice in choices]
            part, stopped = next((f for f in found if f[0]), found[0])
            text += part
            if stopped:
                return text, True
        elif op in _REPEATS:
            low, high, sub = arg
            part, stopped = _opening(sub)
            text += part * max(low, high == 1)  # an optional part is taken once
            if stopped or (low != high and high != 1):
                return text, True
        elif op not in (_parser.ASSERT, _parser.ASSERT_NOT, _parser.AT):
            return text, True
    return text, False


def triggers(rule: Rule) -> list[str]:
    """The words that start (or restart) the rule's scan: the pattern's literal runs as written
    (single characters are in the runs below), its opening, and its needles in lower and upper case."""
    words = {word for word in _literals(rule.pattern) if len(word.strip()) > 1}
    opening = _opening(_parser.parse(rule.pattern.pattern, rule.pattern.flags))[0]
    words |= {opening} if opening.strip() else set()
    return sorted(words | set(rule.needles) | {needle.upper() for needle in rule.needles})


def inputs(rule: Rule) -> Iterator[tuple[str, Make]]:
    """(label, make(size)) for every hostile text built for `rule`."""

    def fill(unit: str, head: str = "") -> Make:
        return lambda size: (head + unit * (size // max(1, len(unit)) + 1))[:size]

    for word in triggers(rule):
        for sep in SEPARATORS:
            yield f"{word + sep!r} repeated", fill(word + sep)
        for after in AFTER:
            for run in RUNS:
                yield f"{word + after!r} then {run!r} repeated", fill(run, word + after)
    for run in RUNS:
        yield f"{run!r} repeated", fill(run)


def cost(pattern: re.Pattern[str], text: str) -> float:
    began = time.thread_time()
    for _ in pattern.finditer(text):
        pass
    return time.thread_time() - began


def scanned(rule: Rule, text: str) -> bool:
    """Whether `find` runs `rule` on `text`: one of its needles is in it, and one of the words it
    requires (`Rule.requires`) when it has any."""
    if rule.needles and not any(needle in text.lower() for needle in rule.needles):
        return False
    return not rule.requires or any(word in folded(text) for word in rule.requires)


def _head(rule: Rule) -> str:
    return " ".join((*rule.needles[:1], rule.requires[0].strip(), "\n"))


def _after(head: str, make: Make) -> Make:
    return lambda size: (head + make(size))[:size]


def worst(
    rule: Rule, keep: int = 1, small: int = 256, larger: int = 1024, hopeless: float = 0.002
) -> list[tuple[str, Make]]:
    """The `keep` inputs holding one of `rule`'s needles that cost it the most on a `larger`-character text.

    Each is first timed at `small` characters: one already slower than `hopeless` seconds there
    is ranked first without the larger run (a cubic rule would take minutes at full size).
    """
    scored: list[tuple[float, str, Make]] = []
    seen: set[str] = set()
    for label, make in inputs(rule):
        if rule.requires:  # its words first, so `find` runs it on the hostile text that follows
            label, make = f"{label} after {_head(rule)!r}", _after(_head(rule), make)
        sample = make(small)
        if sample in seen or not scanned(rule, sample):
            continue
        seen.add(sample)
        first = cost(rule.pattern, sample)
        score = float("inf") if first > hopeless else cost(rule.pattern, make(larger))
        scored.append((score, label, make))
    scored.sort(key=lambda item: -item[0])
    return [(label, make) for _, label, make in scored[:keep]]
