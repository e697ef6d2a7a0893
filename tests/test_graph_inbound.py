"""Graph input that does not pass the operations table: `<ctx:...>` directives from a transcript are
checked at their own boundary (graph/inbound.py), so a bad one fails alone, with its reason, and
writes nothing, while the good ones beside it are carried out."""

import re

import pytest

from contextflow.graph import writes
from contextflow.graph.directives import Runner, parse


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('<ctx:remember type="note">x</ctx:remember>', "node type must be one of fact, decision"),
        ("<ctx:remember>  </ctx:remember>", "content is required"),
        (f'<ctx:remember tags="{",".join(["a:b"] * 51)}">x</ctx:remember>', "51 tags given; the limit is 50"),
        ('<ctx:remember tags="nocolon">x</ctx:remember>', "tag 'nocolon' is not valid"),
        ('<ctx:link to="abc"/>', "the edge's source: node id.* is required"),
        ('<ctx:link from="abc" to="abd" type="LIKES"/>', "edge type must be one of"),
        ('<ctx:supersede old="abc"/>', "the edge's source: node id.* is required"),
        ("<ctx:expand/>", "node.* is required"),
        ("<ctx:summarize>text</ctx:summarize>", "summarize needs the ids"),
    ],
)
def test_a_bad_directive_fails_alone_with_its_reason_and_writes_nothing(app, text, reason):
    good = '<ctx:remember type="fact">kept</ctx:remember>'
    before = app.store.event_count
    outcome = Runner(app, None, "claude").run(parse(text + "\n" + good))
    assert len(outcome.errors) == 1 and outcome.errors[0].startswith("<ctx:")
    assert re.search(reason, outcome.errors[0]), outcome.errors[0]
    assert any(reason_line.startswith("## ctx error") for reason_line in outcome.pending)
    assert app.store.event_count == before + 1  # only the good directive wrote
    assert [node.content for node in writes.graph(app).nodes.values()] == ["kept"]
