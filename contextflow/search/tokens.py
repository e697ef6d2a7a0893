"""Tokenizer for the search index: words, their code-style parts, a stemmer, stopwords.

`TaskReviewService`, `task_review_service` and `app/Services/TaskReview.php` all yield the
whole word and its parts (`task`, `review`, `service`), so a query can name either. ASCII words
are stemmed (Snowball English, PyStemmer) alike in documents and queries: `rejected`/`rejection`
-> `reject`, `caching`/`caches` -> `cach`; other words are kept whole. `STEMMER` names the
algorithm and version: it is the search view's version, so another stemmer's index is never reused.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from itertools import chain

import Stemmer

from contextflow.core import regexes

WORD = regexes.compile(r"\w+")
_CAMEL = regexes.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_ENGLISH = Stemmer.Stemmer("english")
STEMMER = f"snowball-english/pystemmer-{Stemmer.version()}"

STOPWORDS = frozenset(
    (
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
    )
)


def stem(word: str) -> str:
    """The Snowball English stem of a lower-case ASCII word; any other word unchanged."""
    return str(_ENGLISH.stemWord(word)) if word.isascii() and word.isalpha() else word


def _parts(word: str) -> list[str]:
    """`TaskReview_v2` -> task, review, v, 2; non-ASCII words split only at underscores."""
    found: list[str] = []
    for piece in word.split("_"):
        if piece.isascii():
            found += _CAMEL.findall(piece)
        elif piece:
            found.append(piece)
    return [part.lower() for part in found]


def _keep(token: str) -> bool:
    return len(token) > 1 and token not in STOPWORDS


@lru_cache(maxsize=1 << 18)
def word_terms(raw: str) -> tuple[str, ...]:
    """The index terms of one word (memoized: text reuses a small vocabulary)."""
    parts = _parts(raw)
    terms = [stem(part) for part in parts if _keep(part)]
    whole = raw.lower().replace("_", "")
    if len(parts) > 1 and _keep(whole):
        terms.insert(0, whole)
    return tuple(terms)


def iter_tokens(text: str) -> Iterator[str]:
    """Every index term of `text`, in order, repeats included."""
    return chain.from_iterable(map(word_terms, WORD.findall(text)))


def query_terms(text: str) -> list[str]:
    """The distinct terms of a query, in order of first appearance."""
    return list(dict.fromkeys(iter_tokens(text)))


class _TermStrings(dict[str, str]):
    """A word -> its index terms, each followed by a space, memoized (bounded)."""

    def __missing__(self, word: str) -> str:
        if len(self) > 1 << 18:
            self.clear()
        found = self[word] = "".join(term + " " for term in word_terms(word))
        return found


TERM_STRINGS = _TermStrings()


def term_string(words: list[str]) -> str:
    """The index terms of `words`, in order, each followed by a space."""
    return "".join(map(TERM_STRINGS.__getitem__, words))
