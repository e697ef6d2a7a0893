"""The graph view is a pure fold: the same set of events gives the same graph in any order."""

from hypothesis import given, settings
from hypothesis import strategies as st

from contextflow.core.events import Event
from tests.conftest import open_app
from tests.graph_fold import FoldedGraph, FoldedView

NODES = ("n1", "n2", "n3")
WRITERS = ("alpha", "beta")
TAGS = ("tier:working", "tier:reference", "project:x")
META_VALUES = st.none() | st.integers(0, 3)

op = st.one_of(
    st.tuples(
        st.just("graph.node_update"),
        st.sampled_from(NODES),
        st.fixed_dictionaries({"content": st.text(max_size=6), "type": st.sampled_from(("fact", "decision"))}),
    ),
    st.tuples(
        st.just("graph.node_update"),
        st.sampled_from(NODES),
        st.fixed_dictionaries({"metadata": st.dictionaries(st.sampled_from("ab"), META_VALUES)}),
    ),
    st.tuples(
        st.sampled_from(("graph.tag", "graph.untag")),
        st.sampled_from(NODES),
        st.builds(lambda t: {"tags": [t]}, st.sampled_from(TAGS)),
    ),
    st.tuples(st.just("graph.node_delete"), st.sampled_from(NODES), st.just({})),
    st.tuples(
        st.sampled_from(("graph.edge", "graph.edge_delete")),
        st.sampled_from(NODES),
        st.builds(
            lambda to, kind: {"to": to, "type": kind},
            st.sampled_from(NODES),
            st.sampled_from(("DEPENDS_ON", "SUPERSEDES")),
        ),
    ),
    st.tuples(
        st.sampled_from(("graph.view", "graph.view_delete")),
        st.just(""),
        st.builds(
            lambda q, b: {"name": "v", "query": q, "budget": b}, st.sampled_from(("", "type:fact")), st.integers(1, 5)
        ),
    ),
)


def build(rows, clash_ms: bool) -> list[Event]:
    events = [
        Event(
            node,
            "alpha",
            n + 1,
            (1000 + n) << 16,
            "graph.node",
            {
                "type": "fact",
                "content": node,
                "tags": ["project:x"],
                "links": [{"to": "n1", "type": "DEPENDS_ON"}] if node == "n2" else [],
            },
        )
        for n, node in enumerate(NODES)
    ]
    seqs = {"alpha": len(NODES), "beta": 0}
    for n, (writer, (kind, node, data)) in enumerate(rows):
        seqs[writer] += 1
        payload = dict(data)
        if kind.startswith("graph.edge"):
            payload = {"from": node, **payload}
        elif node:
            payload["node"] = node
        ms = 2000 if clash_ms else 2000 + n  # equal clocks: the writer id breaks the tie
        events.append(Event(f"e{n}", writer, seqs[writer], (ms << 16) + (0 if clash_ms else n), kind, payload))
    return events


def fold(events) -> FoldedGraph:
    view = FoldedView()
    state = view.initial()
    for event in events:
        view.apply(state, event)
    return state


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(WRITERS), op), max_size=25), st.booleans(), st.randoms(use_true_random=False))
def test_folding_graph_events_in_any_order_gives_the_same_graph(rows, clash_ms, rng):
    events = build(rows, clash_ms)
    shuffled = list(events)
    rng.shuffle(shuffled)
    assert fold(events) == fold(shuffled)


def test_a_later_untag_wins_over_an_earlier_tag_whatever_the_arrival_order():
    tag = Event("t", "a", 2, 5 << 16, "graph.tag", {"node": "n", "tags": ["tier:working"]})
    untag = Event("u", "b", 1, 6 << 16, "graph.untag", {"node": "n", "tags": ["tier:working"]})
    node = Event("n", "a", 1, 1 << 16, "graph.node", {"type": "fact", "content": "x"})
    for order in ([node, tag, untag], [untag, tag, node]):
        state = fold(order)
        assert state.tags_of("n") == set() and "tier:working" not in state.by_tag


def test_an_update_stamped_before_its_nodes_creation_loses_to_it_whatever_the_arrival_order():
    # another machine's clock ran behind: its update of fields the creation never set is older than the node
    node = Event("n", "a", 1, 9 << 16, "graph.node", {"type": "fact", "content": "made", "metadata": {"m": 1}})
    early = Event("u", "b", 1, 5 << 16, "graph.node_update", {"node": "n", "summary": "s", "metadata": {"k": 2}})
    later = Event("v", "b", 2, 12 << 16, "graph.node_update", {"node": "n", "metadata": {"z": 3}})
    states = [fold(order) for order in ([node, early, later], [early, node, later], [later, early, node])]
    assert states[0] == states[1] == states[2]
    assert states[0].nodes["n"].summary == "" and states[0].nodes["n"].metadata == {"m": 1, "z": 3}


def test_edges_of_a_deleted_node_disappear_with_it(app):
    from contextflow.graph import writes

    a = writes.add_node(app, type="fact", content="a")
    b = writes.add_node(app, type="decision", content="b")
    writes.link(app, b.id, a.id, "DEPENDS_ON")
    writes.delete_node(app, a.id)
    state = writes.graph(app)
    assert state.edges_out(b.id) == [] and state.edges_in(b.id) == [] and state.node(a.id) is None


def test_a_second_writer_sees_the_first_writers_graph(app):
    from contextflow.graph import writes

    a = writes.add_node(app, type="fact", content="shared fact", tags=["tier:reference"])
    other = open_app("writer-b")
    try:
        b = writes.add_node(other, type="decision", content="built on it", links=[writes.Link(a.id, "DEPENDS_ON")])
        assert writes.graph(app).edge_live(b.id, a.id, "DEPENDS_ON")
        assert writes.graph(other).tags_of(a.id) == {"tier:reference"}
    finally:
        other.close()


def test_malformed_graph_events_are_ignored_not_fatal():
    bad = [
        Event("x1", "a", 1, 1 << 16, "graph.edge", {"from": 1, "to": None}),
        Event("x2", "a", 2, 2 << 16, "graph.tag", {"node": "n", "tags": "not-a-list"}),
        Event("x3", "a", 3, 3 << 16, "graph.view", {"name": "v", "budget": "lots"}),
        Event("x4", "a", 4, 4 << 16, "graph.node_update", {"node": 7}),
    ]
    state = fold(bad)
    assert state.live == set() and state.saved_view("v").budget == 50_000
