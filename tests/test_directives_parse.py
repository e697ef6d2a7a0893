"""The `<ctx:...>` directive parser: what is a directive, and code (fenced or inline) that never is."""

from __future__ import annotations

import pytest

from contextflow.core.markdown import code_regions, mask_code
from contextflow.graph.directives import Directive, parse


def d(kind: str, body: str = "", **attrs: str) -> Directive:
    return Directive(kind, attrs, body)


# Memdown (github.com/Zate/Memdown, internal/hook/parser_test.go) parses the same directives; its
# 17 cases with the directives contextflow reads from each.
MEMDOWN_DIRECTIVE_CASES = [
    (
        "simple remember",
        'Here\'s my analysis.\n\n<ctx:remember type="fact" tags="project:x,tier:reference">\n'
        "The API uses OAuth 2.0.\n</ctx:remember>\n\nLet me know if you need more.",
        [d("remember", "The API uses OAuth 2.0.", type="fact", tags="project:x,tier:reference")],
    ),
    (
        "remember with multiline content",
        '<ctx:remember type="decision" tags="tier:reference">\nWe decided to use PostgreSQL.\n\nRationale:\n'
        "- Better concurrency\n- Native JSON support\n- Team familiarity\n</ctx:remember>",
        [
            d(
                "remember",
                "We decided to use PostgreSQL.\n\nRationale:\n- Better concurrency\n- Native JSON support\n"
                "- Team familiarity",
                type="decision",
                tags="tier:reference",
            )
        ],
    ),
    (
        "self-closing recall",
        'Let me check what we discussed.\n<ctx:recall query="type:fact AND tag:auth"/>',
        [d("recall", query="type:fact AND tag:auth")],
    ),
    ("self-closing with spaces", '<ctx:recall query="type:fact" />', [d("recall", query="type:fact")]),
    ("status command", "Let me check my memory state.\n<ctx:status/>", [d("status")]),
    (
        "multiple commands",
        '<ctx:remember type="fact">Fact one</ctx:remember>\nSome text in between.\n'
        '<ctx:remember type="decision">Decision one</ctx:remember>\n<ctx:link from="abc" to="def" type="DEPENDS_ON"/>',
        [
            d("remember", "Fact one", type="fact"),
            d("remember", "Decision one", type="decision"),
            d("link", **{"from": "abc", "to": "def", "type": "DEPENDS_ON"}),
        ],
    ),
    (
        "summarize with archive",
        '<ctx:summarize nodes="01HQ1234,01HQ5678" archive="true">\nThe auth system uses OIDC with custom claims.\n'
        "</ctx:summarize>",
        [d("summarize", "The auth system uses OIDC with custom claims.", nodes="01HQ1234,01HQ5678", archive="true")],
    ),
    (
        "task start",
        '<ctx:task name="implement-auth" action="start"/>',
        [d("task", name="implement-auth", action="start")],
    ),
    ("expand command", '<ctx:expand node="01HQ1234"/>', [d("expand", node="01HQ1234")]),
    (
        "supersede command",
        '<ctx:supersede old="01HQ1234" new="01HQ5678"/>',
        [d("supersede", old="01HQ1234", new="01HQ5678")],
    ),
    (
        "ignore commands in code blocks",
        'Here\'s an example:\n```xml\n<ctx:remember type="fact">ignored</ctx:remember>\n```',
        [],
    ),
    ("ignore commands in inline code", 'Use `<ctx:remember type="fact">` to store facts.', []),
    ("no commands", "This is just regular text with no ctx commands.", []),
    ("malformed - unclosed tag", '<ctx:remember type="fact">content without closing', []),
    (
        "quotes in content",
        '<ctx:remember type="fact">User said "hello world"</ctx:remember>',
        [d("remember", 'User said "hello world"', type="fact")],
    ),
    (
        "unicode content",
        '<ctx:remember type="fact">User speaks 日本語 and uses emoji 🚀</ctx:remember>',
        [d("remember", "User speaks 日本語 and uses emoji 🚀", type="fact")],
    ),
    (
        "real command after code block example",
        'Here\'s an example:\n```xml\n<ctx:remember type="fact">ignored</ctx:remember>\n```\n\n'
        '<ctx:remember type="fact">This is real</ctx:remember>',
        [d("remember", "This is real", type="fact")],
    ),
]


@pytest.mark.parametrize(
    ("name", "text", "wanted"), MEMDOWN_DIRECTIVE_CASES, ids=[c[0] for c in MEMDOWN_DIRECTIVE_CASES]
)
def test_memdown_directive_parser_cases(name, text, wanted):
    assert parse(text) == wanted


@pytest.mark.parametrize(
    "text",
    [
        "Use ``<ctx:status/>`` here",  # a span of two backticks
        "Use `` `<ctx:status/>` `` here",  # backticks inside a longer span
        'Use `<ctx:remember type="fact">\nover a line break</ctx:remember>` here',
        "````\n```\n<ctx:status/>\n```\n````",  # a longer fence holds a shorter one
        "~~~\n<ctx:status/>\n~~~",
        "> ```\n> <ctx:status/>\n> ```",  # a fence in a quote
        "  - list item\n    ```\n    <ctx:status/>\n    ```",  # a fence in a list item
        "```\n<ctx:status/>",  # a fence never closed runs to the end
    ],
)
def test_directives_inside_code_spans_and_fences_are_examples(text):
    assert parse(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "a `b` <ctx:status/> `c`",  # between two spans
        "it's \\`<ctx:status/>\\`",  # escaped backticks are not code
        "one ` backtick <ctx:status/>",  # a backtick with no partner is text
        "para `one\n\n<ctx:status/> two`",  # a code span never crosses a blank line
    ],
)
def test_directives_beside_code_are_carried_out(text):
    assert parse(text) == [d("status")]


def test_an_example_before_a_real_directive_does_not_swallow_it():
    text = '`<ctx:remember>` looks like this: <ctx:remember type="fact">keep `x` quoted</ctx:remember>'
    assert parse(text) == [d("remember", "keep `x` quoted", type="fact")]


def test_masking_keeps_offsets_and_line_breaks():
    text = "a `code` b\n```\nx\n```\nc"
    masked = mask_code(text)
    assert len(masked) == len(text) and masked.count("\n") == text.count("\n")
    assert [text[start:end] for start, end in code_regions(text)] == ["`code`", "```\nx\n```\n"]


def _cpu(function, argument) -> float:
    import time

    start = time.thread_time()
    function(argument)
    return time.thread_time() - start


@pytest.mark.parametrize("unit", ["``a", "`a ``b ", "\\`x`` "])
def test_finding_code_takes_linear_time_on_hostile_text(unit):
    """A reply full of unmatched or escaped backticks (the Stop hook parses every reply): eight times
    the text costs about eight times the work, not sixty-four."""
    small, large = unit * 20_000, unit * 160_000
    _cpu(mask_code, small)  # warm up
    assert _cpu(mask_code, large) < 24 * max(_cpu(mask_code, small), 1e-3)


def test_unclosed_directives_are_parsed_in_linear_time():
    """Each opening tag finds its closing tag by lookup, not by scanning the rest of the reply."""
    small, large = '<ctx:remember type="fact">x ' * 2_000, '<ctx:remember type="fact">x ' * 16_000
    _cpu(parse, small)
    assert _cpu(parse, large) < 24 * max(_cpu(parse, small), 1e-3)
    (only,) = parse(small + "</ctx:remember>")  # the first opening runs to the one closing tag
    assert only.attrs == {"type": "fact"} and only.body.startswith("x <ctx:remember")
