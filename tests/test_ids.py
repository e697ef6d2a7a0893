"""Ids and the one prefix resolver every id argument goes through."""

import pytest

from contextflow.core.errors import InputError, NotFoundError
from contextflow.core.ids import ALPHABET, ID_LENGTH, derived_id, new_id, resolve_prefix

KNOWN = ["ab12", "ab34", "abc5", "cd00"]


def test_new_ids_are_long_random_and_typeable():
    made = {new_id() for _ in range(200)}
    assert len(made) == 200
    assert all(len(i) == ID_LENGTH and set(i) <= set(ALPHABET) for i in made)


@pytest.mark.parametrize("known", [KNOWN, set(KNOWN), dict.fromkeys(KNOWN).keys()])
def test_a_unique_prefix_resolves_from_a_sorted_list_a_set_or_dict_keys(known):
    assert resolve_prefix("cd", known) == "cd00"
    assert resolve_prefix(" ABC ", known) == "abc5"


@pytest.mark.parametrize("known", [KNOWN, set(KNOWN)])
def test_an_ambiguous_prefix_names_the_candidates_and_asks_for_more(known):
    with pytest.raises(InputError, match=r"thread id prefix 'ab' is ambiguous \(ab12, ab34, abc5, \.\.\.\)"):
        resolve_prefix("ab", known, "thread id")


@pytest.mark.parametrize("known", [["ab", "abc"], {"ab", "abc"}])
def test_an_exact_id_wins_over_longer_ids_it_prefixes(known):
    assert resolve_prefix("ab", known) == "ab"


def test_an_unknown_prefix_says_how_to_see_the_ids_that_exist():
    with pytest.raises(NotFoundError, match=r"^no node id starts with 'zz'; call graph_list$"):
        resolve_prefix("zz", set(KNOWN), "node id", "call graph_list")
    with pytest.raises(NotFoundError, match="list them to see the ids that exist"):
        resolve_prefix("zz", [])


def test_an_empty_prefix_is_refused():
    with pytest.raises(InputError, match="node id is empty: pass the node id or a unique prefix of it"):
        resolve_prefix("  ", KNOWN, "node id")


def test_derived_ids_are_a_function_of_their_parts_and_look_like_any_other_id():
    one = derived_id("server-memory", "Alice")
    assert one == derived_id("server-memory", "Alice") and len(one) == ID_LENGTH and set(one) <= set(ALPHABET)
    others = {derived_id("server-memory", "alice"), derived_id("server-memoryAlice"), derived_id("beads", "Alice")}
    assert len({one, *others}) == 4


def test_a_derived_id_never_changes_between_versions():
    """An import recognises what an earlier contextflow imported only while the ids stay the same."""
    assert derived_id("server-memory", "Alice") == "47ds6q6j3xr0ngsw"


def _spelled_one_pair_at_a_time(raw: bytes) -> str:
    """The spelling as it was first written (a loop over 10-bit shifts): the oracle `_spell` must equal."""
    number = int.from_bytes(raw, "big")
    pairs = [first + second for first in ALPHABET for second in ALPHABET]
    return "".join(pairs[(number >> shift) & 1023] for shift in range(70, -1, -10))


def test_ids_are_spelled_as_base32_of_their_bits_whatever_the_bits() -> None:
    """Every id ever derived must stay the same: the spelling equals the first one and base64's base32."""
    import base64
    import random

    from contextflow.core.ids import _spell

    standard = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", ALPHABET.encode())
    picked = random.Random(41)
    edges = [bytes(10), b"\xff" * 10, b"\x80" + bytes(9), bytes(9) + b"\x01"]
    for raw in edges + [picked.randbytes(10) for _ in range(20_000)]:
        assert _spell(raw) == _spelled_one_pair_at_a_time(raw) == base64.b32encode(raw).translate(standard).decode()
