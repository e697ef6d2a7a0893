"""Patterns tried only on text holding a word every match holds (`Worded`, `Rule.requires`, the heading's
endings) find exactly what the bare patterns find: on hostile, generated and random text, with the
letters a case-insensitive pattern takes for ASCII ones (ſ, K, ı, İ) mixed in."""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Iterator

import pytest

from contextflow.capture import prose
from contextflow.core import secret_rules, secrets
from contextflow.core.text import Worded, folded
from tests.hostile import secret_corpus

FOLDS = {"s": "ſ", "k": "\u212a", "i": "ı", "I": "\u0130"}


def test_folded_holds_every_ascii_letter_a_case_insensitive_pattern_matches() -> None:
    letters = re.compile("[a-z]", re.I)
    for code in range(0x110000):
        char = chr(code)
        if letters.fullmatch(char):
            assert len(folded(char)) == 1 and re.fullmatch(folded(char), char, re.I), hex(code)
    assert folded("ſECRET \u212aEY İD ıd Ab") == "secret key id id ab"


def _fold_some(text: str, rng: random.Random) -> str:
    return "".join(FOLDS[c] if c in FOLDS and rng.random() < 0.2 else c for c in text)


def _mixed(words: list[str], rng: random.Random, glue: list[str], count: int) -> Iterator[str]:
    """Texts of words from the patterns themselves and glue between them, some letters swapped for
    the non-ASCII ones a case-insensitive pattern takes for them, some in upper case."""
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 9)):
            word = rng.choice(words)
            parts.append(word.upper() if rng.random() < 0.15 else word)
            parts.append(rng.choice(glue))
        text = "".join(parts)
        yield _fold_some(text, rng) if rng.random() < 0.4 else text


def _vocabulary(*sources: str) -> list[str]:
    return sorted({word for source in sources for word in re.findall(r"[A-Za-z_'-]{2,}", source)})


# -- prose ---------------------------------------------------------------------------------------

WORDED = {
    name: getattr(prose, name)
    for name in ("_REJECT", "_SWITCH", "_HEADING", "_FAVOUR", "_PASSIVE_REST", "_NOT_A_CHOICE", "_POLITE")
}
PROSE_GLUE = [" ", " ", " ", ", ", "; ", ": ", " - ", " — ", "  ", "\t", ". ", "## ", " (", ") ", "'", "-"]
PROSE_NOISE = [
    "x",
    "postgres",
    "sqlite",
    "the cache",
    "i",
    "we",
    "it",
    "redis",
    "because",
    "to",
    "of",
    "with",
    "didn't",
    "didnt",
    "won't",
    "wont",
    "shouldn't",
    "aren't",
    "we're",
    "i'm",
]


SUBJECTS = ["", "we ", "i ", "so, we ", "we've ", "after a long talk we ", "Finally "]
TAILS = [
    "",
    " use postgres",
    " go with redis",
    ": redis",
    " redis because it is slow",
    " redis to sqlite",
    " redis with sqlite",
    " redis in favor of sqlite",
]


def _clauses(worded: Worded, seed: int, count: int = 20000) -> Iterator[str]:
    """Clauses of the pattern's own literal runs ("switched", "from", "in favou") and other words."""
    rng = random.Random(seed)
    runs = sorted(set(re.findall(r"[a-z][a-z' ]*[a-z]", worded.source))) + PROSE_NOISE
    for subject, run, tail in itertools.product(SUBJECTS, runs, TAILS):  # each word where a clause says it
        yield f"{subject}{run}{tail}"
    for _ in range(count):
        parts = [rng.choice(runs) for _ in range(rng.randint(1, 6))]
        text = " ".join(parts) if rng.random() < 0.7 else "".join(p + rng.choice(PROSE_GLUE) for p in parts)
        text = text.upper() if rng.random() < 0.1 else text
        yield _fold_some(text, rng) if rng.random() < 0.3 else text


def _same(found: re.Match[str] | None, expected: re.Match[str] | None) -> bool:
    if found is None or expected is None:
        return found is expected
    return found.span() == expected.span() and found.groupdict() == expected.groupdict()


@pytest.mark.parametrize("name", sorted(WORDED))
def test_a_worded_prose_pattern_matches_what_the_bare_pattern_matches(name: str) -> None:
    worded = WORDED[name]
    bare = re.compile(worded.source, worded.flags)
    matched = 0
    for clause in _clauses(worded, seed=len(name)):
        expected, found = bare.match(clause), bare.search(clause)
        matched += found is not None
        assert _same(worded.match(clause), expected), clause
        assert _same(worded.search(clause), found), clause
    assert matched > 20  # the generated clauses reach the pattern, not only its misses


def test_the_heading_check_reads_every_sentence_as_the_bare_pattern_does() -> None:
    bare = re.compile(prose._HEADING.source, prose._HEADING.flags)
    rng = random.Random(7)
    headings = [
        f"{'#' * rng.randint(0, 7)}{rng.choice(['', ' '])}{words}{rng.choice(['', ':', ' :', ' '])}"
        for words in _heading_words()
    ]
    sentences = [*headings, *(_fold_some(h.upper(), rng) for h in headings), *_clauses(prose._HEADING, seed=3)]
    titled = 0
    for sentence in sentences:
        expected = bare.match(sentence)
        titled += expected is not None
        assert prose._heading(sentence) == (expected.lastgroup if expected else None), sentence
    assert titled > len(headings)


def _heading_words() -> list[str]:
    """Headings of up to four of the heading pattern's words, each kind's words spelled out."""
    words = [*sorted(set(re.findall(r"[a-z]+", prose._HEADING.source))), "follow-up", "follow-ups"]
    phrases = [" ".join(p) for n in (1, 2, 3) for p in itertools.product(words, repeat=n)]
    phrases += ["alternatives considered and rejected", "what we ruled out", "what i ruled out"]
    found = [phrase for phrase in phrases if prose._HEADING.pattern.fullmatch(phrase)]
    assert len(found) > 40
    return found


# -- secrets -------------------------------------------------------------------------------------

SECRET_GLUE = [
    " ",
    "=",
    ": ",
    ":",
    '"',
    "'",
    "]",
    "[",
    " = ",
    "\t",
    "\n",
    "_",
    "-",
    ".",
    "@",
    "/",
    "//",
    "=>",
    " -p",
    " -u ",
]


def _values(rng: random.Random) -> list[str]:
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    return [
        "".join(rng.choice(alphabet + "_-") for _ in range(44)),
        "".join(rng.choice("0123456789abcdef") for _ in range(64)),
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(24)),
        "".join(rng.choice(alphabet + "/+") for _ in range(40)),
        "Tr0ub4dor&3xQ9",
        "hunter2x!",
        "AKIAABCDEFGHIJKLMNOP",
        "app:s3cr3tQ9z@db.internal",
        "https://user:Q9zK7wQ9zK7w@host.cloudant.com",
        "0123456789abcdef0123456789abcdef",
    ]


def _secret_texts(seed: int, count: int) -> Iterator[str]:
    rng = random.Random(seed)
    requiring = [rule for rule in secret_rules.rules() if rule.requires]
    words = _vocabulary(*(rule.source for rule in requiring), *(w for rule in requiring for w in rule.requires))
    words += [w.strip() for rule in requiring for w in rule.requires] + ["aws", "machine", "login", "curl", "is", "was"]
    values = _values(rng)
    yield from _mixed(words + values * 6, rng, SECRET_GLUE, count)


def _hostile_texts() -> Iterator[str]:
    for row in secret_corpus.credential_texts():
        yield row[0]
    for template in secret_corpus.TEMPLATES.values():
        yield template.format(v="Q9zK7wQ9zK7wQ9zK7w")


def test_every_match_of_a_requiring_rule_holds_one_of_its_words() -> None:
    """The proof each `requires` rests on, checked: the words are in the text of every match."""
    for text in [*_hostile_texts(), *_secret_texts(seed=11, count=2500)]:
        for rule in secret_rules.rules():
            if rule.requires:
                for match in rule.pattern.finditer(text):
                    near = folded(text[max(0, match.start() - 1) : match.end()])  # `(?<=_)pass` reads one back
                    assert any(word in near for word in rule.requires), (rule.kind, rule.source, text)


def test_the_requires_check_finds_every_secret_the_bare_rules_find(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [*_hostile_texts(), *_secret_texts(seed=5, count=2500)]
    found = [secrets.find(text) for text in texts]
    ordered, *index = secrets._needle_index()
    bare = tuple(rule._replace(requires=()) for rule in ordered)
    monkeypatch.setattr(secrets, "_needle_index", lambda: (bare, *index))
    assert [secrets.find(text) for text in texts] == found
    assert sum(map(bool, found)) > 100  # the generated texts hold secrets, not only misses


def test_the_library_rules_proven_are_those_installed() -> None:
    proven = [rule for rule in secret_rules.rules() if rule.source in secret_rules.LIBRARY_REQUIRES]
    assert len(proven) == len(secret_rules.LIBRARY_REQUIRES)  # another library version: update the words


NAME_GLUE = ["", "", "_", "-", ".", " "]
REFERENCE_GLUE = ["", "$", "${", "}", "$(", ")", "`", "%", "%(", "{", "{{", "}}", "<", ">", "[", "]", ":-", " ", "."]


@pytest.mark.parametrize(
    ("name", "glue"), [("CREDENTIAL_FIELD", NAME_GLUE), ("WEAK_FIELD", NAME_GLUE), ("REFERENCE", REFERENCE_GLUE)]
)
def test_a_name_or_value_reads_as_the_bare_pattern_reads_it(name: str, glue: list[str]) -> None:
    worded: Worded = getattr(secret_rules, name)
    bare = re.compile(worded.source, worded.flags)
    rng = random.Random(name)
    words = [*_vocabulary(worded.source), "db", "cache", "user", "x1", "PG", "REDISCLI", "s", "d", "r", "DB_PASS"]
    values = [*_mixed(words, rng, glue, 6000), "auth", "PGPASSWORD", "db_pass", "cache_key"]
    values += [head + word + tail for head in glue for word in words[:20] for tail in glue]
    matched = 0
    for value in values:
        expected = bare.fullmatch(value)
        matched += expected is not None
        assert _same(worded.fullmatch(value), expected), value
    assert matched > 100
