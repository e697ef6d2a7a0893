"""A staged batch writes each event's line exactly as `events.encode` does, whether the line is put together
around the data's JSON (encoded once, when it held no private text) or encoded whole (private text stripped
first, values `encode` itself must judge: deep nesting, a line over the limit, a float)."""

from __future__ import annotations

from array import array
from pathlib import Path
from typing import Any

import pytest

from contextflow.core.clock import MAX_HLC
from contextflow.core.errors import InputError
from contextflow.core.events import MAX_DEPTH, MAX_LINE_BYTES, Event, encode
from contextflow.core.private import strip
from contextflow.core.staged import StagedBatch


def _nested(levels: int) -> dict[str, Any]:
    value: Any = "deep"
    for _ in range(levels):
        value = [value]
    return {"content": "x", "deep": value}


DATA: list[dict[str, Any]] = [
    {"type": "fact", "content": 'Zoë\'s ключ 東京 \u2028 "quoted" \\ slash', "tags": ["a:b"], "metadata": {"n": 1}},
    {"content": "keep <private>not this</private> and this", "tags": ["x:<PRIVATE>y</private>"]},
    {"content": "a float", "metadata": {"score": 0.1, "big": 2**63, "flag": True, "none": None}},
    {"from": "a", "to": "b", "type": "RELATES_TO", "metadata": {"relations": ["calls", "uses"]}},
    _nested(MAX_DEPTH - 3),
    {"content": "", "list": [[], {}, [{}]]},
]


def _staged(tmp_path: Path, items: list[tuple[str, str, dict[str, Any]]]) -> bytes:
    with StagedBatch(tmp_path, "bench") as staged:
        staged.add_many(items, scrubbed=True)
        _, pieces = staged.lines(7, array("Q", range(100, 100 + len(items))))
        return b"".join(pieces)


def test_each_line_is_the_one_encode_writes(tmp_path: Path) -> None:
    items = [(f"id{n:014d}", "graph.node", data) for n, data in enumerate(DATA)]
    expected = b"".join(
        encode(Event(event_id, "bench", 7 + n, 100 + n, kind, strip(data)))
        for n, (event_id, kind, data) in enumerate(items)
    )
    assert _staged(tmp_path, items) == expected
    assert b"not this" not in expected and b"keep  and this" in expected


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (_nested(MAX_DEPTH + 1), "nested over"),
        ({"content": "x" * MAX_LINE_BYTES}, "bytes once encoded"),
        ({"content": "\ud800 a lone surrogate"}, "cannot be stored as JSON"),
    ],
)
def test_a_line_encode_refuses_is_refused_in_its_words(tmp_path: Path, data: dict[str, Any], words: str) -> None:
    with pytest.raises(InputError) as refused:
        _staged(tmp_path, [("id0", "graph.node", data)])
    with pytest.raises(InputError) as encoded:
        encode(Event("id0", "bench", 10**15, MAX_HLC, "graph.node", data))  # (staged with the largest stamps)
    assert words in str(refused.value) and str(refused.value) == str(encoded.value)
