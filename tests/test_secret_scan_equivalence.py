"""The batch secret scan picks exactly the events it picked before it was made faster.

`suspects` chooses which events of an import `scrub` looks at; an event it misses is stored as it is, so
a needle it fails to see is a rule that does not run and a secret stored. The needles are now looked
for shortest first, and one holding a needle already found absent is not searched (`secrets._present`).
Here the selection as first written (kept below as the oracle) and the current one run side by side
over the hostile corpora and random texts of needles (inside and overlapping one another, in other
cases, beside non-ASCII letters whose lower case is ASCII): the same suspects, the same stored items."""

from __future__ import annotations

import bisect
import random
from collections.abc import Collection, Iterator, Sequence
from typing import Any

import pytest

from contextflow.core import secrets
from contextflow.core.secret_rules import needles, rules
from tests.hostile import scan_inputs, secret_corpus, secret_kinds

# -- the selection as first written: the oracle --------------------------------------------------


def _old_raw_spans(text: str, candidates: Collection[str] | None = None) -> list[tuple[int, int]]:
    lowered = text.lower()
    present = {needle for needle in (needles() if candidates is None else candidates) if needle in lowered}
    spans: list[tuple[int, int]] = []
    for rule in rules():
        if rule.needles and present.isdisjoint(rule.needles):
            continue
        spans += [match.span() for match in rule.pattern.finditer(text)]
    return spans


def _old_touched(texts: list[str], candidates: Collection[str] | None = None) -> set[int]:
    starts: list[int] = []
    offset = 0
    for text in texts:
        starts.append(offset)
        offset += len(text) + 1
    touched: set[int] = set()
    for begin, end in _old_raw_spans("\n".join(texts), candidates):
        first = bisect.bisect_right(starts, begin) - 1
        last = bisect.bisect_right(starts, max(begin, end - 1)) - 1
        touched.update(range(max(first, 0), last + 1))
    return touched


def old_suspects(values: Sequence[Any]) -> set[int]:
    texts = [secrets._plain_text(value) for value in values]
    found = {index for index, text in enumerate(texts) if text is None}
    plain = [(index, text) for index, text in enumerate(texts) if text is not None]
    everywhere = "\n".join(text for _, text in plain).lower()
    candidates = [needle for needle in needles() if needle in everywhere]
    for start in range(0, len(plain), secrets.CHUNK):
        chunk = plain[start : start + secrets.CHUNK]
        found.update(chunk[at][0] for at in _old_touched([text for _, text in chunk], candidates))
    return found


def old_scrub_items(items: Sequence[tuple[str, dict[str, Any]]], how: str) -> list[tuple[str, dict[str, Any]]]:
    result = list(items)
    for index in old_suspects([data for _, data in items]):
        kind, data = items[index]
        result[index] = (kind, secrets.scrub(data, how)[0])
    return result


# -- texts --------------------------------------------------------------------------------------

# letters whose lower case is (or holds) ASCII, and others that change length or context when lowered
ODD = ("\u212a", "\u0130", "\u017f", "\u00df", "\u03a3", "\u1e9e", "\ufb01", "\u00e9", "\u6771", "\u200b", "\n", " ")


def _cased(rng: random.Random, text: str) -> str:
    return "".join(c.upper() if rng.random() < 0.3 else c for c in text)


def random_texts(seed: int, count: int) -> Iterator[str]:
    """Needles side by side, one inside another, overlapping (the end of one the start of the next), cut
    short, in mixed case, between odd letters and ordinary words."""
    rng = random.Random(seed)
    every = sorted(needles())
    for _ in range(count):
        parts: list[str] = []
        for _ in range(rng.randint(1, 8)):
            needle = rng.choice(every)
            pick = rng.random()
            if pick < 0.25 and parts:  # overlap the previous part's end
                tail = parts[-1][-rng.randint(1, max(1, len(parts[-1]))) :]
                parts.append(tail + needle)
            elif pick < 0.4:
                parts.append(needle[: rng.randint(0, len(needle))])  # a needle cut short
            elif pick < 0.55:
                parts.append(rng.choice(ODD) + needle + rng.choice(ODD))
            else:
                parts.append(needle)
            if rng.random() < 0.3:
                parts.append(rng.choice(("payments ", "x", "=", "://u:", "ab12CD34ef56GH78", "-----")))
        text = "".join(parts)
        yield _cased(rng, text) if rng.random() < 0.5 else text


def corpus_texts() -> Iterator[str]:
    for *_, text in secret_corpus.credential_texts():
        yield text
    yield secret_corpus.docker_auth()
    for kind, value in secret_kinds.values():
        for _, text in secret_kinds.forms(kind, value):
            yield text
    for rule in rules():
        yield from scan_inputs.triggers(rule)
        for _, make in list(scan_inputs.inputs(rule))[::9]:
            yield make(60)


def _events(texts: list[str], rng: random.Random) -> list[tuple[str, dict[str, Any]]]:
    """Events holding the texts in the shapes imports write (content, a field, a list, a key)."""
    events: list[tuple[str, dict[str, Any]]] = []
    for n, text in enumerate(texts):
        shape = rng.randrange(4)
        if shape == 0:
            data: dict[str, Any] = {"content": text}
        elif shape == 1:
            data = {"content": f"item {n}", "metadata": {"name": text, "n": n}}
        elif shape == 2:
            data = {"content": f"item {n}", "tags": ["a", text]}
        else:
            data = {"content": f"item {n}", "metadata": {"k" + str(n % 5): [text, {"deep": text[::-1]}]}}
        events.append(("graph.node", data))
    return events


# -- the two side by side -----------------------------------------------------------------------


def test_the_needles_found_are_those_searched_one_by_one() -> None:
    every = needles()
    for text in [*corpus_texts(), *random_texts(1, 20_000)]:
        lowered = text.lower()
        assert secrets._present(lowered) == {n for n in every if n in lowered}, text
        among = [n for n in every if len(n) % 2 == len(text) % 2]  # a part of them, as a chunk is given
        assert secrets._present(lowered, among) == {n for n in among if n in lowered}, text


def test_the_distinct_lines_of_a_batch_hold_the_needles_the_batch_holds() -> None:
    every = needles()
    texts = [*corpus_texts(), *random_texts(5, 4_000)]
    rng = random.Random(6)
    for start in range(0, len(texts), 50):
        batch = texts[start : start + 50]
        joined = "\n".join(batch + rng.sample(batch, len(batch) // 2)).lower()  # lines seen twice
        assert secrets._present(secrets._distinct_lines(joined)) == {n for n in every if n in joined}


def _batches(texts: list[str], seed: int) -> Iterator[list[tuple[str, dict[str, Any]]]]:
    rng = random.Random(seed)
    rng.shuffle(texts)
    plain = [f"ordinary text {n} about payments and the ledger" for n in range(len(texts))]
    mixed = [text for pair in zip(texts, plain, strict=True) for text in pair]
    for start in range(0, len(mixed), 500):
        yield _events(mixed[start : start + 500], rng)


@pytest.mark.parametrize("source", ["corpora", "random"])
def test_the_events_picked_and_stored_are_the_same_as_before(source: str) -> None:
    texts = list(corpus_texts()) if source == "corpora" else list(random_texts(2, 6_000))
    for events in _batches(texts, 3):
        values = [data for _, data in events]
        picked = secrets.suspects(values)
        assert picked == old_suspects(values)
        assert secrets.scrub_items(events, "redact") == old_scrub_items(events, "redact")


def test_the_oracle_sees_a_secret_the_scan_must_pick() -> None:
    """A check of the check: the events holding credentials are among those picked."""
    events = _events([text for *_, text in secret_corpus.credential_texts()][:40] + ["plain"] * 40, random.Random(4))
    picked = old_suspects([data for _, data in events])
    assert set(range(40)) <= picked and secrets.suspects([data for _, data in events]) == picked


GATED_EXAMPLES = (
    "db.example.com:5432:shop:app:s3cr3t-Pw",
    "*:*:*:app:hunter2hunter2",
    "host:\u0663\u0664:db:user:pw-\u0661",  # Arabic-Indic digits are digits to the pattern and to its gate
    "bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw9 and 1234567890:" + "Zz_-" * 9,
)


def test_a_gated_rule_is_skipped_only_where_it_cannot_match() -> None:
    """A rule with a gate does not run on a text holding no match of it: each match of the rule holds one."""
    gated = [rule for rule in rules() if rule.gate]
    assert {rule.kind for rule in gated} == {"pgpass password", "Telegram Bot Token"}
    matched = {rule.kind: 0 for rule in gated}
    for text in [*GATED_EXAMPLES, *corpus_texts(), *random_texts(7, 4_000)]:
        for rule in gated:
            for match in rule.pattern.finditer(text):
                matched[rule.kind] += 1
                assert not rule.shut(match.group(0)), (rule.kind, text)
    assert all(matched.values()), matched
    assert secrets.find(GATED_EXAMPLES[2]) and all(rule.shut("imported:server-memory kind:x") for rule in gated)
