"""Tokenizer for the search index: words, their code-style parts, a light stemmer, stopwords.

`TaskReviewService`, `task_review_service` and `app/Services/TaskReview.php` all yield the
whole word and its parts (`task`, `review`, `service`), so a query can name either. The
stemmer is deliberately small and applied the same way to documents and queries: what
matters is that both sides agree (`caching`, `caches`, `cached` -> `cach`), not linguistics.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

_WORD = re.compile(r"\w+")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_VOWEL = re.compile(r"[aeiouy]")

STOPWORDS = frozenset(
    (
        "a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any", "are",
        "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can",
        "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from", "further", "had",
        "has", "have", "having", "he", "her", "here", "hers", "him", "his", "how", "i", "if", "in", "into",
        "is", "it", "its", "itself", "just", "me", "more", "most", "my", "no", "nor", "not", "now", "of", "off",
        "on", "once", "only", "or", "other", "our", "ours", "out", "over", "own", "same", "she", "should", "so",
        "some", "such", "than", "that", "the", "their", "theirs", "them", "then", "there", "these", "they",
        "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what",
        "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours",
    )
)


def stem(word: str) -> str:
    """A conservative suffix stripper: plurals, -ing, -ed, a final -e."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and not word.endswith("eed") and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            if _VOWEL.search(base):
                word = base[:-1] if len(base) > 3 and base[-1] == base[-2] and base[-1] not in "lsz" else base
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


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
    for raw in _WORD.findall(text):
        yield from word_terms(raw)


def tokenize(text: str) -> list[str]:
    return list(iter_tokens(text))


def query_terms(text: str) -> list[str]:
    """The distinct terms of a query, in order of first appearance."""
    return list(dict.fromkeys(iter_tokens(text)))
