"""Ids: random, unique across machines without coordination, short to type by prefix.

An id is 80 bits written as 16 Crockford base32 characters (lower case). `new_id` draws the bits
at random; `derived_id` takes them from a hash of its parts, so something imported twice (the same
item of the same source) gets the same id both times and the second copy is recognised.
"""

from __future__ import annotations

import bisect
import itertools
import os
from collections.abc import Collection

from contextflow.core import hashing
from contextflow.core.errors import InputError, NotFoundError

ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case
ID_LENGTH = 16  # 80 random bits
_SHOWN = 5  # candidates named in an "ambiguous" error


_ID_BYTES = ID_LENGTH * 5 // 8
_PAIRS = [first + second for first in ALPHABET for second in ALPHABET]  # 10 bits -> two characters


def _spell(raw: bytes) -> str:
    """`raw` (10 bytes) in base32, most significant bits first (what base64.b32encode spells, in
    ALPHABET). Unrolled: every import derives three ids a node."""
    n = int.from_bytes(raw, "big")
    pairs = _PAIRS
    return (
        f"{pairs[n >> 70]}{pairs[n >> 60 & 1023]}{pairs[n >> 50 & 1023]}{pairs[n >> 40 & 1023]}"
        f"{pairs[n >> 30 & 1023]}{pairs[n >> 20 & 1023]}{pairs[n >> 10 & 1023]}{pairs[n & 1023]}"
    )


def new_id() -> str:
    return _spell(os.urandom(_ID_BYTES))  # (what secrets.token_bytes draws, without importing secrets)


def derived_id(*parts: str) -> str:
    """An id that is a function of `parts` (e.g. a format, a source's item key): the same parts give the same id."""
    digest = _DERIVING.copy()  # (cheaper than a new hash told its size and person each time)
    digest.update("\x1f".join(parts).encode())
    return _spell(digest.digest())


_DERIVING = hashing.blake2b(digest_size=_ID_BYTES, person=b"contextflow-id")


def _starting_with(wanted: str, known: Collection[str]) -> list[str]:
    """Up to _SHOWN + 1 known ids starting with `wanted`, in order: by bisection when `known`
    is a sorted list, else by one scan (never a sort of everything)."""
    if isinstance(known, list):
        start = bisect.bisect_left(known, wanted)
        return list(itertools.takewhile(lambda found: found.startswith(wanted), known[start : start + _SHOWN + 1]))
    return sorted(candidate for candidate in known if candidate.startswith(wanted))[: _SHOWN + 1]


def resolve_prefix(
    prefix: str, known: Collection[str], what: str = "id", hint: str = "list them to see the ids that exist"
) -> str:
    """The one known id (a sorted list or a set/dict view) that is `prefix` or starts with it, as git
    does for commit ids; an error when it is empty, matches none (ending with `hint`) or several."""
    wanted = prefix.strip().lower()
    if not wanted:
        raise InputError(f"{what} is empty: pass the {what} or a unique prefix of it")
    if not isinstance(known, list) and wanted in known:
        return wanted
    matches = _starting_with(wanted, known)
    if not matches:
        raise NotFoundError(f"no {what} starts with {prefix!r}; {hint}")
    if len(matches) > 1 and matches[0] != wanted:
        shown = ", ".join(matches[:_SHOWN])
        raise InputError(f"{what} prefix {prefix!r} is ambiguous ({shown}, ...): type more characters")
    return matches[0]
