"""Where Markdown text is code: fenced code blocks and inline code spans, found as CommonMark does.

- A fence is a line of three or more backticks or tildes (after any indentation or `>` quote
  markers); the block runs to a line of the same character at least as long, or to the end.
- Outside fences, a run of n backticks opens a code span that the next run of exactly n backticks
  closes (so ``` `` a ` b `` ``` is one span); a span may continue over a line break but not over a
  blank line, and a run with no closer is literal text. A backslash before a backtick escapes it.

`mask_code` blanks the code out (same length, line breaks kept), so a pattern searched in the
masked text finds only prose, at the offsets it has in the original.
"""

from __future__ import annotations

import bisect
import re

from contextflow.core import regexes

_FENCE = regexes.compile(r"^[ \t>]*(`{3,}|~{3,})(.*)$")
_BLANK_LINE = regexes.compile(r"\n[ \t]*\n")
_TICKS = regexes.compile(r"`+")


def _fences(text: str) -> list[tuple[int, int]]:
    regions: list[tuple[int, int]] = []
    opened: tuple[int, str] | None = None  # (start offset, the fence)
    offset = 0
    for line in text.splitlines(keepends=True):
        match = _FENCE.match(line.rstrip("\r\n"))
        if opened is None:
            if match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
                opened = (offset, match.group(1))
        elif (
            match
            and match.group(1)[0] == opened[1][0]
            and len(match.group(1)) >= len(opened[1])
            and not match.group(2).strip()
        ):
            regions.append((opened[0], offset + len(line)))
            opened = None
        offset += len(line)
    if opened is not None:
        regions.append((opened[0], len(text)))
    return regions


def _spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Inline code spans within text[start:end] (no fence inside). Every backtick run and blank line
    is found once, and each opener looks its closer up by length: linear time, however many
    unmatched runs a hostile text holds."""
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(text, start, end)]
    blanks = [m.start() for m in _BLANK_LINE.finditer(text, start, end)]
    by_length: dict[int, list[int]] = {}
    for index, (begin, finish) in enumerate(runs):
        by_length.setdefault(finish - begin, []).append(index)
    regions: list[tuple[int, int]] = []
    index = 0
    while index < len(runs):
        begin, finish = runs[index]
        if begin > 0 and text[begin - 1] == "\\":  # an escaped backtick: the rest of the run may open
            begin += 1
        length = finish - begin
        stop_at = bisect.bisect_left(blanks, finish)
        stop = blanks[stop_at] if stop_at < len(blanks) else end  # a span never crosses a blank line
        same = by_length.get(length, [])
        after = bisect.bisect_right(same, index)
        closer = same[after] if length and after < len(same) else None
        if closer is None or runs[closer][1] > stop:
            index += 1  # no partner: literal backticks
            continue
        regions.append((begin, runs[closer][1]))
        index = closer + 1
    return regions


def code_regions(text: str) -> list[tuple[int, int]]:
    """(start, end) of each fenced block and inline code span, in order."""
    regions: list[tuple[int, int]] = []
    at = 0
    for begin, finish in _fences(text):
        regions += _spans(text, at, begin)
        regions.append((begin, finish))
        at = finish
    regions += _spans(text, at, len(text))
    return regions


def mask_code(text: str) -> str:
    """`text` with its code blanked out: spaces for everything but line breaks, offsets unchanged."""
    pieces: list[str] = []
    at = 0
    for begin, finish in code_regions(text):
        pieces.append(text[at:begin])
        pieces.append(re.sub(r"[^\n]", " ", text[begin:finish]))
        at = finish
    pieces.append(text[at:])
    return "".join(pieces)
