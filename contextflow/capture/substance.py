"""A session's substance: the decisions (with their reasons and the options rejected), open
questions, todos and what was said resolved, merged turn by turn (`prose.py` reads each turn).

`accumulate(old, new)` merges a turn into the session's running substance (deduplicated, bounded,
a resolved question or done todo dropped). A turn that states none of these (a closing "Thanks,
that's all") changes nothing.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

MAX_ITEM = 300
MAX_REASON = 300
MAX_KEEP = 20  # of each kind per session
_STOP_WORDS = (
    "a an the to of in on for and or with is are was be it this that we i our by as at from not so use "
    "which what how whether should do does can could would will shall decided decide chose question open"
)
_STOP = frozenset(_STOP_WORDS.split())


def clip(text: str, limit: int) -> str:
    text = " ".join(text.split()).strip(" *_`>")
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def normal(text: str) -> str:
    """`text` as compared for sameness: lower case, words only (whitespace, case and punctuation aside)."""
    return " ".join(re.findall(r"\w+", text.lower()))


@lru_cache(maxsize=4_096)  # a session restates the same items turn after turn
def key_words(text: str) -> frozenset[str]:
    words = (w.strip("./") for w in re.findall(r"[a-z0-9_./]+", text.lower()))
    return frozenset(w for w in words if w not in _STOP and len(w) > 1)


@lru_cache(maxsize=8_192)
def same(a: str, b: str) -> bool:
    """Whether two items say the same thing (most of their words shared)."""
    left, right = key_words(a), key_words(b)
    if not left or not right:
        words = normal(a), normal(b)
        return words[0] == words[1] if any(words) else a.strip().lower() == b.strip().lower()
    return len(left & right) / min(len(left), len(right)) >= 0.6


def _answered(item: str, resolved: list[str], decisions: list[dict[str, str]]) -> bool:
    return any(same(item, r) for r in resolved) or any(same(item, d.get("decision", "")) for d in decisions)


def of_turn(turn: dict[str, Any]) -> dict[str, list[Any]]:
    """What a stored turn record says (a record from another machine may hold anything: only
    well-formed items are kept)."""
    found: dict[str, list[Any]] = {}
    decisions = turn.get("decisions")
    if isinstance(decisions, list):
        kept = [d for d in decisions if isinstance(d, dict) and isinstance(d.get("decision"), str) and d["decision"]]
        found["decisions"] = [
            {**d, "status": d.get("status") if d.get("status") in ("chosen", "rejected") else "chosen"} for d in kept
        ]
    for name in ("questions", "todos_said", "resolved"):
        items = turn.get(name)
        if isinstance(items, list):
            found[name] = [item for item in items if isinstance(item, str) and item]
    return {name: items[:MAX_KEEP] for name, items in found.items() if items}


def accumulate(old: dict[str, list[Any]], new: dict[str, list[Any]], keep: int = MAX_KEEP) -> dict[str, list[Any]]:
    """The session's substance with one more turn's: newer items replace the same older ones (a decision
    restated, or reversed: "rejected: X" after "we went with X"); questions a later decision or "resolved:"
    answers, and todos said done, are dropped. At most `keep` of each kind, the newest."""
    if not new:
        return old
    out: dict[str, list[Any]] = {name: list(items) for name, items in old.items()}
    fresh = new.get("decisions", [])
    if fresh:
        kept = [d for d in out.get("decisions", []) if not any(same(d["decision"], n["decision"]) for n in fresh)]
        out["decisions"] = [*kept, *fresh]
    resolved = new.get("resolved", [])
    for name in ("questions", "todos_said"):
        kept = [q for q in out.get(name, []) if not _answered(q, resolved, fresh)]
        for item in new.get(name, []):
            kept = [q for q in kept if not same(q, item)] + [item]
        out[name] = kept
    out["resolved"] = (out.get("resolved", []) + resolved)[-keep:]
    return {name: items[-keep:] for name, items in out.items() if items}
