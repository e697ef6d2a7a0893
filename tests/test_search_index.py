"""The tokenizer, the incremental BM25 index and its fold: exact ranking, latest wins, any order."""

from __future__ import annotations

import math
import random
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextflow.core.events import Event
from contextflow.search.docs import FIELD_WEIGHTS, Delete, Patch, Put
from contextflow.search.extractors import extractors
from contextflow.search.ranking import K1, B, recency
from contextflow.search.retrieval import Query, rank
from contextflow.search.tokens import query_terms, stem
from tests import search_oracle as index_module
from tests.search_oracle import SearchIndex

DAY = 86_400_000
NOW = 1_800_000_000_000


def key(ms: int, writer: str = "w", seq: int = 1) -> tuple[int, str, int]:
    return (ms << 16, writer, seq)


def ids(hits) -> list[str]:
    return [hit.doc.doc_id for hit in hits]


def everything(doc) -> float:
    return 1.0


# -- tokenizer -----------------------------------------------------------------------------


def test_code_names_and_paths_yield_the_whole_word_and_its_parts():
    terms = query_terms("TaskReviewService app/Services/task_review.php HTTPServer")
    assert {"taskreviewservice", "task", "review", "servic", "app", "php", "httpserver", "http", "server"} <= set(terms)
    assert "taskreview" in terms  # task_review as one word too


def test_inflections_share_a_stem_and_stopwords_and_single_letters_are_dropped():
    assert {stem(word) for word in ("caching", "caches", "cached", "cache")} == {"cach"}
    assert stem("queries") == stem("query") and stem("running") == "run" and stem("tests") == "test"
    assert query_terms("What is the a b of it") == []
    assert query_terms("cache the caches") == ["cach"]


@pytest.mark.parametrize(
    "words", [("rejected", "rejection"), ("collaborate", "collaboration"), ("specific", "specifically")]
)
def test_derived_forms_share_a_stem_with_their_root(words):
    assert len({stem(word) for word in words}) == 1
    assert len({tuple(query_terms(word)) for word in words}) == 1


def test_a_plural_is_not_mistaken_for_a_name():
    assert query_terms("times") == ["time"] and query_terms("time") == ["time"]
    assert query_terms("Tim") == ["tim"]


def test_non_ascii_words_are_kept_whole():
    assert query_terms("Müller-Lüdenscheidt café") == ["müller", "lüdenscheidt", "café"]


# -- index operations ----------------------------------------------------------------------


def index_with(*ops: tuple[object, tuple[int, str, int]], kind: str = "note") -> SearchIndex:
    index = SearchIndex()
    for op, at in ops:
        index.apply(kind, op, at, at[1])  # type: ignore[arg-type]
    return index


def search(index: SearchIndex, text: str, k: int = 10) -> list[str]:
    return ids(index.search(query_terms(text), k, everything))


def test_a_put_replaces_the_whole_document_so_old_words_stop_matching():
    index = index_with((Put("a", {"text": "redis cache"}), key(1)), (Put("a", {"text": "postgres pool"}), key(2)))
    assert search(index, "redis") == [] and search(index, "postgres") == ["note:a"]
    assert index.visible_count == 1 and set(index.df) == {"postgr", "pool"}


def test_an_older_put_arriving_late_is_ignored():
    index = index_with((Put("a", {"text": "postgres"}), key(2)), (Put("a", {"text": "redis"}), key(1)))
    assert search(index, "postgres") == ["note:a"] and search(index, "redis") == []


def test_a_delete_hides_the_document_and_only_a_newer_put_revives_it():
    index = index_with((Put("a", {"text": "redis"}), key(1)), (Delete("a"), key(2)))
    assert search(index, "redis") == [] and index.visible_count == 0 and index.total_length == 0
    index.apply("note", Put("a", {"text": "redis"}), key(1, "x"), "x")
    assert search(index, "redis") == []
    index.apply("note", Put("a", {"text": "redis again"}), key(3), "w")
    assert search(index, "redis") == ["note:a"]


def test_a_patch_changes_only_its_fields_and_may_arrive_before_the_put():
    put, patch = Put("n", {"text": "old words", "summary": "kept summary"}), Patch("n", {"text": "new words"})
    early = index_with((patch, key(2)), (put, key(1)))
    late = index_with((put, key(1)), (patch, key(2)))
    for index in (early, late):
        assert search(index, "old") == [] and search(index, "new") == ["note:n"] and search(index, "kept") == ["note:n"]
    assert early == late


def test_a_patch_older_than_the_put_or_a_patch_alone_changes_nothing_visible():
    index = index_with((Put("n", {"text": "current"}), key(5)), (Patch("n", {"text": "stale"}), key(4)))
    assert search(index, "stale") == [] and search(index, "current") == ["note:n"]
    orphan = index_with((Patch("m", {"text": "orphan"}), key(1)))
    assert search(orphan, "orphan") == [] and orphan.visible_count == 0


def test_set_like_fields_are_added_and_removed_member_by_member():
    index = index_with(
        (Put("n", {"text": "body"}), key(1)),
        (Patch("n", {"tags.lang:rust": "lang:rust", "tags.area:db": "area:db"}), key(2)),
        (Patch("n", {"tags.lang:rust": ""}), key(3)),
    )
    assert search(index, "rust") == [] and search(index, "db") == ["note:n"]


def test_the_title_field_outweighs_the_body():
    assert FIELD_WEIGHTS["title"] > 1
    index = index_with(
        (Put("body", {"text": "kafka consumer lag notes and more words here"}), key(1)),
        (Put("title", {"title": "kafka", "text": "consumer lag notes and more words here"}), key(1, "v")),
    )
    assert search(index, "kafka") == ["note:title", "note:body"]


@pytest.mark.parametrize("compact_after", [100_000, 3])
def test_lengths_and_postings_stay_consistent_through_many_random_operations(monkeypatch, compact_after):
    monkeypatch.setattr(index_module, "MIN_COMPACT_PAIRS", compact_after)
    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "delta", "omega"]
    index = SearchIndex()
    for n in range(400):
        ref = f"d{rng.randrange(20)}"
        choice = rng.random()
        text = " ".join(rng.choices(words, k=rng.randrange(1, 6)))
        op = Put(ref, {"text": text}) if choice < 0.5 else Patch(ref, {"title": text}) if choice < 0.8 else Delete(ref)
        index.apply("note", op, key(rng.randrange(1, 500), "w", n), "w")
    visible = [doc for doc in index.docs.values() if doc.visible]
    assert index.visible_count == len(visible)
    assert index.total_length == sum(index.length(doc) for doc in visible)
    posted = {doc_id for term in index.postings for doc_id in index.posting(term)}
    assert posted == {doc.doc_id for doc in visible}
    assert index.df == {term: len(index.posting(term)) for term in index.postings}
    pairs = sum(len(p) // 2 for p in index.postings.values())
    assert index.live_pairs == sum(index.df.values()) and index.dead_pairs == pairs - index.live_pairs
    assert all(index.by_num[doc.num] is doc for doc in visible)


# -- ranking -------------------------------------------------------------------------------


def brute_force(index: SearchIndex, terms: list[str]) -> dict[str, float]:
    count, avg = index.visible_count, index.total_length / index.visible_count
    scores: dict[str, float] = {}
    for term in dict.fromkeys(terms):
        posting = index.posting(term)
        idf = math.log(1 + (count - len(posting) + 0.5) / (len(posting) + 0.5))
        for doc_id, tf in posting.items():
            norm = K1 * (1 - B + B * index.length(index.docs[doc_id]) / avg)
            scores[doc_id] = scores.get(doc_id, 0.0) + idf * tf * (K1 + 1) / (tf + norm)
    return scores


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=1, max_value=12))
def test_pruned_top_k_scores_equal_a_brute_force_bm25(seed, k):
    rng = random.Random(seed)
    vocabulary = [f"w{n}" for n in range(30)]
    weights = [1 / (n + 1) for n in range(30)]  # a few common words, many rare ones
    index = SearchIndex()
    for n in range(150):
        text = " ".join(rng.choices(vocabulary, weights, k=rng.randrange(1, 15)))
        index.apply("note", Put(f"d{n}", {"text": text, "title": rng.choice(vocabulary)}), key(1, "w", n), "w")
    terms = rng.sample(vocabulary, rng.randrange(1, 6))
    keep = {f"note:d{n}" for n in range(150) if rng.random() < 0.7}
    got = index.search(terms, k, lambda doc: 1.0 if doc.doc_id in keep else 0.0)
    expected = sorted((s for d, s in brute_force(index, terms).items() if d in keep), reverse=True)[:k]
    assert [round(hit.score, 9) for hit in got] == [round(score, 9) for score in expected]


def test_recency_is_mild_and_breaks_ties_toward_newer_records():
    assert recency(NOW, NOW) == 1.0
    assert 0.85 < recency(NOW - 365 * DAY, NOW) < 0.87
    index = index_with(
        (Put("old", {"text": "flaky websocket test"}, {"project": "web"}), key(NOW - 200 * DAY)),
        (Put("new", {"text": "flaky websocket test"}, {"project": "web"}), key(NOW - DAY)),
    )
    hits = rank(index, Query("websocket", 5), NOW)
    assert ids(hits) == ["note:new", "note:old"] and hits[1].score / hits[0].score > 0.85


def test_rank_filters_by_kind_and_project_and_treats_projectless_documents_as_everywhere():
    index = SearchIndex()
    index.apply("note", Put("a", {"text": "deploy"}, {"project": "web"}), key(1), "w")
    index.apply("note", Put("b", {"text": "deploy"}, {"project": "api"}), key(2), "w")
    index.apply("context", Put("c", {"text": "deploy"}), key(3), "w")
    assert set(ids(rank(index, Query("deploy", 10, project="web"), NOW))) == {"note:a", "context:c"}
    assert ids(rank(index, Query("deploy", 10, kinds=frozenset({"context"})), NOW)) == ["context:c"]
    assert ids(rank(index, Query("deploy", 1, project="api", kinds=frozenset({"note"})), NOW)) == ["note:b"]


# -- the view: any order, any writer -------------------------------------------------------

KINDS = (
    "note",
    "conversation.save",
    "context.set",
    "context.delete",
    "graph.node",
    "graph.node_update",
    "graph.node_delete",
    "graph.tag",
    "graph.untag",
    "timeline.thought",
    "timeline.thought_update",
)
WORDS = ("redis", "cache", "deploy", "rollback", "kafka", "postgres")


def event_data(kind: str, target: int, words: list[str]) -> dict:
    text = " ".join(words)
    return {
        "note": {"text": text, "project": "p", "session_id": "s" if target % 2 else "", "agent": "maria"},
        "conversation.save": {"conversation_id": f"c{target}", "topic": text, "summary": text},
        "context.set": {"key": f"fact:k{target}", "value": {"text": text}},
        "context.delete": {"key": f"fact:k{target}"},
        "graph.node": {"type": "fact", "content": text, "tags": [f"topic:{words[0]}"] if words else []},
        "graph.node_update": {"node": f"e{target}", "content": text},
        "graph.node_delete": {"node": f"e{target}"},
        "graph.tag": {"node": f"e{target}", "tags": [f"topic:{w}" for w in words]},
        "graph.untag": {"node": f"e{target}", "tags": [f"topic:{w}" for w in words]},
        "timeline.thought": {"thread_id": "t", "content": text, "agent": "claude"},
        "timeline.thought_update": {"thought_id": f"e{target}", "content": text, "status": "resolved"},
    }[kind]


event_rows = st.lists(
    st.tuples(
        st.sampled_from(("alpha", "beta")),
        st.sampled_from(KINDS),
        st.integers(0, 3),
        st.lists(st.sampled_from(WORDS), max_size=3),
        st.integers(1, 40),
    ),
    max_size=25,
)


def to_events(rows) -> list[Event]:
    seqs: dict[str, int] = {}
    events = []
    for n, (writer, kind, target, words, ms) in enumerate(rows):
        seqs[writer] = seqs.get(writer, 0) + 1
        events.append(Event(f"e{n}", writer, seqs[writer], ms << 16, kind, event_data(kind, target, words)))
    return events


def fold(events: list[Event]) -> SearchIndex:
    view = index_module.OracleView()
    state = view.initial()
    for event in events:
        view.apply(state, event)
    return state


@settings(max_examples=80, deadline=None)
@given(event_rows, st.randoms(use_true_random=False))
def test_the_index_and_its_rankings_are_the_same_whatever_order_events_arrive_in(rows, rng):
    events = to_events(rows)
    shuffled = list(events)
    rng.shuffle(shuffled)
    first = fold(events)
    with mock.patch.object(index_module, "MIN_COMPACT_PAIRS", 1):  # and however often it compacts
        second = fold(shuffled)
    assert first == second  # neighbour fields and sequences included
    for word in WORDS:
        left = [(hit.doc.doc_id, round(hit.score, 9)) for hit in first.search([word], 50, everything)]
        right = [(hit.doc.doc_id, round(hit.score, 9)) for hit in second.search([word], 50, everything)]
        assert left == right  # the same hits in the same order, ties included, on every machine


def test_odd_stored_data_is_indexed_quietly_and_a_failing_extractor_skips_only_its_event(monkeypatch):
    def broken(event: Event) -> list:
        raise KeyError("surprise")

    monkeypatch.setitem(extractors(), "handoff", ("handoff", broken))
    state = fold(
        [
            Event("x", "w", 1, 1 << 16, "conversation.save", {"conversation_id": "c", "topics": "x", "decisions": [3]}),
            Event("y", "w", 2, 2 << 16, "handoff", {"summary": "lost"}),
            Event("z", "w", 3, 3 << 16, "note", {"text": "still indexed", "tags": "not-a-list"}),
        ]
    )
    assert state.skipped_events == 1
    assert ids(state.search(query_terms("indexed"), 5, everything)) == ["note:z"] and state.visible_count == 2
