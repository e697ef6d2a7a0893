"""Composition: never over budget, pinned then tier then recency, and it says what it left out."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextflow.core.errors import InputError
from contextflow.core.events import Event
from contextflow.core.text import estimate_tokens
from contextflow.graph import writes
from contextflow.graph.compose import compose, compose_ids
from contextflow.graph.stored import StoredGraph
from tests.graph_fold import ScratchView
from tests.table import run

AT = 1_700_000_000_000


def synthetic(sizes_and_tiers):
    """A graph folded from events directly (fast enough for property tests)."""
    view = ScratchView()
    state = view.initial()
    for n, (size, tier, with_summary) in enumerate(sizes_and_tiers):
        text = "x" * size + f" node {n}" + ("\nsecond line \x1b[31mred\x1b[0m" if n % 3 == 0 else "")
        data = {"type": "fact", "content": text, "tags": [tier] if tier else []}
        if with_summary:
            data["summary"] = f"short {n}"
        view.apply(state, Event(f"n{n:03d}", "w", n + 1, (AT - 1000 + n) << 16, "graph.node", data))
    return StoredGraph(state)


nodes = st.lists(
    st.tuples(
        st.integers(0, 3000), st.sampled_from(("", "tier:pinned", "tier:reference", "tier:working")), st.booleans()
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes, st.integers(90, 6000))
def test_the_composed_text_never_exceeds_the_budget(specs, budget):
    state = synthetic(specs)
    result = compose_ids(state, list(state.live), budget, at_ms=AT)
    assert estimate_tokens(result.text) <= budget
    assert result.tokens == estimate_tokens(result.text)
    assert sorted(result.included + [d.id for d in result.dropped]) == sorted(state.live)
    assert f"<!-- ctx: {len(result.included):,} nodes, {result.tokens:,} tokens" in result.text


def test_pinned_come_first_then_reference_then_working_then_newest(app):
    old_ref = writes.add_node(app, type="fact", content="old reference", tags=["tier:reference"])
    working = writes.add_node(app, type="fact", content="working note", tags=["tier:working"])
    new_ref = writes.add_node(app, type="fact", content="new reference", tags=["tier:reference"])
    plain = writes.add_node(app, type="fact", content="no tier at all")
    pinned = writes.add_node(app, type="fact", content="pinned one", tags=["tier:pinned"])
    result = compose(app, "type:fact", 10_000)
    assert result.included == [pinned.id, new_ref.id, old_ref.id, working.id, plain.id]


def test_what_does_not_fit_is_dropped_by_priority_and_reported(app):
    pinned = writes.add_node(app, type="fact", content="keep me", tags=["tier:pinned"])
    big = writes.add_node(app, type="fact", content="y" * 4000, tags=["tier:reference"])
    small = writes.add_node(app, type="observation", content="small but last")
    result = compose(app, "", 200)
    assert result.included == [pinned.id, small.id]
    assert [d.id for d in result.dropped] == [big.id] and result.dropped[0].tokens == 1000
    assert "1 did not fit" in result.text.splitlines()[0]
    assert big.id in result.report() and estimate_tokens(result.text) <= 200


def test_a_node_too_big_for_the_budget_is_shown_by_its_summary(app):
    big = writes.add_node(
        app, type="source", content="z" * 8000, summary="The README, in short", tags=["tier:reference"]
    )
    result = compose(app, "", 300)
    assert result.summarized == [big.id] and "The README, in short" in result.text and "zzzz" not in result.text


def test_sections_follow_the_seed_format_with_dependencies_and_rationale(app):
    fact = writes.add_node(app, type="fact", content="Single binary wanted", tags=["tier:reference"])
    decision = writes.add_node(
        app,
        type="decision",
        content="Chose Go",
        tags=["tier:reference"],
        metadata={"rationale": "no runtime"},
        links=[writes.Link(fact.id, "DEPENDS_ON")],
    )
    writes.add_node(app, type="observation", content="parser half done\nnext: NOT", tags=["tier:working"])
    text = compose(app, None, 5000).text
    assert text.startswith("<!-- ctx: 3 nodes, ") and text.rstrip().endswith("<!-- ctx:end -->")
    facts, decisions, working = text.index("## Facts"), text.index("## Decisions"), text.index("## Working Context")
    assert facts < decisions < working
    assert f'- [decision:{decision.id} by "unknown" on "writer-a" ' in text
    assert "  - Rationale:\n    > no runtime" in text and f"  - Depends on: [fact:{fact.id}]" in text
    assert "  > parser half done\n  > next: NOT" in text  # stored text is quoted, its first line too


def test_archived_and_superseded_nodes_stay_out_unless_asked_for(app):
    old = writes.add_node(app, type="fact", content="old way", tags=["tier:reference"])
    writes.add_node(app, type="fact", content="new way", tags=["tier:reference"], supersedes=old.id)
    gone = writes.add_node(app, type="fact", content="archived", tags=["tier:off-context"])
    result = compose(app, "type:fact", 5000)
    assert old.id not in result.included and gone.id not in result.included
    assert result.excluded == {"archived (tier:off-context)": 1, "superseded": 1}
    assert gone.id in compose(app, "tag:tier:off-context", 5000).included
    assert gone.id in compose(app, "type:fact", 5000, include_archived=True).included
    assert old.id in compose(app, "type:fact", 5000, include_superseded=True).included


def test_a_saved_view_supplies_query_and_budget_and_a_given_budget_overrides_it(app):
    writes.add_node(app, type="fact", content="f" * 2000)
    writes.create_view(app, "facts", "type:fact", 150)
    assert compose(app, view="facts").budget == 150 and compose(app, view="facts").dropped
    assert compose(app, view="facts", budget=5000).dropped == []


def test_a_budget_smaller_than_the_frame_is_refused(app):
    with pytest.raises(InputError, match="budget 10 is too small"):
        compose(app, "", 10)
    with pytest.raises(InputError, match=r"budget.* must be from 1 to 2000000, got 0"):  # the table's row
        run(app, "graph_compose", query="", budget=0)


def test_stored_control_sequences_do_not_reach_the_output(app):
    writes.add_node(app, type="fact", content="safe\x1b[31m red\x07 text")
    text = compose(app, "", 1000).text
    assert "\x1b" not in text and "\x07" not in text and "safe red text" in text


def test_compose_ids_accepts_an_empty_candidate_list(app):
    state = writes.graph(app)
    result = compose_ids(state, [], 100, at_ms=AT)
    assert result.included == [] and result.text.startswith("<!-- ctx: 0 nodes")


def test_identical_nodes_from_two_writers_are_listed_once(app, tmp_path):
    from tests.conftest import open_app

    writes.add_node(app, type="fact", content="Deploys run on Fridays", tags=["tier:reference"])
    other = open_app("writer-b")
    try:
        writes.graph(other)
        other.store.append(*writes.node_item(type="fact", content="Deploys run on Fridays", tags=["tier:reference"]))
    finally:
        other.close()
    composed = compose(app, "type:fact", 2000)
    assert composed.text.count("Deploys run on Fridays") == 1 and len(composed.included) == 1
    assert composed.excluded == {"identical copies": 1}


def test_a_budget_that_fits_no_node_says_the_least_budget_that_does(app):
    writes.add_node(app, type="fact", content="User prefers Go for services", tags=["tier:reference"])
    small = compose(app, None, 50)
    assert small.included == [] and small.minimum_budget > 50
    assert f"use a budget of at least {small.minimum_budget}" in small.report()
    assert small.as_dict()["minimum_budget"] == small.minimum_budget
    enough = compose(app, None, small.minimum_budget)
    assert len(enough.included) == 1 and enough.minimum_budget == 0
    assert compose(app, None, small.minimum_budget - 1).included == []


def test_a_budget_below_the_frame_names_the_least_budget_that_fits_a_node(app):
    writes.add_node(app, type="fact", content="User prefers Go for services", tags=["tier:reference"])
    with pytest.raises(InputError, match=r"budget 10 is too small: .*use a budget of at least \d+"):
        compose(app, None, 10)


@pytest.mark.parametrize("on_disk", [True, False])
def test_archived_nodes_stay_out_of_the_default_composition_and_their_summary_stands_in(app, monkeypatch, on_disk):
    """`NOT tag:tier:*` and `created:>24h` let fresh nodes in; neither asks for archived ones."""
    from contextflow.core.tables import Tables
    from contextflow.graph.compose import DEFAULT_QUERY, scoped_query

    if not on_disk:  # read beside the logs' rest
        monkeypatch.setattr(Tables, "serves", lambda *_a, **_k: False)
    first = writes.add_node(app, type="observation", content="tried the lexer cache: 3x faster")
    second = writes.add_node(app, type="observation", content="the cache key ignored the locale")
    kept = writes.add_node(app, type="observation", content="still open: the parser's error spans")
    summary = "lexer cache: 3x faster once keyed by locale"
    done = writes.summarize(app, [first.id, second.id], summary, archive_sources=True)
    for query in (
        DEFAULT_QUERY,
        scoped_query(DEFAULT_QUERY, "web"),
        "NOT tag:tier:*",
        "tag:tier:* OR NOT type:decision",
    ):
        for first_ranked in (None, 500):
            result = compose(app, query, 5000, first=first_ranked)
            assert first.id not in result.included and second.id not in result.included, query
            assert done.id in result.included and kept.id in result.included, query
            assert result.excluded.get("archived (tier:off-context)", 0) in (0, 2), query
    assert first.id in compose(app, "tag:tier:off-context", 5000).included  # asked for by name
    assert first.id in compose(app, "NOT NOT tag:off-context", 5000).included
    assert first.id in compose(app, DEFAULT_QUERY, 5000, include_archived=True).included


def test_a_session_start_shows_the_summary_not_the_observations_it_archived(app, tmp_path):
    from contextflow.adapters.session_start import session_start

    sources = [writes.add_node(app, type="observation", content=f"raw observation {n} about the lexer") for n in (1, 2)]
    writes.summarize(app, [node.id for node in sources], "the lexer caches per locale", archive_sources=True)
    told = session_start(app, tmp_path, 2_000)
    assert "the lexer caches per locale" in told and "raw observation" not in told
