"""Secret redaction: nothing that looks like a credential reaches the logs.

Every event passes through `scrub_items` before it is written (Store.append_many). Each string
in its data, at any depth, keys included, is scanned with the rules of `contextflow.core.secret_rules`:
whole private-key blocks; token formats (detect-secrets' maintained patterns and ones it lacks);
credentials known by their context (assignments, URL passwords, command lines, netrc, pgpass,
docker config, an AWS secret next to its key id or in any field of an event holding one, a
string under a credential-named key). Each rule scans in time linear in the text. Text is
scanned as stored and as `contextflow.core.text.clean` would show it, so a token split by a zero-width
character or an escape sequence is found too (and the cleaned text is stored). Public keys,
certificates and fingerprints pass. A match becomes `[REDACTED:<kind>]` and the event gains
`redacted: ["<kind> in <field>", ...]`, which the MCP server repeats in the tool reply.
`CONTEXTFLOW_SECRETS` picks the mode: `redact` (default), `refuse` (the write fails naming what
was found) or `off`.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

from contextflow.core import redactions
from contextflow.core.errors import InputError
from contextflow.core.secret_rules import (
    CREDENTIAL_FIELD,
    EVENT_RULES,
    WEAK_FIELD,
    Rule,
    credential_field_kind,
    needles,
    rules,
    tag_start,
    weak_field_kind,
)
from contextflow.core.settings import SECRETS_VARIABLE as ENV_VAR
from contextflow.core.settings import secrets_mode
from contextflow.core.text import clean, folded, map_strings, needs_cleaning

REDACTED_FIELD = "redacted"
MIN_GROUP_SECRET = 8
# an event's own names: never rewritten because a value elsewhere in it repeats them
IDENTITY_FIELDS = frozenset({"key", "project", "id", "session_id", "conversation_id", "agent", "turn_id"})


class Finding(NamedTuple):
    kind: str
    start: int
    end: int


_TRIM = " \t\r\n\"'=:"
_TRIM_CONTEXT = " \t\r\n"


def _secret_spans(match: re.Match[str], in_context: bool) -> list[tuple[int, int]]:
    """The groups when they hold the secret (context rules, assignment patterns), else the whole match.

    Some library patterns group only a prefix (`(glpat|gldt)-...`); a group that short is not
    the secret, so the whole match is taken instead.
    """
    groups = [match.span(g) for g in range(1, (match.re.groups or 0) + 1) if match.group(g)]
    if groups and (in_context or all(end - start >= MIN_GROUP_SECRET for start, end in groups)):
        return groups
    return [match.span()]


def _quoted(text: str, start: int) -> bool:
    return start > 0 and text[start - 1] in "\"'"


def _single_quoted_dollar(text: str, start: int, end: int) -> bool:
    """`'$ecret'` as written in a shell: single quotes expand nothing, so the `$` is the password's own
    and the value is judged without it (`${VAR}` and `$(cmd)` stay references: config files expand
    them even in single quotes)."""
    return (
        start > 0
        and text.startswith("'$", start - 1)
        and text.startswith("'", end)
        and text[start + 1 : start + 2] not in ("{", "(", "")
    )


@lru_cache(maxsize=1)
def _needle_index() -> tuple[tuple[Rule, ...], tuple[str, ...], dict[str, frozenset[int]], frozenset[int]]:
    """The rules, their needles, which rules each needle wakes, and the rules that always run."""
    ordered = rules()
    woken: dict[str, set[int]] = {}
    for n, rule in enumerate(ordered):
        for needle in rule.needles:
            woken.setdefault(needle, set()).add(n)
    always = frozenset(n for n, rule in enumerate(ordered) if not rule.needles)
    return ordered, tuple(woken), {needle: frozenset(at) for needle, at in woken.items()}, always


def _rules_for(text: str) -> list[Rule]:
    """The rules whose needles `text` holds (and those without any), in their order."""
    ordered, all_needles, woken, always = _needle_index()
    lowered = text.lower()
    chosen = set(always)
    for needle in all_needles:
        if needle in lowered:
            chosen |= woken[needle]
    return [ordered[n] for n in sorted(chosen)]


def find(text: str, also: Sequence[Rule] = ()) -> list[Finding]:
    """Non-overlapping secret spans in `text` as written, in order; `also` are rules run whatever the text holds."""
    spans: list[Finding] = []
    words: str | None = None
    for rule in (*_rules_for(text), *also):
        if rule.requires:  # every match holds one of them: without, the rule is not even compiled
            words = folded(text) if words is None else words
            if not any(word in words for word in rule.requires):
                continue
        if rule.shut(text):
            continue
        for match in rule.pattern.finditer(text):
            trim = _TRIM_CONTEXT if rule.in_context else _TRIM  # a context group is the secret exactly
            for start, end in _secret_spans(match, rule.in_context):
                while start < end and text[start] in trim:
                    start += 1
                while end > start and text[end - 1] in trim:
                    end -= 1
                if rule.in_context:  # a tag written right after a credential is kept, and never shields it
                    end = start + tag_start(text[start:end])
                if end - start < rule.min_length:
                    continue
                if rule.accept:
                    value = text[start + 1 : end] if _single_quoted_dollar(text, start, end) else text[start:end]
                    if not rule.accept(value, _quoted(text, start)):
                        continue
                spans.append(Finding(rule.kind, start, end))
    merged: list[Finding] = []
    for span in sorted(spans, key=lambda f: (f.start, -f.end)):
        if merged and span.start < merged[-1].end:  # overlapping: one finding, named by the first
            merged[-1] = merged[-1]._replace(end=max(span.end, merged[-1].end))
        else:
            merged.append(span)
    return merged


def _redacted(text: str, found: list[Finding]) -> str:
    pieces: list[str] = []
    at = 0
    for finding in found:
        pieces += [text[at : finding.start], f"[REDACTED:{finding.kind}]"]
        at = finding.end
    pieces.append(text[at:])
    return "".join(pieces)


def redact_text(text: str, also: Sequence[Rule] = ()) -> tuple[str, list[str]]:
    """`text` with every secret replaced, and the kinds that were found (in order, repeated).

    Secrets are looked for in the text as written and in what the output cleaner makes of it:
    a token split by a zero-width character or an escape sequence is whole once cleaned, so
    when the cleaned text holds one, the cleaned text (redacted) is what comes back.
    """
    result, kinds, _ = redact_values(text, also)
    return result, kinds


def redact_values(text: str, also: Sequence[Rule] = ()) -> tuple[str, list[str], dict[str, str]]:
    """`redact_text`, and the values it found (value -> kind) long enough to be looked for elsewhere."""
    found = find(text, also)
    values = {text[f.start : f.end]: f.kind for f in found}
    result = _redacted(text, found) if found else text
    kinds = [finding.kind for finding in found]
    if needs_cleaning(result):
        visible = clean(result)
        hidden = find(visible, also)
        if hidden:
            values.update({visible[f.start : f.end]: f.kind for f in hidden})
            result = _redacted(visible, hidden)
            kinds += [finding.kind for finding in hidden]
    if not kinds:
        return text, [], {}
    return result, kinds, {value: kind for value, kind in values.items() if _worth_looking_for(value)}


MIN_KNOWN = 6  # a value found secret is looked for elsewhere from this length on


def _worth_looking_for(value: str) -> bool:
    return len(value) >= MIN_KNOWN and "\n" not in value and not value.startswith("[REDACTED")


class Evidence:
    """Secrets found anywhere in a set of texts (one captured turn, one event), redacted wherever any
    of them repeats: `export API_TOKEN=...` in a command makes the same value in the reply a secret too.

    `learn` each text first (its redacted form is kept), then `safe` gives any text with the rules'
    findings and every learned value replaced. A value is matched whole: not inside a longer word."""

    def __init__(self, values: dict[str, str] | None = None) -> None:
        self.values: dict[str, str] = dict(values or {})
        self._redacted: dict[str, str] = {}
        self._pattern: re.Pattern[str] | None = None

    def learn_all(self, texts: Sequence[str]) -> None:
        """`learn` every text; one scan of them all when none holds anything (the common case: a pattern
        that matches in one text matches in them joined by newlines, as `scrub` relies on too)."""
        fresh = [text for text in dict.fromkeys(texts) if text and text not in self._redacted]
        joined = "\n".join(fresh)
        if not needs_cleaning(joined) and not find(joined):
            self._redacted.update((text, text) for text in fresh)
            return
        for text in fresh:
            self.learn(text)

    def learn(self, text: str) -> str:
        """`text` redacted by the rules; what they found is looked for in every text from now on."""
        done = self._redacted.get(text)
        if done is None:
            done, _, values = redact_values(text)
            self._redacted[text] = done
            if values.keys() - self.values.keys():
                self.values.update(values)
                self._pattern = None
        return done

    def safe(self, text: str) -> str:
        """`text` redacted by the rules and with every learned value replaced."""
        return self.repeated(self.learn(text))

    def repeated(self, text: str) -> str:
        """`text` with every learned value replaced (the rules are not run)."""
        if not self.values or not text:
            return text
        if self._pattern is None:
            self._pattern = re.compile("|".join(_whole(value) for value in sorted(self.values, key=len, reverse=True)))
        return self._pattern.sub(lambda match: f"[REDACTED:{self.values[match.group(0)]}]", text)


def _whole(value: str) -> str:
    """A pattern for `value` not inside a longer word."""
    before = "(?<![A-Za-z0-9])" if value[0].isalnum() else ""
    after = "(?![A-Za-z0-9])" if value[-1].isalnum() else ""
    return before + re.escape(value) + after


def mode(env: Mapping[str, str] | None = None) -> str:
    """`CONTEXTFLOW_SECRETS` of `env` (the process's environment when not given): redact, refuse or off."""
    return secrets_mode(os.environ if env is None else env)  # the settings of `env`, refused when not understood


# -- events --------------------------------------------------------------------------------

Path_ = tuple[str | int, ...]


class Leaf(NamedTuple):
    path: Path_  # to the value; for a key, to the value stored under it
    text: str
    is_key: bool


def _leaves(data: Any) -> Iterator[Leaf]:
    """Every string, value or key, with its path; iterative, so deep values cannot exhaust the stack."""
    stack: list[tuple[Path_, Any]] = [((), data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            yield Leaf(path, value, False)
        elif isinstance(value, dict):
            for key in value:
                if isinstance(key, str):
                    yield Leaf((*path, key), key, True)
            stack += [((*path, key), item) for key, item in reversed(value.items())]
        elif isinstance(value, list | tuple):
            stack += [((*path, index), item) for index, item in reversed(list(enumerate(value)))]


@lru_cache(maxsize=1024)
def _shown(part: str) -> str:
    """A key as it may appear in a field name: redacted, so the name never repeats a secret key."""
    return redact_text(part)[0]


def _field_name(path: Path_) -> str:
    name = ""
    for part in path:
        name += f"[{part}]" if isinstance(part, int) else (f".{_shown(part)}" if name else _shown(part))
    return name or "(value)"


def _set(data: Any, leaf: Leaf, new: str) -> None:
    """Set the value at `leaf.path` in `data` to `new`, or rename the key ending it (unique in its object, in place)."""
    node = data
    for part in leaf.path[:-1]:
        node = node[part]
    old = leaf.path[-1]
    if not leaf.is_key:
        node[old] = new
        return
    unique, n = new, 1
    while unique in node and unique != old:
        n += 1
        unique = f"{new} #{n}"
    renamed = {(unique if key == old else key): value for key, value in node.items()}
    node.clear()
    node.update(renamed)


def _field_kind(path: Path_, text: str) -> str | None:
    """The kind a value is redacted as by the name of its field: a credential name at any depth, a
    weak one (`key`, `auth`) below the top, whose fields are the event's own (a record's `key`)."""
    if not path or not isinstance(name := path[-1], str):
        return None
    return credential_field_kind(name, text) or (weak_field_kind(name, text) if len(path) > 1 else None)


def scrub(data: dict[str, Any], how: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """Event data with secrets redacted (or refused), and one 'kind in field' line per finding."""
    how = how or mode()
    if how == "off":
        return data, []
    leaves = [leaf for leaf in _leaves(data) if not (leaf.path and leaf.path[0] == REDACTED_FIELD)]
    by_field = {leaf.path: kind for leaf in leaves if not leaf.is_key and (kind := _field_kind(leaf.path, leaf.text))}
    dirty = [leaf.text for leaf in leaves if needs_cleaning(leaf.text)]
    shown = "\n".join(clean(leaf.text) for leaf in leaves)
    # rules whose trigger may sit in another field: each string is scanned with them too
    also = [rule for trigger, rule in EVENT_RULES if trigger.search(shown) or any(map(trigger.search, dirty))]
    if not by_field and not also and not find(shown) and not (dirty and find("\n".join(dirty))):
        return data, []  # the common case: one scan over all the text (two when some of it needs cleaning)
    notes: list[str] = []
    result = map_strings(data, str)  # a copy to redact in
    evidence = Evidence()  # a value found in one field is redacted where another field repeats it
    kept: list[Leaf] = []
    for leaf in [leaf for leaf in leaves if not leaf.is_key]:
        kind = by_field.get(leaf.path)
        if kind:
            cleaned, kinds = f"[REDACTED:{kind}]", [kind]
            evidence.values.update({leaf.text: kind} if _worth_looking_for(leaf.text) else {})
        else:
            cleaned, kinds, values = redact_values(leaf.text, also)
            evidence.values.update(values)
        if kinds:
            notes += [f"{found} in {_field_name(leaf.path)}" for found in dict.fromkeys(kinds)]
            _set(result, leaf, cleaned)
        else:
            kept.append(leaf)
    for leaf in kept if evidence.values else []:
        if len(leaf.path) == 1 and leaf.path[0] in IDENTITY_FIELDS:
            continue
        again = evidence.repeated(leaf.text)
        if again != leaf.text:
            notes.append(f"credential repeated in {_field_name(leaf.path)}")
            _set(result, leaf, again)
    # keys last, deepest first, so a rename never moves a path still to be visited
    for leaf in sorted((leaf for leaf in leaves if leaf.is_key), key=lambda leaf: -len(leaf.path)):
        cleaned, kinds = redact_text(leaf.text, also)
        if kinds:
            notes += [f"{found} in key of {_field_name(leaf.path[:-1])}" for found in dict.fromkeys(kinds)]
            _set(result, leaf, cleaned)
    if not notes:
        return data, []
    if how == "refuse":
        raise InputError(
            f"refused to store what looks like secrets: {', '.join(notes)}. Remove them, or set "
            f"{ENV_VAR}=redact to store a copy with them replaced by [REDACTED:...]"
        )
    previous = data.get(REDACTED_FIELD)
    result[REDACTED_FIELD] = ([str(item) for item in previous] if isinstance(previous, list) else []) + notes
    redactions.record(notes)
    return result, notes


@lru_cache(maxsize=4096)
def _credential_name(name: str) -> bool:
    """Whether a value stored under `name` may be judged by its field name (`credential_field_kind`)."""
    return CREDENTIAL_FIELD.fullmatch(name) is not None or WEAK_FIELD.fullmatch(name) is not None


def nothing_to_redact(data: Any) -> bool:
    """Whether `scrub` would find nothing in `data` (any JSON-like value), judged by one scan of all its
    strings; False when unsure (a string to clean, a credential-named field)."""
    text = _plain_text(data)
    return text is not None and not find(text)


def _plain_text(data: Any) -> str | None:
    """Every key and string of `data` joined by newlines, which `find` sees as `scrub` would; None when
    `scrub` must look closer anyway (a string to clean, a credential-named field, an unusual type)."""
    texts = _plain_strings(data)
    text = None if texts is None else "\n".join(texts)
    return None if text is None or needs_cleaning(text) else text


def _plain_strings(data: Any) -> list[str] | None:
    """Every key and string of `data` (`_plain_text` joins them), or None for a credential-named field or an
    unusual type. Exact type checks and strings added without a trip through the stack: this runs for every
    event of an import."""
    texts: list[str] = []
    add = texts.append
    stack: list[Any] = [data]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is dict:
            for key, item in value.items():
                if type(key) is str:
                    if type(item) is str:
                        if _credential_name(key) and (credential_field_kind(key, item) or weak_field_kind(key, item)):
                            return None
                        add(key)
                        add(item)
                        continue
                    add(key)
                stack.append(item)
        elif kind is list or kind is tuple:
            for item in value:
                if type(item) is str:
                    add(item)
                else:
                    stack.append(item)
        elif kind is str:
            add(value)
        elif isinstance(value, str | dict | list | tuple):  # a subclass: let scrub judge it
            return None
    return texts


@lru_cache(maxsize=1)
def _inner_needles() -> tuple[tuple[str, ...], dict[str, frozenset[str]]]:
    """Every needle, shortest first, and for each the other needles inside it."""
    every = needles()
    return tuple(sorted(every, key=len)), {n: frozenset(m for m in every if m != n and m in n) for n in every}


@lru_cache(maxsize=1)
def _across_lines() -> bool:
    """Whether a needle holds a newline (then a text's lines, or its strings, are not looked at apart)."""
    return any("\n" in needle for needle in _inner_needles()[0])


def _distinct_lines(text: str) -> str:
    """`text`'s distinct lines joined by newlines: it holds the same needles as `text` when no needle holds a
    newline (each is then inside one line), and an import's events repeat most of their lines (keys, tags)."""
    if _across_lines():
        return text
    return "\n".join(set(text.split("\n")))


def _present(lowered: str, among: Collection[str] | None = None) -> set[str]:
    """The needles (of `among`, default all) that `lowered` holds. Each is looked for with `in`, shortest
    first, except one holding a needle already looked for and not found: it cannot be there either."""
    shortest_first, inside = _inner_needles()
    found: set[str] = set()
    absent: set[str] = set()
    for needle in shortest_first if among is None else sorted(among, key=len):
        if absent and not absent.isdisjoint(inside.get(needle, ())):
            absent.add(needle)
        elif needle in lowered:
            found.add(needle)
        else:
            absent.add(needle)
    return found


BATCH_MIN = 16  # from this many events, one scan per chunk of them picks the few to scrub
CHUNK = 32  # events scanned together: a rule runs on a chunk only when one of its needles is in it


def _raw_spans(text: str, candidates: Collection[str] | None = None) -> list[tuple[int, int]]:
    """Where any rule's pattern matches `text`, before `find` trims, checks or merges anything;
    `candidates`: the needles that may be in it (the others are known to be absent)."""
    present = _present(text.lower(), candidates)
    spans: list[tuple[int, int]] = []
    words: str | None = None
    for rule in rules() if candidates is None else _wakeable(frozenset(candidates)):
        if rule.needles and present.isdisjoint(rule.needles):
            continue
        if rule.requires:  # every match holds one of them, as `find` checks: without, the rule cannot match
            words = folded(text) if words is None else words
            if not any(word in words for word in rule.requires):
                continue
        if not rule.shut(text):
            spans += [match.span() for match in rule.pattern.finditer(text)]
    return spans


@lru_cache(maxsize=64)
def _wakeable(candidates: frozenset[str]) -> tuple[Rule, ...]:
    """The rules that may run on a text holding no needle but `candidates`, in their order."""
    return tuple(rule for rule in rules() if not rule.needles or not candidates.isdisjoint(rule.needles))


def _touched(texts: list[str], candidates: Collection[str] | None = None) -> set[int]:
    """The indexes of `texts` that some rule's pattern touches when they are scanned joined by newlines."""
    starts: list[int] = []
    offset = 0
    for text in texts:
        starts.append(offset)
        offset += len(text) + 1
    touched: set[int] = set()
    for begin, end in _raw_spans("\n".join(texts), candidates):
        first = bisect.bisect_right(starts, begin) - 1
        last = bisect.bisect_right(starts, max(begin, end - 1)) - 1
        touched.update(range(max(first, 0), last + 1))
    return touched


def scrub_items(
    items: Sequence[tuple[str, dict[str, Any]]], how: str | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """The hook Store.append_many calls before anything is written.

    Many events at once (an import) are scanned in chunks: a chunk's text joined by newlines, as
    `scrub` joins one event's strings, and each rule whose needles the chunk holds run once over
    it. An event no pattern touches (not even with a match `find` would then reject) has nothing
    `scrub` would find and is stored as it is; the others (and any with a string to clean or a
    credential-named field) go through `scrub`. A pattern that matches within one event matches
    there in its chunk too: the chunk holds the event's needles, and the rules' edges are word
    boundaries and lookbehinds that a newline satisfies as a string's start does; a match that
    runs on into the next event touches both. The result is the same as scrubbing each event."""
    how = how or mode()
    if how == "off" or len(items) < BATCH_MIN:
        return [(kind, scrub(data, how)[0]) for kind, data in items]
    result = list(items)
    for index in suspects([data for _, data in items]):
        kind, data = items[index]
        result[index] = (kind, scrub(data, how)[0])
    return result


def suspects(values: Sequence[Any]) -> set[int]:
    """The indexes of `values` that may hold a secret or text to clean: the others come out of
    `scrub` (and of `redact_text` on each of their strings) unchanged. See `scrub_items`."""
    found: set[int] = set()
    plain: list[tuple[int, str]] = []
    distinct: set[str] = set()  # the strings of them all, once each (an import repeats its keys and tags)
    for index, value in enumerate(values):
        strings = _plain_strings(value)
        text = None if strings is None else "\n".join(strings)
        if text is None or needs_cleaning(text):
            found.add(index)
        else:
            plain.append((index, text))
            distinct.update(strings or ())
    # the needles any of them holds (a chunk holds no other): lowering never makes or takes a line break
    lines = "\n".join(text for _, text in plain) if _across_lines() else _distinct_lines("\n".join(distinct))
    candidates = frozenset(_present(lines.lower()))
    for start in range(0, len(plain), CHUNK):
        chunk = plain[start : start + CHUNK]
        found.update(chunk[at][0] for at in _touched([text for _, text in chunk], candidates))
    return found


# -- telling the caller --------------------------------------------------------------------


collect = redactions.collect  # the MCP server gathers them with `core.redactions` itself


def notice(redactions: list[str]) -> str:
    """A line for a tool reply saying what was redacted before storing."""
    if not redactions:
        return ""
    listed = ", ".join(dict.fromkeys(redactions))
    return (
        f"\n\nRedacted before storing (stored as [REDACTED:...]): {listed}. "
        f"Keep secrets out of shared memory; {ENV_VAR}=refuse makes such writes fail instead."
    )
