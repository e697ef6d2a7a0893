"""The graph query language: a recursive-descent parser and a set-based evaluator.

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
    AND  OR  NOT  ( )                              NOT binds tightest, then AND, then OR; two terms
                                                   side by side mean AND

`>24h` reads "newer than 24 hours ago", `<1w` "older than a week". For a date, `>2024-01-01`
means after that day and `>=2024-01-01` from it on; a date with no operator means that day.
Errors name the 1-based position and what was expected there. A query holds at most
MAX_TERMS terms and MAX_DEPTH nested parentheses or NOTs.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from contextflow.clock import COUNTER_BITS
from contextflow.errors import InputError
from contextflow.graph.model import NODE_TYPES
from contextflow.graph.view import GraphState, Node
from contextflow.ids import resolve_prefix
from contextflow.timeutil import parse_duration, parse_iso

FIELDS = ("type", "tag", "created", "updated", "tokens", "has", "from", "to")
MAX_TERMS = 200
MAX_DEPTH = 50
OPERATORS = ("AND", "OR", "NOT")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_COMPARE = re.compile(r"^(>=|<=|>|<|=)?(.*)$", re.S)
_FIELD = re.compile(r"^([A-Za-z]+):(.*)$", re.S)


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
    tokens: list[Token] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char.isspace():
            i += 1
        elif char in "()":
            tokens.append(Token(char, char, i))
            i += 1
        else:
            start = i
            word = ""
            while i < len(text) and not text[i].isspace() and text[i] not in "()":
                if text[i] == '"':
                    close = text.find('"', i + 1)
                    if close < 0:
                        raise _error(text, i, 'a closing " for the quote that starts here')
                    word += text[i + 1 : close]
                    i = close + 1
                    if word and text[start] == '"' and (i >= len(text) or text[i].isspace() or text[i] in "()"):
                        break
                else:
                    word += text[i]
                    i += 1
            kind = "phrase" if text[start] == '"' else "word"
            tokens.append(Token(kind, word, start))
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
        return self.peek.kind == "word" and self.peek.text == name

    def starts_operand(self) -> bool:
        token = self.peek
        return token.kind in ("(", "phrase") or (token.kind == "word" and token.text not in ("AND", "OR"))

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
        if token.kind == "end" or token.kind == ")" or token.text in OPERATORS:
            before = self.tokens[self.index - 1].text if self.index else ""
            where = f"a term after {before}" if before in OPERATORS else "a term (a filter like type:fact, or a word)"
            found = None if token.kind == "end" else repr(token.text)
            raise _error(self.text, token.position, where, found)
        self.take()
        self.terms += 1
        if self.terms > MAX_TERMS:
            raise QueryError(
                f"query error at position {token.position + 1}: more than {MAX_TERMS} terms; split the query up"
            )
        if token.kind == "phrase":
            return Leaf("text", "", token.text.lower())
        return self.leaf(token)

    def leaf(self, token: Token) -> Leaf:
        match = _FIELD.match(token.text)
        if not match:
            return Leaf("text", "", token.text.lower())
        name, value = match.group(1).lower(), match.group(2)
        at = token.position + len(name) + 1
        if name not in FIELDS:
            raise _error(
                self.text, token.position,
                f"a filter ({', '.join(f + ':' for f in FIELDS)}); quote text that contains a colon",
                repr(name + ":"),
            )
        if name == "type":
            if value not in NODE_TYPES:
                raise _error(self.text, at, f"a node type ({', '.join(NODE_TYPES)})", repr(value) if value else None)
            return Leaf("type", "", value)
        if name == "tag":
            if not value.rstrip("*") or value.startswith(":"):
                raise _error(self.text, at, "a tag, e.g. tag:project:x, tag:task:* or tag:archived",
                             repr(value) if value else None)
            if value.endswith("*"):
                return Leaf("tag", "prefix", value.rstrip("*"))
            return Leaf("tag", "" if ":" in value else "plain", value)
        if name == "has":
            if value not in ("summary", "edges"):
                raise _error(self.text, at, "summary or edges after has:", repr(value) if value else None)
            return Leaf("has", "", value)
        if name in ("from", "to"):
            if not value:
                raise _error(self.text, at, f"a node id after {name}:")
            return Leaf(name, "", value)
        op, rest = _COMPARE.match(value).groups()  # type: ignore[union-attr]
        if name == "tokens":
            if not rest.isdigit():
                raise _error(self.text, at + len(op or ""), "a whole number of tokens, e.g. tokens:<500",
                             repr(rest) if rest else None)
            return Leaf("tokens", op or "=", rest, int(rest))
        return self.time_leaf(name, op, rest, at)

    def time_leaf(self, name: str, op: str | None, rest: str, at: int) -> Leaf:
        duration = parse_duration(rest)
        if duration is not None:
            if op not in (">", "<", ">=", "<="):
                raise _error(self.text, at, f"> or < before a duration, e.g. {name}:>24h (newer) or {name}:<1w (older)",
                             repr(rest))
            return Leaf(name, op, rest, int(duration.total_seconds()) * 1000, relative=True)
        moment = parse_iso(rest)
        if moment is None:
            raise _error(
                self.text, at + len(op or ""),
                f"a duration (30m, 24h, 7d, 2w, 1y) or a date (2024-01-01) after {name}:{op or ''}",
                repr(rest) if rest else None,
            )
        start = int(moment.timestamp() * 1000)
        if _DATE.match(rest):  # a whole day: > is after it, >= from it on, none is within it
            end = int((moment + timedelta(days=1)).timestamp() * 1000)
            bounds = {">": (">=", end), ">=": (">=", start), "<": ("<", start), "<=": ("<", end)}
            if op in bounds:
                new_op, point = bounds[op]
                return Leaf(name, new_op, rest, point)
            return Leaf(name, "day", rest, start)
        return Leaf(name, op or "=", rest, start)


def parse(text: str) -> Expr:
    if not isinstance(text, str):
        raise QueryError("query must be a string, e.g. \"type:fact AND tag:project:x\"")
    try:
        return _Parser(text).parse()
    except RecursionError:  # the limits above keep it out of reach; never a traceback
        raise QueryError("query is nested too deeply; write it flatter") from None


# -- evaluation ------------------------------------------------------------------------

_CMP: dict[str, Callable[[int, int], bool]] = {
    ">": operator.gt, "<": operator.lt, ">=": operator.ge, "<=": operator.le, "=": operator.eq,
}


def _stamp_ms(node: Node, slot: int) -> int:
    """Milliseconds of the node's creation (slot 0) or last update (slot 1)."""
    return (node.created_key if slot == 0 else node.updated_key)[0] >> COUNTER_BITS


class _Evaluator:
    def __init__(self, state: GraphState, now_ms: int) -> None:
        self.state = state
        self.now_ms = now_ms

    def resolve(self, prefix: str, field: str) -> str:
        return resolve_prefix(prefix, self.state.live, f"node id in {field}:")

    def index(self, leaf: Leaf) -> set[str] | None:
        state = self.state
        if leaf.field == "type":
            return state.by_type.get(leaf.value, set())
        if leaf.field == "tag":
            if leaf.op == "prefix":
                return set().union(*(members for name, members in state.by_tag.items() if name.startswith(leaf.value)))
            if leaf.op == "plain":  # tag:archived is the tag `archived` or any `namespace:archived`
                others = (members for name, members in state.by_tag.items() if name.partition(":")[2] == leaf.value)
                return set().union(state.by_tag.get(leaf.value, set()), *others)
            return state.by_tag.get(leaf.value, set())
        if leaf.field == "from":
            return {edge.target for edge in state.edges_out(self.resolve(leaf.value, "from"))}
        if leaf.field == "to":
            return {edge.source for edge in state.edges_in(self.resolve(leaf.value, "to"))}
        return None

    def scan(self, ids: set[str], leaf: Leaf) -> set[str]:
        """The ids whose node passes a non-indexed filter (inline loops: this is the hot path)."""
        nodes = self.state.nodes
        if leaf.field == "text":
            term = leaf.value
            return {i for i in ids if term in nodes[i].lower}
        if leaf.field == "has":
            if leaf.value == "summary":
                return {i for i in ids if nodes[i].summary}
            has_edges = self.state.has_edges
            return {i for i in ids if has_edges(i)}
        if leaf.field == "tokens":
            compare, number = _CMP[leaf.op], leaf.number
            return {i for i in ids if compare(nodes[i].tokens, number)}
        point = self.now_ms - leaf.number if leaf.relative else leaf.number
        slot = 0 if leaf.field == "created" else 1
        if leaf.op == "day":
            end = point + 86_400_000
            return {i for i in ids if point <= _stamp_ms(nodes[i], slot) < end}
        compare = _CMP[leaf.op]
        return {i for i in ids if compare(_stamp_ms(nodes[i], slot), point)}

    def cost(self, expr: Expr) -> int:
        if isinstance(expr, Leaf):
            return 0 if expr.field in ("type", "tag", "from", "to") else 1
        if isinstance(expr, And):
            return min(self.cost(expr.left), self.cost(expr.right))
        if isinstance(expr, Or):
            return max(self.cost(expr.left), self.cost(expr.right))
        return 1

    def filter(self, ids: set[str], expr: Expr) -> set[str]:
        if isinstance(expr, All):
            return ids
        if isinstance(expr, And):
            first, second = sorted((expr.left, expr.right), key=self.cost)
            narrowed = self.filter(ids, first)
            return self.filter(narrowed, second) if narrowed else narrowed
        if isinstance(expr, Or):
            return self.filter(ids, expr.left) | self.filter(ids, expr.right)
        if isinstance(expr, Not):
            return ids - self.filter(ids, expr.inner)
        indexed = self.index(expr)
        if indexed is not None:
            return ids & indexed if len(ids) > len(indexed) else {i for i in ids if i in indexed}
        return self.scan(ids, expr)


def evaluate(expr: Expr, state: GraphState, now_ms: int) -> set[str]:
    """The ids of live nodes that match `expr`; `now_ms` anchors durations such as 24h."""
    return _Evaluator(state, now_ms).filter(set(state.live), expr)


def mentions_tag(expr: Expr, tag: str) -> bool:
    """True when the query names this tag (the composer loads off-context nodes only then)."""
    if isinstance(expr, Leaf):
        if expr.field != "tag":
            return False
        if expr.op == "plain":
            return tag == expr.value or tag.partition(":")[2] == expr.value
        return expr.value == tag or (expr.op == "prefix" and tag.startswith(expr.value))
    if isinstance(expr, And | Or):
        return mentions_tag(expr.left, tag) or mentions_tag(expr.right, tag)
    if isinstance(expr, Not):
        return mentions_tag(expr.inner, tag)
    return False
