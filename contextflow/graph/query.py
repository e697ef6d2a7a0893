"""The graph query language: a recursive-descent parser, and its evaluation as an SQL condition on the
graph's tables (`where`; graph/stored.py runs it).

    type:<type>  tag:<tag>  tag:<namespace>:*      node type; tag (exact, or a namespace prefix);
                                                   a plain tag (tag:archived) matches that tag
                                                   or any namespace:archived
    created:<op><when>  updated:<op><when>         op is > < >= <=; when is a duration back from
                                                   now (30m, 24h, 7d, 1y, 1d12h) or a date/time
                                                   (2024-01-01, 2024-01-01T09:30:00Z)
    tokens:<op><n>                                 token estimate; op also =, or none for equality
    has:summary  has:edges                         a summary is set; the node has any edge
    from:<id>  to:<id>                             an edge from that node to this one / from this
                                                   node to that one (ids may be unique prefixes)
    word  "a phrase"                               case-insensitive text in content or summary
    AND  OR  NOT  ( )                              in any case (and, Or); NOT binds tightest, then
                                                   AND, then OR: a OR b AND c is a OR (b AND c);
                                                   two terms side by side mean AND; quote an
                                                   operator word to search for it ("and")

`>24h` reads "newer than 24 hours ago", `<1w` "older than a week". A date stands for the start of
that day (00:00 UTC): `>2024-01-01` and `>=2024-01-01` are from then on (January 1 included, as
someone writing "since the 1st" means), `<2024-01-01` is before it, `<=2024-01-01` takes the whole
day in, and a date with no operator is that day.
Errors name the 1-based position and what was expected there. A query holds at most
MAX_TERMS terms and MAX_DEPTH nested parentheses or NOTs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from contextflow.core import regexes
from contextflow.core.errors import InputError
from contextflow.core.ids import resolve_prefix
from contextflow.core.timeutil import parse_duration, parse_iso
from contextflow.graph.model import NODE_TYPES

FIELDS = ("type", "tag", "created", "updated", "tokens", "has", "from", "to")
MAX_TERMS = 200
MAX_DEPTH = 50
OPERATORS = ("AND", "OR", "NOT")
SHOWN = 20  # ids offered to `resolve_prefix` (it names a few of an ambiguous prefix's matches)
_DATE = regexes.compile(r"^\d{4}-\d{2}-\d{2}$")
_COMPARE = regexes.compile(r"^(>=|<=|>|<|=)?(.*)$", re.S)
_FIELD = regexes.compile(r"^([A-Za-z]+):(.*)$", re.S)
_TOKEN = regexes.compile(r'[()]|(?:"[^"]*"|[^\s()"])+|"')
_CHOICES = {  # filters that take one of a few words: (the words, what the error expects)
    "type": (NODE_TYPES, f"a node type ({', '.join(NODE_TYPES)})"),
    "has": (("summary", "edges"), "summary or edges after has:"),
}


class QueryError(InputError):
    """A query that does not parse; the message names the position and what was expected."""


@dataclass(frozen=True)
class Token:
    kind: str  # "(", ")", "word", "phrase", "end"
    text: str
    position: int  # 0-based


# -- AST -------------------------------------------------------------------------------


@dataclass(frozen=True)
class All:
    pass


@dataclass(frozen=True)
class And:
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Or:
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Not:
    inner: Expr


@dataclass(frozen=True)
class Leaf:
    field: str  # a FIELDS name, or "text"
    op: str
    value: str
    number: int = 0  # tokens, or a time point (ms) / duration (ms, negative means "ago")
    relative: bool = False  # a duration, resolved against `now` at evaluation


Expr = All | And | Or | Not | Leaf


# -- lexing and parsing -----------------------------------------------------------------


def _lex(text: str) -> list[Token]:
    """Parentheses, words and phrases; quoted parts may sit inside a word (ab"c d" is one word)."""
    tokens: list[Token] = []
    for match in _TOKEN.finditer(text):
        word, at = match.group(), match.start()
        if word == '"':
            raise _error(text, at, 'a closing " for the quote that starts here')
        kind = word if word in "()" else "phrase" if word[0] == '"' else "word"
        tokens.append(Token(kind, word.replace('"', ""), at))
    tokens.append(Token("end", "", len(text)))
    return tokens


def _error(text: str, position: int, expected: str, found: str | None = None) -> QueryError:
    if found is None:
        rest = text[position : position + 20].split()
        found = repr(rest[0]) if position < len(text) and rest else "the end of the query"
    pointer = f"\n  {text}\n  {' ' * position}^"
    return QueryError(f"query error at position {position + 1}: expected {expected}, found {found}{pointer}")


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _lex(text)
        self.index = 0
        self.depth = 0
        self.terms = 0

    @property
    def peek(self) -> Token:
        return self.tokens[self.index]

    def take(self) -> Token:
        self.index += 1
        return self.tokens[self.index - 1]

    def is_op(self, name: str) -> bool:
        return self.peek.kind == "word" and self.peek.text.upper() == name

    def starts_operand(self) -> bool:
        token = self.peek
        return token.kind in ("(", "phrase") or (token.kind == "word" and token.text.upper() not in ("AND", "OR"))

    def parse(self) -> Expr:
        if self.peek.kind == "end":
            return All()
        expr = self.or_expr()
        if self.peek.kind != "end":
            token = self.peek
            expected = "AND, OR or the end of the query" if token.kind == ")" else "an operator"
            raise _error(self.text, token.position, expected, repr(token.text))
        return expr

    def or_expr(self) -> Expr:
        expr = self.and_expr()
        while self.is_op("OR"):
            self.take()
            expr = Or(expr, self.and_expr())
        return expr

    def and_expr(self) -> Expr:
        expr = self.unary()
        while self.is_op("AND") or self.starts_operand():
            if self.is_op("AND"):
                self.take()
            expr = And(expr, self.unary())
        return expr

    def nest(self, token: Token) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise QueryError(
                f"query error at position {token.position + 1}: more than {MAX_DEPTH} nested parentheses or NOTs; "
                "write the query flatter"
            )

    def unary(self) -> Expr:
        if self.is_op("NOT"):
            self.nest(self.take())
            inner = self.unary()
            self.depth -= 1
            return Not(inner)
        return self.primary()

    def primary(self) -> Expr:
        token = self.peek
        if token.kind == "(":
            self.nest(self.take())
            if self.peek.kind == ")":
                raise _error(self.text, self.peek.position, "a term inside the parentheses", "')'")
            expr = self.or_expr()
            if self.peek.kind != ")":
                raise _error(self.text, self.peek.position, f"')' to close the '(' at position {token.position + 1}")
            self.take()
            self.depth -= 1
            return expr
        if token.kind == "end" or token.kind == ")" or (token.kind == "word" and token.text.upper() in OPERATORS):
            before = self.tokens[self.index - 1] if self.index else None
            after_op = before is not None and before.kind == "word" and before.text.upper() in OPERATORS
            where = (
                f"a term after {before.text}" if before and after_op else "a term (a filter like type:fact, or a word)"
            )
            found = None if token.kind == "end" else repr(token.text)
            raise _error(self.text, token.position, where, found)
        self.take()
        self.terms += 1
        if self.terms > MAX_TERMS:
            raise QueryError(
                f"query error at position {token.position + 1}: more than {MAX_TERMS} terms; split the query up"
            )
        return self.leaf(token)

    def leaf(self, token: Token) -> Leaf:
        match = _FIELD.match(token.text) if token.kind == "word" else None
        if not match:
            return Leaf("text", "", token.text.lower())
        name, value = match.group(1).lower(), match.group(2)
        at = token.position + len(name) + 1
        found = repr(value) if value else None
        if name not in FIELDS:
            raise _error(
                self.text,
                token.position,
                f"a filter ({', '.join(f + ':' for f in FIELDS)}); quote text that contains a colon",
                repr(name + ":"),
            )
        if name in _CHOICES:
            options, expected = _CHOICES[name]
            if value not in options:
                raise _error(self.text, at, expected, found)
            return Leaf(name, "", value)
        if name == "tag":
            if not value.rstrip("*") or value.startswith(":"):
                raise _error(self.text, at, "a tag, e.g. tag:project:x, tag:task:* or tag:archived", found)
            if value.endswith("*"):
                return Leaf("tag", "prefix", value.rstrip("*"))
            return Leaf("tag", "" if ":" in value else "plain", value)
        if name in ("from", "to"):
            if not value:
                raise _error(self.text, at, f"a node id after {name}:")
            return Leaf(name, "", value)
        op, rest = _COMPARE.match(value).groups()  # type: ignore[union-attr]
        if name == "tokens":
            if not rest.isdigit():
                raise _error(
                    self.text,
                    at + len(op or ""),
                    "a whole number of tokens, e.g. tokens:<500",
                    repr(rest) if rest else None,
                )
            return Leaf("tokens", op or "=", rest, int(rest))
        return self.time_leaf(name, op, rest, at)

    def time_leaf(self, name: str, op: str | None, rest: str, at: int) -> Leaf:
        duration = parse_duration(rest)
        if duration is not None:
            if op not in (">", "<", ">=", "<="):
                raise _error(
                    self.text,
                    at,
                    f"> or < before a duration, e.g. {name}:>24h (newer) or {name}:<1w (older)",
                    repr(rest),
                )
            return Leaf(name, op, rest, int(duration.total_seconds()) * 1000, relative=True)
        moment = parse_iso(rest)
        if moment is None:
            raise _error(
                self.text,
                at + len(op or ""),
                f"a duration (30m, 24h, 7d, 2w, 1y) or a date (2024-01-01) after {name}:{op or ''}",
                repr(rest) if rest else None,
            )
        start = int(moment.timestamp() * 1000)
        if _DATE.match(rest):  # the day's start for > >= <; <= takes the whole day in, no operator is the day
            end = int((moment + timedelta(days=1)).timestamp() * 1000)
            bounds = {">": (">", start), ">=": (">=", start), "<": ("<", start), "<=": ("<", end)}
            if op in bounds:
                new_op, point = bounds[op]
                return Leaf(name, new_op, rest, point)
            return Leaf(name, "day", rest, start)
        return Leaf(name, op or "=", rest, start)


def parse(text: str) -> Expr:
    if not isinstance(text, str):
        raise QueryError('query must be a string, e.g. "type:fact AND tag:project:x"')
    try:
        return _Parser(text).parse()
    except RecursionError:  # the limits above keep it out of reach; never a traceback
        raise QueryError("query is nested too deeply; write it flatter") from None


# -- evaluation: a condition on the graph's tables (graph/projection.py) ---------------------------

_COLUMNS = {"tokens": "n.tokens", "created": "n.created_ms", "updated": "n.updated_ms"}
_OPERATORS = {">": ">", "<": "<", ">=": ">=", "<=": "<=", "=": "="}
_HAS_EDGES = """(EXISTS (SELECT 1 FROM graph_edges e JOIN graph_nodes o ON o.id = e.dst AND o.live
    WHERE e.src = n.id AND e."on") OR EXISTS (SELECT 1 FROM graph_edges e JOIN graph_nodes o ON o.id = e.src AND o.live
    WHERE e.dst = n.id AND e."on"))"""
_TAGGED = 'n.id IN (SELECT node FROM graph_tags WHERE "on" AND ({}))'


def where(expr: Expr, now_ms: int, prefixed: Callable[[str, int], list[str]]) -> tuple[str, list[Any]]:
    """`expr` as an SQL condition on `graph_nodes n` (a live node), with its parameters: `now_ms` anchors
    durations such as 24h, `prefixed(prefix, count)` lists live ids for `from:` and `to:`."""
    if isinstance(expr, All):
        return "1", []
    if isinstance(expr, And | Or):
        left, left_params = where(expr.left, now_ms, prefixed)
        right, right_params = where(expr.right, now_ms, prefixed)
        joint = "AND" if isinstance(expr, And) else "OR"
        return f"({left}) {joint} ({right})", left_params + right_params
    if isinstance(expr, Not):
        inner, params = where(expr.inner, now_ms, prefixed)
        return f"NOT ({inner})", params
    return _leaf(expr, now_ms, prefixed)


def _leaf(leaf: Leaf, now_ms: int, prefixed: Callable[[str, int], list[str]]) -> tuple[str, list[Any]]:
    if leaf.field == "type":
        return "n.type = ?", [leaf.value]
    if leaf.field == "tag":
        if leaf.op == "prefix":  # (a range of the tags' index)
            end = leaf.value + "\U0010ffff"
            return _TAGGED.format("tag >= ? AND tag < ? AND substr(tag, 1, ?) = ?"), [
                leaf.value,
                end,
                len(leaf.value),
                leaf.value,
            ]
        if leaf.op == "plain":  # tag:archived is also any namespace:archived
            plain = "tag = ? OR (instr(tag, ':') AND substr(tag, instr(tag, ':') + 1) = ?)"
            return _TAGGED.format(plain), [leaf.value, leaf.value]
        return _TAGGED.format("tag = ?"), [leaf.value]
    if leaf.field in ("from", "to"):
        wanted = leaf.value.strip().lower()
        node_id = resolve_prefix(leaf.value, prefixed(wanted, SHOWN), f"node id in {leaf.field}:")
        near, here = ("dst", "src") if leaf.field == "from" else ("src", "dst")
        return f'n.id IN (SELECT {near} FROM graph_edges WHERE {here} = ? AND "on")', [node_id]
    if leaf.field == "text":
        return "n.id IN (SELECT id FROM graph_node_text WHERE instr(lower, ?))", [leaf.value]
    if leaf.field == "has":
        return ("n.summary", []) if leaf.value == "summary" else (_HAS_EDGES, [])
    column = _COLUMNS[leaf.field]
    point = now_ms - leaf.number if leaf.relative else leaf.number
    if leaf.op == "day":
        return f"{column} >= ? AND {column} < ?", [point, point + 86_400_000]
    return f"{column} {_OPERATORS[leaf.op]} ?", [point]


def _tag_matches(leaf: Leaf, name: str) -> bool:
    """Whether a tag: filter matches the tag `name`; tag:archived also matches any namespace:archived."""
    if leaf.op == "prefix":
        return name.startswith(leaf.value)
    return name == leaf.value or (leaf.op == "plain" and name.partition(":")[2] == leaf.value)


def mentions_tag(expr: Expr, tag: str, wanted: bool = True) -> bool:
    """True when the query asks for this tag by name (the composer loads off-context nodes only then):
    a `tag:` filter naming it, not a wildcard (`tag:tier:*`) and not under a NOT (`NOT tag:tier:*`
    lets untiered nodes in; it never asks for archived ones)."""
    if isinstance(expr, Leaf):
        return wanted and expr.field == "tag" and expr.op != "prefix" and _tag_matches(expr, tag)
    if isinstance(expr, And | Or):
        return mentions_tag(expr.left, tag, wanted) or mentions_tag(expr.right, tag, wanted)
    if isinstance(expr, Not):
        return mentions_tag(expr.inner, tag, not wanted)
    return False
