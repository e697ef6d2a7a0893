"""Reading one turn's assistant prose: the decisions it states with their reasons, the options it
rejects with theirs, the questions it leaves open, its todos and what it says resolved.
Deterministic patterns, no model call; `substance.py` merges what each turn says into the session's.

Conservative: a sentence is a decision only when it says so ("we decided", "went with", "Decision:",
a bullet under a "Decisions:" heading), and a rejection only when it names one ("rejected",
"decided against", "instead of", "over", ", not"). A sentence is read clause by clause (`;`), so
"we keep X because A; rejected Y because B" gives X its reason and Y its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from contextflow.capture.substance import MAX_ITEM, MAX_KEEP, MAX_REASON, clip, normal
from contextflow.core import regexes
from contextflow.core.text import Worded, folded

_SENTENCE = regexes.compile(r"(?<=[.!?])\s+(?=[A-Z`*\"'(\[])")
_BULLET = regexes.compile(r"^\s*(?:[-*•+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_LEAD = (
    r"^(?:(?:so|ok|okay|ultimately|finally|in the end|after (?:\w+\s+){0,3}\w+|then|and|but|also|going forward|"
    r"from now on|for now|in short|overall)\s*,?\s+)?"
)
_SUBJECT = r"(?:(?:i|we)(?:'ve| have|'re| are|'ll| will|'m| am)?\s+(?:(?:now|finally|ultimately|also|instead)\s+)?)?"
_WE = _SUBJECT.removesuffix("?")  # "we"/"I" said: required before the verbs below that start plain sentences too
_CHOOSE = regexes.compile(
    _LEAD
    + r"(?:"
    + _SUBJECT
    + r"(?:decided (?:to|on|that)|chose|opted|settled on|went with|going with|picked)\b|"
    + _WE
    + r"(?:decided|chosen|choose|gone with|agreed|keep(?:ing)?|kept|stick(?:ing)? with|stuck with|"
    r"stay(?:ing)? with|go with|switched to|prefer(?:red)?)\b|"
    r"(?:(?:our|my|the|final|key) )?(?:decisions?|decided|chosen|chose|choice|verdict|going with|keeping|"
    r"sticking with)\s*:|"
    r"(?:i|we)(?:'ll| will)\s+use\b|the (?:decision|choice|plan) (?:is|was)\b|"
    r"let'?s (?:go with|use|keep|stick with)\b)",
    re.I,
)
_USE = regexes.compile(
    _LEAD + r"(?:(?:i|we)(?:'re| are|'ll| will)?\s+)?(?:use|using|store|keep)\b", re.I
)  # with a rejection only
_REJECT = Worded(
    (
        *("reject", "ruled out", "not chosen", "discarded", "dropped", "alternative", "won", "against"),
        *("decided not to", "chose not to", "opted not to", "passed on", "vetoed", "gave up on", "avoid"),
        *("will not", "shouldn", "should not", "are not going to", "aren", "not going with", "not using"),
        *("did not", "didn"),
    ),
    _LEAD + r"(?:(?:rejected (?:options?|alternatives?|ideas?|approaches)|rejected|ruled out|not chosen|discarded|"
    r"dropped|alternatives?(?: considered)?(?: and rejected)?|considered and rejected|won'?t do)\s*:|"
    + _SUBJECT
    + r"(?:rejected|ruled out|decided against|decided not to(?: use)?|chose not to(?: use)?|"
    r"opted against|opted not to(?: use)?|dropped the idea of|passed on|vetoed|gave up on|avoided)\b\s*:?|"
    r"(?:i|we)\s+(?:won'?t|will not|shouldn'?t|should not|are not going to|aren'?t going to)\s+use\b|"
    r"(?:(?:i|we)(?:'re| are| am)\s+)?not (?:going with|using)\b|avoid\b|"
    r"(?:(?:i|we)\s+)?(?:did not|didn'?t) (?:go with|use|pick|choose)\b)\s*",
    re.I,
)
_PASSIVE = regexes.compile(
    r"^(?P<option>.{2,120}?)(?:\s+(?:was|were|is|are|got|has been|have been)\s+(?:considered (?:but|and) )?|"
    r"\s*[:—–]\s*|\s+-\s+)(?:rejected|"
    r"ruled out|dropped|discarded|vetoed|not chosen)\b(?P<rest>.*)$",
    re.I,
)
# "instead of Y, we use X", "switched from Y to X", "replaced Y with X", "dropped Y in favour of X"
_INSTEAD = regexes.compile(
    r"^(?:instead of|rather than)\s+(?P<y>[^,;]{2,80}),\s*(?P<x>(?:(?:i|we)(?:'ll| will|'re| are)?\s+|let'?s\s+)?"
    r"(?:use|using|go with|keep|chose|picked|went with|opted for|store)\b.+)$",
    re.I,
)
_SWITCH = Worded(
    ("switched from", "migrated from", "replaced", "swapped", "in favo"),
    _LEAD
    + _SUBJECT
    + r"(?:switched|migrated) from\s+(?P<y>.{2,80}?)\s+to\s+(?P<x>.+)$|"
    + _LEAD
    + _SUBJECT
    + r"(?:replaced|swapped(?: out)?)\s+(?P<y2>.{2,80}?)\s+(?:with|for|by)\s+(?P<x2>.+)$|"
    + _LEAD
    + _SUBJECT
    + r"(?:dropped|ditched|abandoned|removed)\s+(?P<y3>.{2,80}?)\s+in favou?r of\s+(?P<x3>.+)$",
    re.I,
)
_PASSIVE_REST = Worded((), r"^\s*(?:$|because|since|as|due to|for|in favou?r|[(:—–,-])", re.I)
_REASON_LINE = regexes.compile(r"^(?:reason|reasons|why|rationale|because)\s*[:\-]\s*(?P<why>.+)$", re.I)
_BECAUSE = regexes.compile(
    r"\s*,?\s*\b(?:because(?: of)?|since|given that|so that|due to)\b\s*|\s+[—–]\s+|\s+--\s+|\s+-\s+(?=\w)", re.I
)
_AS = regexes.compile(r"\s*,?\s*\bas (?=(?:it|this|that|they|its|there|both|each)\b)", re.I)  # only when nothing above
_PAREN = regexes.compile(r"^(?P<option>.+?)\s*\((?P<why>[^()]{3,})\)\s*[.!]?$")
_AGAINST = regexes.compile(
    r"\s*,?\s*\(?\b(?:rather than|instead of|in place of|and not|but not)\s+(?P<a>[^,;()]+?)\s*\)?(?=\s*(?:,|$))"
    r"|,\s*not\s+(?P<b>[^,;()]+?)\s*(?=,|$)|\s*\(not\s+(?P<c>[^)]+)\)",
    re.I,
)
_OVER_VERB = regexes.compile(
    r"\b(?:chose|chosen|choose|picked|pick|went with|going with|go with|opted for|prefer(?:red)?|settled on|"
    r"favou?r(?:ed)?|keep(?:ing)?|kept|stick(?:ing)? with|stay(?:ing)? with|use|using)\s+(?!to\b)",
    re.I,
)
_OVER = regexes.compile(r"\s+over\s+(?P<o>[^,;()]+?)\s*(?=,|$)", re.I)
_LABEL = regexes.compile(
    r"^(?:(?:our|my|the|final|key) )?(?:decisions?|decided|chosen|chose|choice|verdict)\s*:\s*", re.I
)
_LISTED = regexes.compile(r"\s*(?:,|;|\band\b)?\s*([^,;()]{2,80}?)\s*\(([^()]{2,200})\)")
_FAVOUR = Worded(("in favo",), r"\s+in favou?r of\s+", re.I)
_X_NOT_Y = regexes.compile(
    r"^(?P<x>[^,;]{2,80}),\s+not\s+(?P<y>[^,;]{2,80}),\s*(?:because|since|as)\b\s*(?P<why>.+)$",
    re.I,
)
_NOT_A_CHOICE = Worded((), r"^(?:it|this|that|there|he|she|they|you)\b|\b(?:fail|fails|failed|broke|crash)", re.I)
_HEADINGS = (
    (
        "chosen",
        r"decisions?(?: made)?|decided|key decisions|design decisions|what (?:i|we) decided|choices(?: made)?|chosen",
    ),
    (
        "rejected",
        r"rejected(?: options?| alternatives?| approaches| ideas)?|ruled out|not chosen|discarded|dropped|"
        r"alternatives(?: considered)?(?: and rejected)?|considered (?:and|but) rejected|"
        r"what (?:i|we) (?:rejected|ruled out)",
    ),
    ("questions", r"open questions?|unresolved(?: questions)?|questions|to decide|undecided"),
    ("todos", r"todos?|to ?dos?|next steps?|follow[- ]ups?|remaining(?: work)?|still to do|left to do"),
)
_HEADING = Worded(
    (
        *("decision", "decide", "choices", "chosen", "rejected", "ruled out", "discarded", "dropped"),
        *("alternatives", "question", "unresolved", "todo", "to do", "next step", "follow", "remaining"),
    ),
    r"^(?:#{1,6}\s*)?(?:" + "|".join(f"(?P<{kind}>{words})" for kind, words in _HEADINGS) + r")\s*:?$",
    re.I,
)
# how every heading `_HEADING` matches ends (but for a colon): one line in a thousand is worth a compile
_HEADING_ENDS = (
    *("decision", "decisions", "made", "decided", "chosen", "choices", "rejected", "option", "options"),
    *("alternative", "alternatives", "approaches", "ideas", "out", "discarded", "dropped", "considered"),
    *("question", "questions", "unresolved", "decide", "do", "dos", "step", "steps", "up", "ups", "remaining", "work"),
)


def _heading(sentence: str) -> str | None:
    """The kind of items a heading ("Decisions:", "## Open questions") lists under it; None for any other sentence."""
    end = sentence.rstrip()
    end = end[:-1].rstrip() if end.endswith(":") else end
    titled = _HEADING.match(sentence) if folded(end).endswith(_HEADING_ENDS) else None
    return titled.lastgroup if titled else None


_QUESTION_MARK = regexes.compile(r"^(?:open questions?|question|unresolved|tbd|to decide)\s*:\s*(.+)$", re.I)
_UNSURE = regexes.compile(
    r"\b(?:not sure (?:whether|if)|unclear (?:whether|if)|still (?:need to decide|open)|open question)\b", re.I
)
_POLITE = Worded(
    (),
    r"^(?:would you like|do you want|shall i|should i|want me to|anything else|can i help|let me know|"
    r"is there anything|does that|how about i)\b",
    re.I,
)
_TODO = regexes.compile(
    r"^(?:todo|to do|next steps?|follow[- ]up|still to do|remaining|left to do)\s*[:\-]\s*(.+)$", re.I
)
_RESOLVED = regexes.compile(r"^(?:resolved|answered|done|fixed|completed)\s*[:\-]\s*(.+)$", re.I)

Item = dict[str, str]


def parts(text: str) -> Iterator[tuple[str, bool]]:
    """The sentences and list items of some prose without code blocks, each with whether it is a list item."""
    text = re.sub(r"```.*?(```|$)", " ", text, flags=re.S)
    for line in text.split("\n"):
        bullet = _BULLET.match(line)
        body = (line[bullet.end() :] if bullet else line).replace("**", "").replace("__", "")
        for part in _SENTENCE.split(body):
            part = part.strip()
            if part:
                yield part, bool(bullet)


def sentences(text: str) -> list[str]:
    """The sentences and list items of some prose, without code blocks."""
    return [part for part, _ in parts(text)]


def _option(text: str) -> str:
    return clip(text.strip(" ,;:.").removeprefix("to ").removeprefix("using "), MAX_ITEM)


def _item(text: str, status: str, reason: str | None) -> Item | None:
    option = _option(text) if status == "rejected" else clip(text.rstrip(" ,;:"), MAX_ITEM)
    if len(option) < 2:
        return None
    item = {"decision": option, "status": status}
    if reason and reason.strip(" .,;"):
        item["reasoning"] = clip(reason, MAX_REASON)
    return item


def _split_reason(text: str, listed: bool) -> tuple[str, str | None]:
    """(what, why): the text before its reason and the reason, if it gives one."""
    found = _BECAUSE.search(text) or _AS.search(text)
    if found and found.start() > 0:
        return text[: found.start()], text[found.end() :]
    wrapped = _PAREN.match(text)
    if wrapped:
        return wrapped["option"], wrapped["why"]
    head, colon, tail = text.partition(": ")
    if listed and colon and len(head.split()) <= 6:  # "- Postgres: too heavy for a CLI"
        return head, tail
    return text, None


def _rejection(rest: str, listed: bool) -> list[Item]:
    """A rejected option (what follows "rejected", or a bullet under a rejection heading) and its reason;
    "Y in favour of X" also gives the chosen X; "Y (reason), Z (reason)" gives each its own."""
    several = _LISTED.findall(rest)
    if len(several) > 1 and _LISTED.sub("", rest).strip(" ,;.") in ("", "and"):
        return [item for option, why in several if (item := _item(option, "rejected", why))]
    what, why = _split_reason(rest, listed)
    chosen = None
    favour = _FAVOUR.search(what)
    if favour:
        what, chosen = what[: favour.start()], what[favour.end() :]
    found = [_item(what, "rejected", why)]
    if chosen:
        found.append(_item(chosen, "chosen", why))
    return [item for item in found if item]


def _choice(clause: str, listed: bool, weak: bool, labelled: bool = False) -> list[Item]:
    """A chosen option with its reason, and the options it names as set aside ("over", "instead of", ", not";
    "over" after a verb of choosing, or anywhere in a labelled decision: "Decision: X over Y")."""
    what, why = _split_reason(clause, listed)
    against: list[str] = []
    for match in list(_AGAINST.finditer(what))[::-1]:
        against.insert(0, match["a"] or match["b"] or match["c"])
        what = what[: match.start()] + what[match.end() :]
    verb = _OVER_VERB.search(what)
    over = _OVER.search(what, verb.end()) if verb else _OVER.search(what) if labelled else None
    if over:
        against.insert(0, over["o"])
        what = what[: over.start()] + what[over.end() :]
    if weak and not against:
        return []
    if why is None and against and ": " in against[-1]:  # "picked uv over pip-tools: faster resolution"
        against[-1], why = against[-1].split(": ", 1)
    found = [_item(what, "chosen", why), *(_item(option, "rejected", why) for option in against)]
    return [item for item in found if item]


def _clause(clause: str, listed: bool, heading: str | None) -> list[Item]:
    """The decisions one clause states (nothing when it states none)."""
    switched = _SWITCH.match(clause) or _INSTEAD.match(clause)
    if switched:
        parts = switched.groupdict()
        old = parts.get("y") or parts.get("y2") or parts.get("y3") or ""
        new, why = _split_reason(parts.get("x") or parts.get("x2") or parts.get("x3") or "", listed)
        found = (_item(new, "chosen", why), _item(old, "rejected", why))
        return [item for item in found if item]
    rejected = _REJECT.match(clause)
    if rejected:
        return _rejection(clause[rejected.end() :], listed)
    passive = _PASSIVE.match(clause)
    if passive and _PASSIVE_REST.match(passive["rest"]):  # (not "rejected by CI", "dropped when ...")
        why = re.sub(r"^(?:because|since|as|due to)\s+", "", passive["rest"].strip(" ()-—–,:."), flags=re.I)
        option = _item(passive["option"], "rejected", why or None)
        return [option] if option else []
    if _CHOOSE.match(clause):
        bare = _LABEL.sub("", clause)
        return _choice(bare, listed, weak=False, labelled=bare != clause)
    if heading == "rejected":
        return _rejection(clause, listed)
    if heading == "chosen":
        return _choice(clause, listed, weak=False, labelled=True)
    if _USE.match(clause):
        return _choice(clause, listed, weak=True)
    crossed = _X_NOT_Y.match(clause)
    if crossed and not _NOT_A_CHOICE.search(crossed["x"]):
        found = (_item(crossed["x"], "chosen", crossed["why"]), _item(crossed["y"], "rejected", crossed["why"]))
        return [item for item in found if item]
    return []


def _decisions(sentence: str, listed: bool, heading: str | None) -> list[Item]:
    """The decisions a sentence states, clause by clause (`;`): a clause that states none gives the one
    before it its reason ("going with httpx; requests lacks async"), or adds to the reason it gave."""
    found: list[Item] = []
    clauses = [c.strip() for c in sentence.split(";") if c.strip()]
    n = 0
    while n < len(clauses):
        items = _clause(clauses[n], listed, heading)
        more: list[str] = []
        while n + 1 < len(clauses) and not _clause(clauses[n + 1], listed, None):
            n += 1
            more.append(clauses[n])
        for item in items if more else ():
            why = "; ".join(more)
            item["reasoning"] = clip(f"{item['reasoning']}; {why}" if "reasoning" in item else why, MAX_REASON)
        found += items
        n += 1
    return found


def _question(sentence: str) -> str | None:
    marked = _QUESTION_MARK.match(sentence)
    if marked:
        return clip(marked.group(1), MAX_ITEM)
    if _UNSURE.search(sentence) or (
        sentence.endswith("?") and re.search(r"\b(whether|should we|which)\b", sentence, re.I)
    ):
        return None if _POLITE.match(sentence) else clip(sentence, MAX_ITEM)
    return None


def _add(out: dict[str, list[Any]], name: str, item: Any) -> None:
    """Add an item unless the turn already said it (whitespace, case and punctuation aside)."""
    items = out.setdefault(name, [])
    key = normal(item["decision"] + "|" + item["status"] if isinstance(item, dict) else item)
    if all(normal(old["decision"] + "|" + old["status"] if isinstance(old, dict) else old) != key for old in items):
        items.append(item)


def extract(text: str) -> dict[str, list[Any]]:
    """What one turn's prose decides, rejects, leaves open, leaves to do or resolves; only the
    kinds it states (a closing "thanks" gives {})."""
    out: dict[str, list[Any]] = {}
    heading: str | None = None  # what the bullets under a "Decisions:" (and like) heading are
    last: list[Item] = []  # the decisions of the sentence before
    for sentence, listed in parts(text):
        titled = _heading(sentence)
        if titled:
            heading = titled
            continue
        if not listed:
            heading = None
        under = heading if listed else None
        reason = _REASON_LINE.match(sentence)
        if reason and last:  # "Reason: ..." after a decision gives it its reason
            for item in last:
                item.setdefault("reasoning", clip(reason["why"], MAX_REASON))
            continue
        last = _decisions(sentence, listed, under if under in ("chosen", "rejected") else None)
        for item in last:
            _add(out, "decisions", item)
        question = clip(sentence, MAX_ITEM) if under == "questions" else _question(sentence)
        if question is not None:
            _add(out, "questions", question)
        todo = _TODO.match(sentence)
        if todo or under == "todos":
            _add(out, "todos_said", clip(todo.group(1) if todo else sentence, MAX_ITEM))
        resolved = _RESOLVED.match(sentence)
        if resolved:
            _add(out, "resolved", clip(resolved.group(1), MAX_ITEM))
    return {name: items[:MAX_KEEP] for name, items in out.items()}
