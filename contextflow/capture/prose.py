"""Reading one turn's assistant prose: the decisions it states with their reasons, the options it
rejects, the questions it leaves open, its todos and what it says resolved. Deterministic
patterns, no model call; `substance.py` merges what each turn says into the session's.
"""

from __future__ import annotations

import re
from typing import Any

from contextflow.capture.substance import MAX_ITEM, MAX_KEEP, MAX_REASON, clip

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
    item = {"decision": clip(decided.rstrip(" ,;:"), MAX_ITEM), "status": "chosen"}
    if reason:
        item["reasoning"] = clip(reason.group(1), MAX_REASON)
    return item


def _rejected(sentence: str, decision: dict[str, str] | None) -> dict[str, str] | None:
    if decision is None and not re.search(r"\b(rejected|ruled out|decided against|chose not to)\b", sentence, re.I):
        return None
    found = _REJECTED.search(sentence)
    if not found:
        return None
    option = clip(found.group(1) or found.group(2) or "", MAX_ITEM).rstrip(".")
    if len(option) < 3:
        return None
    item = {"decision": option, "status": "rejected"}
    reason = _REASON.search(sentence)
    if reason:
        item["reasoning"] = clip(reason.group(1), MAX_REASON)
    return item


def _question(sentence: str) -> str | None:
    marked = _QUESTION_MARK.match(sentence)
    if marked:
        return clip(marked.group(1), MAX_ITEM)
    if _UNSURE.search(sentence) or (
        sentence.endswith("?") and re.search(r"\b(whether|should we|which)\b", sentence, re.I)
    ):
        return None if _POLITE.match(sentence) else clip(sentence, MAX_ITEM)
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
            out.setdefault("todos_said", []).append(clip(todo.group(1), MAX_ITEM))
        resolved = _RESOLVED.match(sentence)
        if resolved:
            out.setdefault("resolved", []).append(clip(resolved.group(1), MAX_ITEM))
    return {name: items[:MAX_KEEP] for name, items in out.items()}
