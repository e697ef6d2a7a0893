"""Ids: random, unique across machines without coordination, short to type by prefix."""

from __future__ import annotations

import bisect
import secrets
from collections.abc import Iterable

from contextflow.errors import InputError, NotFoundError

ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case
ID_LENGTH = 16  # 80 random bits


def new_id() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(ID_LENGTH))


def resolve_prefix(prefix: str, known: Iterable[str], what: str = "id") -> str:
    """Return the one known id that starts with `prefix`, as git does for commit ids."""
    wanted = prefix.strip().lower()
    if not wanted:
        raise InputError(f"{what} is empty: pass the {what} or a unique prefix of it")
    ordered = known if isinstance(known, list) else sorted(known)
    start = bisect.bisect_left(ordered, wanted)
    matches: list[str] = []
    for candidate in ordered[start:]:
        if not candidate.startswith(wanted):
            break
        matches.append(candidate)
        if len(matches) > 5:
            break
    if not matches:
        raise NotFoundError(f"no {what} starts with {prefix!r}; list them to see the ids that exist")
    if len(matches) > 1 and wanted not in matches:
        shown = ", ".join(matches[:5])
        raise InputError(f"{what} prefix {prefix!r} is ambiguous ({shown}, ...): type more characters")
    return wanted if wanted in matches else matches[0]
