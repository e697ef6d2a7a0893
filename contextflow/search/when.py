"""Dates in queries and time words in documents, for the ranking's date lever (`search/ranking.py`).

- `named_dates(query)`: the months and years a query names (`March 2026`, `in March`, `2026`,
  `2026-03`), as (year or None, month or None) pairs; an entry's date matches when its creation
  month and year agree with one of them. `may` counts as a month only when written `May` or next to
  a number, and abbreviations (`Mar`, `Sept`) only next to a number.
- `asks_when(query)`: the query asks for a time (`when`, `what date`, `which week`, `deadline`, ...).
- `has_time_words(text)`: the text states a time: a month or weekday name, a date, a clock time, an
  ordinal day (`the 18th`), `today`, `tomorrow`, `next week`, `end of May` and the like.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from contextflow.core import regexes
from contextflow.search.tokens import WORD, stem

MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        1,
    )
    for name in names
}
FULL_MONTHS = frozenset(name for name in MONTHS if len(name) > 4 or name in ("may", "june", "july"))
_DATE_TERMS = frozenset(stem(name) for name in MONTHS if name in FULL_MONTHS)
_TOKEN = regexes.compile(r"\d{4}-\d{2}(?:-\d{2})?|[A-Za-z]+|\d+")
_YEAR = regexes.compile(r"(?:19|20)\d\d")
_ISO = regexes.compile(r"((?:19|20)\d\d)-(0[1-9]|1[0-2])(?:-\d\d)?")

_WHEN_WORDS = frozenset(("when", "date", "dates", "deadline", "due", "scheduled", "schedule", "ago"))
_WHEN_PHRASES = regexes.compile(r"\b(?:what|which)\s+(?:day|week|month|year|time)\b|\bhow\s+long\s+ago\b", re.I)
_MONTH_NAMES = "|".join(sorted((name for name in MONTHS if name in FULL_MONTHS and name != "may"), key=len))
_TIME_TOKENS = frozenset(
    [name for name in FULL_MONTHS if name != "may"]
    + ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
    + ["today", "tonight", "tomorrow", "yesterday", "weekend", "q1", "q2", "q3", "q4"]
)
_PHRASE_STARTS = frozenset(("next", "last", "this", "end"))
_ORDINAL = regexes.compile(r"\d{1,2}(?:st|nd|rd|th|am|pm)")
_PHRASES = regexes.compile(
    r"\b(?:next|last|this)\s+(?:week|month|year|quarter|sprint)\b"
    r"|\bend\s+of\s+(?:the\s+)?(?:day|week|month|year|quarter|sprint|may|" + _MONTH_NAMES + r")\b"
)
_NUMERIC = regexes.compile(r"\d(?:\d?:\d\d|\d?\s[aApP][mM]\b|\d{3}-\d\d|\d?/\d)")  # 9:30, 3 pm, 2026-03, 3/14


class _TimeWords(dict[str, int]):
    """A word -> 1 when it states a time by itself, 2 when it may start a phrase that does, 3 when it may start
    a clock time or a date in digits (it holds a character other than a letter: `_NUMERIC` starts at a digit of
    a word), else 0."""

    def __missing__(self, word: str) -> int:
        if len(self) > 1 << 16:
            self.clear()
        lower = word.lower()
        if lower in _TIME_TOKENS or word == "May" or _ORDINAL.fullmatch(lower):  # "may" the verb is not a time
            found = 1
        else:
            found = 2 if lower in _PHRASE_STARTS else 0 if lower.isalpha() else 3
        self[word] = found
        return found


_TIME_WORDS = _TimeWords()


def named_dates(query: str) -> tuple[tuple[int | None, int | None], ...]:
    """The (year, month) pairs a query names; None for a part it leaves open. Empty: no date named."""
    tokens = _TOKEN.findall(query)
    found: list[tuple[int | None, int | None]] = []
    used_years: set[int] = set()
    for n, token in enumerate(tokens):
        iso = _ISO.fullmatch(token)
        if iso:
            found.append((int(iso.group(1)), int(iso.group(2))))
            continue
        month = MONTHS.get(token.lower())
        if month is None:
            continue
        near = [t for t in tokens[max(0, n - 1) : n + 3] if t.isdigit()]
        if token.lower() not in FULL_MONTHS and not near:
            continue  # "mar", "sept": only next to a number
        if token.lower() == "may" and not (near or token == "May"):
            continue  # the verb
        year = next((int(t) for t in tokens[n + 1 : n + 3] if _YEAR.fullmatch(t)), None)
        if year is not None:
            used_years.add(year)
        found.append((year, month))
    for token in tokens:
        if _YEAR.fullmatch(token) and int(token) not in used_years:
            found.append((int(token), None))
    return tuple(dict.fromkeys(found))


def date_matches(at_ms: int, dates: tuple[tuple[int | None, int | None], ...]) -> bool:
    """Whether a time (ms) falls in one of the named months or years (UTC)."""
    moment = datetime.fromtimestamp(at_ms / 1000, UTC)
    return any(
        (year is None or year == moment.year) and (month is None or month == moment.month) for year, month in dates
    )


def month_spans(dates: tuple[tuple[int | None, int | None], ...], now_ms: int) -> list[tuple[int, int]]:
    """The named dates as [start, end) ms spans, for an index range query: a month without a year is
    taken in the last two years up to now."""
    now = datetime.fromtimestamp(now_ms / 1000, UTC)
    spans = []
    for year, month in dates:
        years = [year] if year is not None else [now.year, now.year - 1]
        for y in years:
            if month is None:
                spans.append((_ms(y, 1), _ms(y + 1, 1)))
            else:
                spans.append((_ms(y, month), _ms(y + (month == 12), month % 12 + 1)))
    return spans


def _ms(year: int, month: int) -> int:
    return int(datetime(year, month, 1, tzinfo=UTC).timestamp() * 1000)


def asks_when(query: str) -> bool:
    return bool(_WHEN_WORDS & {word.lower() for word in _TOKEN.findall(query)} or _WHEN_PHRASES.search(query))


def has_time_words(text: str, words: list[str] | None = None) -> bool:
    """Whether the text states a time; `words` are its words (`tokens.WORD`) when the caller has them."""
    flags = set(map(_TIME_WORDS.__getitem__, WORD.findall(text) if words is None else words))
    if 1 in flags:
        return True
    if 2 in flags and _PHRASES.search(text.lower()):
        return True
    return 3 in flags and _NUMERIC.search(text) is not None


def is_date_word(term: str) -> bool:
    """A month name (as the tokenizer stems it) or a year."""
    return term in _DATE_TERMS or _YEAR.fullmatch(term) is not None
