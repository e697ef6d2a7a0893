"""Retrieval quality on two hand-written fixtures (tests/fixtures/retrieval): 225 records and 66 questions;
multi-session dialogs and questions by type."""

from __future__ import annotations

from contextflow.app import App
from tests.fixtures.retrieval import dialogs
from tests.fixtures.retrieval.evaluate import fixture, load, recall_at

TARGET_RECALL = 0.9


def test_the_fixture_is_big_enough_to_mean_something():
    records, queries = fixture()
    assert len(records) >= 200 and len([q for q in queries if q["shares_words"]]) >= 40
    assert {item["kind"] for item in records} == {"conversation", "note", "handoff"}


def test_recall_at_5_is_at_least_0_9_for_questions_that_share_words_with_their_answer(app: App):
    records, queries = fixture()
    ids = load(app, records)
    recall = recall_at(app, ids, [q for q in queries if q["shares_words"]], k=5)
    print(f"recall@5 = {recall.value:.3f} ({recall.hits}/{recall.asked})")
    assert recall.value >= TARGET_RECALL, "\n".join(f"{m.query!r} -> {m.target}, got {m.found}" for m in recall.misses)


def test_the_dialog_fixture_is_big_enough_and_its_labels_hold():
    turns, asked = dialogs.turns(), dialogs.questions()
    assert len(turns) >= 250 and len(asked) >= 80
    assert all(sum(q.type == kind for q in asked) >= 20 for kind in dialogs.TYPES)
    assert {turn.kind for turn in turns} == {"note", "thought"} and len({turn.speaker for turn in turns}) >= 6
    assert dialogs.problems() == []
