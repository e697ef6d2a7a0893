"""A session's substance read from the assistant's prose: decisions with their reasons, rejected
options, open questions, todos, and what was said resolved. Deterministic patterns, no model.

`extract(text)` reads one turn's prose; `accumulate(old, new)` merges a turn into the session's
running substance (deduplicated, bounded, a resolved question or done todo dropped). A turn
that states none of these (a closing "Thanks, that's all") changes nothing.
"""

from __future__ import annotations

import re
from typing import Any

MAX_ITEM = 300
MAX_REASON = 300
MAX_KEEP = 20  # of each kind per session
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*\"'(\[])|\n+")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_DECISION = re.compile(
    r"^(?:(?:so\s+)?(?:i|we)(?:'ve| have)?\s+(?:decided|chose|chosen|opted|settled on|went with|agreed)\b|"
    r"(?:i|we)(?:'ll| will)\s+(?:go with|use|keep|stick with)\b|decision\s*:|decided\s*:|"
    r"going with\b|the decision is\b|let'?s go with\b)",
    re.I,
)
_REJECTED = re.compile(
    r"\b(?:rather than|instead of|over|not)\s+(.+?)(?=\s*(?:because|since|as|so that|,|;|$))"
    r"|\b(?:rejected|ruled out|decided against|dropped the idea of|chose not to)\s+"
    r"(.+?)(?=\s*(?:because|since|as|,|;|$))",
    re.I,
)
_REASON = re.compile(r"\b(?:because|since|so that|as it|as this|given that)\b\s*(.+)$", re.I)
_QUESTION_MARK = re.compile(r"^(?:open questions?|question|unresolved|tbd|to decide)\s*:\s*(.+)$", re.I)
_UNSURE = re.compile(
    r"\b(?:not sure (?:whether|if)|unclear (?:whether|if)|still (?:need to decide|open)|open question)\b", re.I
)
_POLITE = re.compile(
    r"^(?:would you like|do you want|shall i|should i|want me to|anything else|can i help|let me know|"
    r"is there anything|does that|how about i)\b",
    re.I,
)
_TODO = re.compile(r"^(?:todo|to do|next steps?|follow[- ]up|still to do|remaining|left to do)\s*[:\-]\s*(.+)$", re.I)
_RESOLVED = re.compile(r"^(?:resolved|answered|done|fixed|completed)\s*[:\-]\s*(.+)$", re.I)
_STOP_WORDS = (
    "a an the to of in on for and or with is are was be it this that we i our by as at from not so use "
    "which what how whether should do does can could would will shall decided decide chose question open"
)
_STOP = frozenset(_STOP_WORDS.split())


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split()).strip(" *_`>")
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def sentences(text: str) -> list[str]:
    """The sentences and list items of some prose, without code blocks."""
    text = re.sub(r"```.*?(```|$)", " ", text, flags=re.S)
    found = []
    for part in _SENTENCE.split(text):
        part = _BULLET.sub("", part).strip()
        if part:
            found.append(part)
    return found


def _decision(sentence: str) -> dict[str, str] | None:
    if not _DECISION.search(sentence):
        return None
    reason = _REASON.search(sentence)
    decided = sentence[: reason.start()] if reason else sentence
    item = {"decision": _clip(decided.rstrip(" ,;:"), MAX_ITEM), "status": "chosen"}
    if reason:
        item["reasoning"] = _clip(reason.group(1), MAX_REASON)
    return item


def _rejected(sentence: str, decision: dict[str, str] | None) -> dict[str, str] | None:
    if decision is None and not re.search(r"\b(rejected|ruled out|decided against|chose not to)\b", sentence, re.I):
        return None
    found = _REJECTED.search(sentence)
    if not found:
        return None
    option = _clip(found.group(1) or found.group(2) or "", MAX_ITEM).rstrip(".")
    if len(option) < 3:
        return None
    item = {"decision": option, "status": "rejected"}
    reason = _REASON.search(sentence)
    if reason:
        item["reasoning"] = _clip(reason.group(1), MAX_REASON)
    return item


def _question(sentence: str) -> str | None:
    marked = _QUESTION_MARK.match(sentence)
    if marked:
        return _clip(marked.group(1), MAX_ITEM)
    if _UNSURE.search(sentence) or (
        sentence.endswith("?") and re.search(r"\b(whether|should we|which)\b", sentence, re.I)
    ):
        return None if _POLITE.match(sentence) else _clip(sentence, MAX_ITEM)
    return None


def extract(text: str) -> dict[str, list[Any]]:
    """What one turn's prose decides, rejects, leaves open, leaves to do or resolves; only the
    kinds it states (a closing "thanks" gives {})."""
    out: dict[str, list[Any]] = {}
    for sentence in sentences(text):
        decision = _decision(sentence)
        if decision is not None:
            out.setdefault("decisions", []).append(decision)
        rejected = _rejected(sentence, decision)
        if rejected is not None:
            out.setdefault("decisions", []).append(rejected)
        question = _question(sentence)
        if question is not None:
            out.setdefault("questions", []).append(question)
        todo = _TODO.match(sentence)
        if todo:
            out.setdefault("todos_said", []).append(_clip(todo.group(1), MAX_ITEM))
        resolved = _RESOLVED.match(sentence)
        if resolved:
            out.setdefault("resolved", []).append(_clip(resolved.group(1), MAX_ITEM))
    return {name: items[:MAX_KEEP] for name, items in out.items()}


def key_words(text: str) -> frozenset[str]:
    words = (w.strip("./") for w in re.findall(r"[a-z0-9_./]+", text.lower()))
    return frozenset(w for w in words if w not in _STOP and len(w) > 1)


def same(a: str, b: str) -> bool:
    """Whether two items say the same thing (most of their words shared)."""
    left, right = key_words(a), key_words(b)
    if not left or not right:
        return a.strip().lower() == b.strip().lower()
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


def accumulate(old: dict[str, list[Any]], new: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """The session's substance with one more turn's: newer items replace the same older ones;
    questions a later decision or "resolved:" answers, and todos said done, are dropped."""
    if not new:
        return old
    out: dict[str, list[Any]] = {name: list(items) for name, items in old.items()}
    decisions = out.setdefault("decisions", [])
    for item in new.get("decisions", []):
        kept = [
            d for d in decisions if d.get("status") != item.get("status") or not same(d["decision"], item["decision"])
        ]
        decisions[:] = [*kept, item]
    resolved = new.get("resolved", [])
    fresh = new.get("decisions", [])
    for name in ("questions", "todos_said"):
        kept = [q for q in out.get(name, []) if not _answered(q, resolved, fresh)]
        for item in new.get(name, []):
            kept = [q for q in kept if not same(q, item)] + [item]
        out[name] = kept
    out["resolved"] = (out.get("resolved", []) + resolved)[-MAX_KEEP:]
    return {name: items[-MAX_KEEP:] for name, items in out.items() if items}
