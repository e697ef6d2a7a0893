"""The query language: every filter and operator, precedence, and errors that point at the spot."""

from datetime import datetime

import pytest

from contextflow.adapters.cli import main
from contextflow.core.clock import COUNTER_BITS, stamp_ms
from contextflow.core.events import Event
from contextflow.graph import writes
from contextflow.graph.compose import compose
from contextflow.graph.query import All, And, Leaf, Not, Or, QueryError, parse
from contextflow.graph.stored import StoredGraph
from tests.graph_fold import Scratch

DAY = 86_400_000


@pytest.fixture
def graph(app):
    """Four nodes: ids by name, plus the time they were written."""
    a = writes.add_node(
        app, type="fact", content="Database uses SQLite with WAL mode", tags=["project:x", "tier:reference"]
    )
    b = writes.add_node(
        app, type="decision", content="Chose Go for a single binary", tags=["project:y"], summary="Go, one binary"
    )
    c = writes.add_node(app, type="observation", content="Working on the query PARSER " * 40, tags=["tier:working"])
    d = writes.add_node(app, type="pattern", content="Errors say how to fix them", tags=["task:auth"])
    writes.link(app, b.id, a.id, "DEPENDS_ON")
    nodes = {"a": a.id, "b": b.id, "c": c.id, "d": d.id}
    return app, nodes, stamp_ms(d.hlc)


def names(graph, query, now=None):
    app, nodes, written = graph
    found = writes.graph(app).matching(parse(query), written + 1000 if now is None else now)
    return sorted(name for name, node_id in nodes.items() if node_id in found)


def test_type_and_tag_filters_match_exactly(graph):
    assert names(graph, "type:fact") == ["a"]
    assert names(graph, "tag:project:x") == ["a"]
    assert names(graph, "tag:tier:working") == ["c"]
    assert names(graph, "tag:project:*") == ["a", "b"]


def test_and_or_not_and_parentheses(graph):
    assert names(graph, "type:fact AND tag:project:x") == ["a"]
    assert names(graph, "type:fact OR type:pattern") == ["a", "d"]
    assert names(graph, "NOT type:fact") == ["b", "c", "d"]
    assert names(graph, "(type:decision OR type:pattern) AND tag:task:auth") == ["d"]
    assert names(graph, "tag:project:* AND NOT has:summary") == ["a"]


def test_not_binds_tighter_than_and_which_binds_tighter_than_or():
    assert parse("a OR b AND c") == Or(Leaf("text", "", "a"), And(Leaf("text", "", "b"), Leaf("text", "", "c")))
    assert parse("a AND b OR c") == Or(And(Leaf("text", "", "a"), Leaf("text", "", "b")), Leaf("text", "", "c"))
    assert parse("NOT a AND b") == And(Not(Leaf("text", "", "a")), Leaf("text", "", "b"))
    assert parse("(a OR b) c") == And(Or(Leaf("text", "", "a"), Leaf("text", "", "b")), Leaf("text", "", "c"))


def test_operators_are_operators_in_any_case_and_quoting_makes_one_a_word(graph):
    assert parse("type:fact and tag:tier:pinned") == parse("type:fact AND tag:tier:pinned")
    assert parse("a or b and not c") == parse("a OR b AND NOT c")
    assert parse("a Or b") == parse("a OR b")
    assert parse('salt "and" pepper') == And(
        And(Leaf("text", "", "salt"), Leaf("text", "", "and")), Leaf("text", "", "pepper")
    )
    assert names(graph, "type:fact and tag:tier:reference") == ["a"]
    assert names(graph, "type:fact or type:pattern") == ["a", "d"]
    assert names(graph, "not type:fact and not type:decision") == ["c", "d"]


def test_words_and_phrases_match_content_and_summary_ignoring_case(graph):
    assert names(graph, "sqlite") == ["a"]
    assert names(graph, "parser") == ["c"]
    assert names(graph, '"single binary"') == ["b"]
    assert names(graph, "one binary") == ["b"]  # from the summary, two terms ANDed
    assert names(graph, "go sqlite") == []


def test_created_and_updated_compare_with_durations_and_dates(graph):
    _, _, written = graph
    assert names(graph, "created:>24h") == ["a", "b", "c", "d"]
    assert names(graph, "created:<1w") == []
    assert names(graph, "updated:<1h", now=written + 2 * 3600_000) == ["a", "b", "c", "d"]
    assert names(graph, "created:>2000-01-01") == ["a", "b", "c", "d"]
    assert names(graph, "created:<2000-01-01") == []


def _state_with_nodes_created_at(*moments: str) -> StoredGraph:
    tables = Scratch()
    for n, moment in enumerate(moments):
        ms = int(datetime.fromisoformat(moment.replace("Z", "+00:00")).timestamp() * 1000)
        tables.add(Event(moment, "w", n + 1, ms << COUNTER_BITS, "graph.node", {"type": "fact", "content": moment}))
    return StoredGraph(tables)


MOMENTS = (
    "2024-03-04T23:59:59.999Z",
    "2024-03-05T00:00:00.000Z",
    "2024-03-05T12:00:00.000Z",
    "2024-03-05T23:59:59.999Z",
    "2024-03-06T00:00:00.000Z",
)


@pytest.mark.parametrize(
    ("query", "matched"),
    [
        # a date is the start of its day: "since the 5th" includes the 5th
        ("created:>2024-03-05", MOMENTS[2:]),
        ("created:>=2024-03-05", MOMENTS[1:]),
        ("created:<2024-03-05", MOMENTS[:1]),
        # <= takes the whole day in; no operator is the day itself
        ("created:<=2024-03-05", MOMENTS[:4]),
        ("created:2024-03-05", MOMENTS[1:4]),
        # a date with a time is that instant
        ("created:>2024-03-05T12:00:00Z", MOMENTS[3:]),
        ("created:<=2024-03-05T12:00:00Z", MOMENTS[:3]),
    ],
)
def test_a_date_means_the_start_of_its_day_and_le_takes_the_whole_day_in(query, matched):
    state = _state_with_nodes_created_at(*MOMENTS)
    assert sorted(state.matching(parse(query), 0)) == sorted(matched)


def test_tokens_has_from_and_to(graph):
    assert names(graph, "tokens:>100") == ["c"]
    assert names(graph, "tokens:<100") == ["a", "b", "d"]
    assert names(graph, "has:summary") == ["b"]
    assert names(graph, "has:edges") == ["a", "b"]
    _, nodes, _ = graph
    assert names(graph, f"from:{nodes['b']}") == ["a"]
    assert names(graph, f"to:{nodes['a'][:6]}") == ["b"]


def test_an_empty_query_matches_every_node(graph):
    assert names(graph, "   ") == ["a", "b", "c", "d"]


@pytest.mark.parametrize(
    ("query", "position", "expected"),
    [
        ("type:fact AND", 14, "a term after AND"),
        ("(type:fact", 11, "')' to close the '(' at position 1"),
        ("type:fact)", 10, "AND, OR or the end of the query"),
        ("type:foo", 6, "a node type"),
        ("tag:", 5, "a tag, e.g. tag:project:x"),
        ("tag::x", 5, "a tag, e.g. tag:project:x"),
        ("created:24h", 9, "> or < before a duration"),
        ("created:>soon", 10, "a duration (30m, 24h, 7d, 2w, 1y) or a date"),
        ("tokens:<many", 9, "a whole number of tokens"),
        ("has:children", 5, "summary or edges"),
        ("colour:red", 1, "a filter (type:, tag:"),
        ('"unclosed', 1, 'a closing "'),
        ("()", 2, "a term inside the parentheses"),
        ("a OR OR b", 6, "a term after OR"),
        ("NOT", 4, "a term after NOT"),
        ("from:", 6, "a node id after from:"),
    ],
)
def test_parse_errors_name_the_position_and_what_was_expected(query, position, expected):
    with pytest.raises(QueryError) as caught:
        parse(query)
    message = str(caught.value)
    assert f"position {position}:" in message and expected in message
    assert message.rstrip().endswith("^")


def test_an_unknown_or_ambiguous_node_in_from_is_a_clear_error(graph):
    app, _, _ = graph
    with pytest.raises(Exception, match="no node id in from: starts with 'zzzz'"):
        writes.graph(app).matching(parse("from:zzzz"), 0)


def test_a_plain_tag_matches_that_tag_or_any_namespace_with_that_value(app):
    archived = writes.add_node(app, type="fact", content="old", tags=["status:archived"])
    other = writes.add_node(app, type="fact", content="other", tags=["status:active"])
    app.store.append("graph.tag", {"node": other.id, "tags": ["archived"]})  # a plain tag, as other tools write them
    state = writes.graph(app)
    assert state.matching(parse("tag:archived"), 0) == {archived.id, other.id}
    assert state.matching(parse("tag:active"), 0) == {other.id}
    assert state.matching(parse("tag:status:archived"), 0) == {archived.id}


def test_a_plain_tier_tag_brings_archived_nodes_into_compose(app):
    writes.add_node(app, type="fact", content="put away", tags=["tier:off-context"])
    assert compose(app, "tag:off-context", 2000).included != []


@pytest.mark.parametrize("query", ["(" * 5000 + "x", "NOT " * 3000 + "x", "x " * 5000, "(" * 60 + "x" + ")" * 60])
def test_absurd_queries_give_a_one_line_error_not_a_traceback(query):
    with pytest.raises(QueryError) as caught:
        parse(query)
    message = str(caught.value)
    assert "\n" not in message and ("nested" in message or "terms" in message)


def test_the_cli_reports_a_deeply_nested_query_in_one_line(capsys):
    assert main(["query", "(" * 3000 + "x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "more than 50 nested parentheses" in err


# Memdown (github.com/Zate/Memdown, internal/query/parser_test.go) implements the same query language;
# its 15 parser cases, each with the tree contextflow builds (None: it must not parse).
MEMDOWN_QUERY_CASES = [
    ("simple type predicate", "type:fact", Leaf("type", "", "fact")),
    ("simple tag predicate", "tag:project:ctx", Leaf("tag", "", "project:ctx")),
    ("AND expression", "type:fact AND tag:project:ctx", And(Leaf("type", "", "fact"), Leaf("tag", "", "project:ctx"))),
    ("OR expression", "type:fact OR type:decision", Or(Leaf("type", "", "fact"), Leaf("type", "", "decision"))),
    ("NOT expression", "NOT type:fact", Not(Leaf("type", "", "fact"))),
    ("created time filter - relative", "created:>24h", Leaf("created", ">", "24h", 86_400_000, relative=True)),
    ("tokens filter", "tokens:<1000", Leaf("tokens", "<", "1000", 1000)),
    ("has predicate", "has:summary", Leaf("has", "", "summary")),
    ("empty query", "", All()),
    ("malformed - missing value", "type:", None),
    ("malformed - unclosed paren", "(type:fact", None),
    ("malformed - unknown key", "unknown:value", None),
    ("tag with tier namespace", "tag:tier:reference", Leaf("tag", "", "tier:reference")),
    (
        "complex query",
        "type:fact AND (tag:tier:reference OR tag:tier:working)",
        And(Leaf("type", "", "fact"), Or(Leaf("tag", "", "tier:reference"), Leaf("tag", "", "tier:working"))),
    ),
    (
        "complex with NOT",
        "(type:fact OR type:decision) AND NOT tag:archived",
        And(Or(Leaf("type", "", "fact"), Leaf("type", "", "decision")), Not(Leaf("tag", "plain", "archived"))),
    ),
]


@pytest.mark.parametrize(("name", "query", "tree"), MEMDOWN_QUERY_CASES, ids=[c[0] for c in MEMDOWN_QUERY_CASES])
def test_memdown_query_parser_cases(name, query, tree):
    if tree is None:
        with pytest.raises(QueryError):
            parse(query)
    else:
        assert parse(query) == tree
