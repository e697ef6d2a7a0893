"""The ranking's levers (search/ranking.py, search/when.py): the neighbour field, a named speaker, the
session prior, dates, the k1 scale; CONTEXTFLOW_RANKING turns each off; weak matches are said to be."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextflow.adapters.cli import main
from contextflow.app import App
from contextflow.core import timeutil
from contextflow.core.clock import COUNTER_BITS, HybridClock
from contextflow.core.errors import InputError
from contextflow.core.events import Event, encode
from contextflow.core.log import log_path
from contextflow.records import core as records
from contextflow.search import derived, ranking, retrieval, when
from contextflow.sessions import core as sessions
from contextflow.timeline import core as timeline
from tests.conftest import call_with_data, connect, text_of
from tests.fixtures.retrieval import dialogs

NOW = dialogs.NOW_MS


def levers(patch: pytest.MonkeyPatch, spec: str) -> None:
    """CONTEXTFLOW_RANKING as this process resolved it (App.open's environment), changed for a while."""
    from contextflow.core import settings

    current = settings.resolved() or settings.Settings()
    patch.setattr(settings, "_resolved", [current._replace(ranking=spec)])


class Clock:
    def __init__(self) -> None:
        self.ms = 0

    def __call__(self) -> int:
        return self.ms


def at(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


@pytest.fixture
def timed() -> Iterator[tuple[App, Clock]]:
    """An app whose writes happen when the test says."""
    clock = Clock()
    opened = App.open(clock=HybridClock(clock))
    yield opened, clock
    opened.close()


def say(app: App, clock: Clock, moment: str, session: str, agent: str, text: str) -> str:
    clock.ms = at(moment)
    return sessions.append_note(app, agent=agent, text=text, project="shop", session_id=session).id


def found(app: App, query: str, limit: int = 5, **options: object) -> list[str]:
    return [shown.hit.doc.ref for shown in retrieval.get_context(app, query=query, limit=limit, now_ms=NOW,
                                                                 **options).shown]  # fmt: skip


@pytest.fixture
def dialog(timed: tuple[App, Clock]) -> tuple[App, dict[str, str]]:
    """Two speakers, two sessions months apart, and one other session on another subject."""
    app, clock = timed
    ids = {
        "ask": say(app, clock, "2026-01-08T09:00", "s1", "claude", "Should the price cache keep a 5 minute TTL?"),
        "reply": say(app, clock, "2026-01-08T09:03", "s1", "maria", "Thirty seconds, marketing runs flash sales."),
        "other": say(app, clock, "2026-01-08T09:06", "s1", "claude", "Noted, I will change the price cache TTL."),
        "march": say(app, clock, "2026-03-10T10:00", "s2", "claude", "The price cache TTL stays at thirty seconds."),
        "march-maria": say(app, clock, "2026-03-10T10:03", "s2", "maria", "Good, and the price cache is fine."),
        "far": say(app, clock, "2026-04-01T10:00", "s3", "tom", "The upload crashed on old phones, a price to pay."),
    }
    return app, ids


def test_a_short_reply_is_found_by_the_words_of_the_entry_before_it(dialog):
    app, ids = dialog
    assert ids["reply"] in found(app, "price cache TTL", limit=10)
    with pytest.MonkeyPatch.context() as patch:
        levers(patch, "-neighbours")
        assert ids["reply"] not in found(app, "price cache TTL", limit=10)


def test_the_neighbour_field_follows_an_entry_arriving_between_two_others(timed):
    app, clock = timed
    first = say(app, clock, "2026-01-08T09:00", "s1", "claude", "Kafka consumer lag on the clickstream topic")
    last = say(app, clock, "2026-01-08T09:10", "s1", "claude", "Yes, do that.")
    assert last in found(app, "kafka lag")
    # another machine's line, written at 09:05, synced only now
    data = {"agent": "maria", "text": "Repartition by session id", "project": "shop", "session_id": "s1"}
    middle = Event("late-note", "writer-b", 1, at("2026-01-08T09:05") << COUNTER_BITS, "note", data)
    with open(log_path(app.store.folder, "writer-b"), "ab") as log:
        log.write(encode(middle))
    middle = middle.id
    assert last not in found(app, "kafka lag", limit=10)  # its neighbour is now the repartition note
    assert middle in found(app, "kafka lag") and first in found(app, "kafka lag")
    assert last in found(app, "repartition")


def test_a_named_speaker_lifts_that_speakers_entries(dialog):
    app, ids = dialog
    speakers = {ref: name for name, ref in ids.items()}
    assert [speakers[ref] for ref in found(app, "What did maria say about the price cache TTL?")][:2] == [
        "march-maria", "reply"]  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        levers(patch, "-speaker")
        assert speakers[found(app, "What did maria say about the price cache TTL?")[0]] in ("ask", "other", "march")


def test_a_speaker_is_named_only_beside_a_speech_verb_or_capitalised():
    assert ranking.speaker_words("what did maria say about X") == ["what", "did", "maria", "say", "about", "x"]
    assert ranking.speaker_words("Why the server-side cursor in the export") == []
    assert ranking.speaker_words("the plan Maria made") == ["maria"]
    assert (
        ranking.agent_terms("claude_code") == ("claude_code", "claude") and ranking.speaker_of("Gemini-CLI") == "gemini"
    )


def test_a_named_month_lifts_the_entries_of_that_month(timed):
    app, clock = timed
    january = say(app, clock, "2026-01-08T09:00", "s1", "claude", "The price cache TTL: five minutes.")
    march = say(app, clock, "2026-03-10T10:00", "s2", "claude", "The price cache TTL: thirty seconds.")
    may = say(app, clock, "2026-05-10T10:00", "s3", "claude", "The price cache TTL: ten seconds.")
    assert found(app, "price cache TTL in March 2026")[0] == march
    assert found(app, "the price cache TTL in January")[0] == january
    assert found(app, "what was the price cache TTL in 2026?")[0] == may  # all match: the newest
    with pytest.MonkeyPatch.context() as patch:
        levers(patch, "-dates")
        assert found(app, "price cache TTL in March 2026")[0] == may


def test_a_when_question_favours_entries_that_state_a_time(timed):
    app, clock = timed
    dated = say(app, clock, "2026-02-01T09:00", "s2", "tom", "The app release goes out on Friday.")
    plain = say(app, clock, "2026-02-01T09:30", "s1", "tom", "The app release is planned and ready.")
    assert found(app, "When is the release?")[0] == dated
    with pytest.MonkeyPatch.context() as patch:
        levers(patch, "-dates")
        assert found(app, "When is the release?")[0] == plain


def test_the_session_prior_lifts_entries_of_the_session_that_matches_best(timed):
    app, clock = timed
    lone = say(app, clock, "2026-02-01T09:00", "s9", "tom", "Webhook retries.")
    crowd = [say(app, clock, f"2026-02-02T09:0{n}", "s1", "tom", text) for n, text in enumerate(
        ["Webhook retries and backoff.", "The webhook signature check.", "Stripe webhook events table."])]  # fmt: skip
    assert found(app, "webhook retries")[0] in (lone, crowd[0])
    ranked = found(app, "webhook retries backoff signature")
    assert ranked.index(crowd[1]) < ranked.index(lone)


def test_a_session_with_a_strong_match_outweighs_one_of_many_weak_matches(timed):
    """The same words in two sessions: the one beside a strong match ranks first, not the one beside
    many entries that hold only the commonest query word."""
    app, clock = timed
    say(app, clock, "2026-02-01T09:00", "s1", "tom", "Webhook retries need exponential backoff.")
    beside_strong = say(app, clock, "2026-02-01T09:01", "s1", "tom", "Check the signature.")
    for n in range(8):
        say(app, clock, f"2026-02-02T09:0{n}", "s2", "tom", f"The webhook {n} payload.")
    beside_weak = say(app, clock, "2026-02-02T10:00", "s2", "tom", "Check the signature.")
    with pytest.MonkeyPatch.context() as patch:
        levers(patch, "-neighbours")
        ranked = found(app, "webhook backoff signature")
    assert ranked.index(beside_strong) < ranked.index(beside_weak)


# -- settings --------------------------------------------------------------------------------


def test_contextflow_ranking_turns_levers_off_one_by_one_or_all():
    assert ranking.parse("") == ranking.Settings()
    assert ranking.parse("-speaker, -dates") == ranking.Settings(speaker=False, dates=False)
    assert ranking.parse("none") == ranking.Settings(False, False, False, False, False)
    assert ranking.parse("none,+session") == ranking.Settings(False, False, True, False, False)
    assert ranking.parse("scale=3").scale == 3
    with pytest.raises(InputError) as caught:
        ranking.parse("-colour")
    assert "'-colour' is not a lever" in str(caught.value) and "neighbours, speaker" in str(caught.value)


def test_the_k1_lever_sets_the_weight_scale_which_the_index_versions_carry(monkeypatch, app):
    assert ranking.weight_scale() == ranking.TUNED_SCALE  # what the leave-one-out run chose
    levers(monkeypatch, "-k1")
    assert ranking.weight_scale() == 1
    levers(monkeypatch, "scale=3")  # k1 1.2 / 3: every word counted three times
    assert ranking.weight_scale() == 3 and derived.version_key()["scale"] == 3
    sessions.append_note(app, agent="tom", text="kafka lag kafka", project="p")
    index = derived.search_for(app.store).index()
    assert index.scale == 3 and found(app, "kafka")


def test_dates_and_time_words_are_read_from_text():
    assert when.named_dates("what did we decide in March 2026") == ((2026, 3),)
    assert when.named_dates("notes from 2025-11 and May") == ((2025, 11), (None, 5))
    assert when.named_dates("what may break in mar") == ()
    assert when.named_dates("the Mar 3 release") == ((None, 3),)
    assert when.asks_when("When is the demo?") and when.asks_when("which week was it")
    assert not when.asks_when("how long is the TTL")
    assert when.has_time_words("Booked: March 26, 20:00") and when.has_time_words("the 18th is fine")
    assert when.has_time_words("Target end of May.") and not when.has_time_words("we may go, 5 minutes")
    assert when.date_matches(at("2026-03-10T10:00"), ((2026, 3),)) and not when.date_matches(at("2026-03-10T10:00"),
                                                                                             ((None, 4),))  # fmt: skip


# -- weak matches ----------------------------------------------------------------------------


def test_a_made_up_word_gets_the_closest_records_marked_weak(dialog):
    app, _ = dialog
    result = retrieval.get_context(app, query="flibbertigibbet price", now_ms=NOW)
    assert result.shown and result.weak and all(shown.hit.weak for shown in result.shown)
    assert "Nothing stored matches this strongly; the closest" in result.text
    assert result.text.count("| match=weak") == len(result.shown)
    data = result.as_dict()
    assert data["weak"] is True and all(item["weak"] is True for item in data["results"])
    assert retrieval.get_context(app, query="flibbertigibbet", now_ms=NOW).shown == []


def test_a_good_match_is_not_weak_and_a_partial_one_is_marked(dialog):
    app, _ = dialog
    result = retrieval.get_context(app, query="price cache TTL thirty seconds", now_ms=NOW)
    assert not result.weak and not result.shown[0].hit.weak and "Nothing stored" not in result.text
    assert result.as_dict()["results"][0]["weak"] is False
    partial = retrieval.get_context(app, query="price cache TTL thirty seconds upload", limit=10, now_ms=NOW)
    flags = [shown.hit.weak for shown in partial.shown]
    assert flags[0] is False and (True not in flags or "only partly (match=weak)" in partial.text)


def test_weak_flags_weigh_unknown_words_against_known_ones():
    words = [("xylophon",), ("deploy",)]
    frequency = {"deploy": 5}.get
    assert ranking.weak_flags(words, lambda t: frequency(t) or 0, 100, [{"deploy"}]) == [True]
    words = [("deploy",), ("cach",), ("ttl",)]
    assert ranking.weak_flags(words, lambda t: 5, 100, [{"deploy", "cach"}, {"ttl"}, set()]) == [False, False, True]
    assert ranking.asked_words("What did maria say in March 2026 about TaskReview", ["maria"])[-1] == (
        "taskreview", "task", "review")  # fmt: skip


@pytest.mark.anyio
async def test_the_tool_and_the_cli_flag_weak_matches(monkeypatch, capsys):
    monkeypatch.setenv("CONTEXTFLOW_TOOLS", "recall")
    app = App.open()
    sessions.append_note(app, agent="claude", text="Config for the cache lives in settings.py", project="web")
    timeline.create_thread(app, name="unrelated thread")
    async with connect(app) as client:
        result = await call_with_data(client, "get_context", {"query": "xylophone config"})
    assert "Nothing stored matches this strongly" in text_of(result) and "match=weak" in text_of(result)
    assert result.structured_content["weak"] is True and result.structured_content["results"][0]["weak"] is True
    assert main(["search", "xylophone config", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["weak"] is True and data["results"][0]["weak"] is True
    assert main(["search", "cache config"]) == 0
    assert "match=weak" not in capsys.readouterr().out
    app.close()


def test_expired_records_do_not_crowd_a_live_one_out_of_the_pool():
    app = App.open()
    for n in range(70):
        records.set_record(app, key=f"fact:old-{n}", value={"text": "deploy target"}, expires_at="1h")
    records.set_record(app, key="fact:live", value={"text": "deploy target: the green cluster, used by every service"})
    later = retrieval.get_context(app, query="deploy target", limit=1, now_ms=timeutil.now_ms() + 2 * 3_600_000)
    assert [shown.hit.doc.ref for shown in later.shown] == ["fact:live"]
    app.close()


def test_captured_turns_of_a_session_lend_each_other_their_words():
    app = App.open()
    turn = {"project": "shop", "session_id": "s1", "agent": "claude_code"}
    first = app.store.append(
        "capture.turn",
        {
            **turn,
            "turn": {"request": "why is kafka consumer lag growing", "final": "One hot partition keyed by tenant."},
        },
    )
    second = app.store.append(
        "capture.turn", {**turn, "turn": {"request": "ok do it", "final": "Re-keyed by session."}}
    )
    assert {first.id, second.id} <= set(found(app, "kafka lag"))
    app.close()


def test_a_reply_found_by_its_neighbour_is_not_weak(dialog):
    app, ids = dialog
    result = retrieval.get_context(app, query="price cache TTL marketing", limit=10, now_ms=NOW)
    reply = next(shown.hit for shown in result.shown if shown.hit.doc.ref == ids["reply"])
    assert not reply.weak  # "marketing" in its own text, "price cache TTL" in the entry before it
    alone = retrieval.get_context(app, query="price cache TTL", limit=10, now_ms=NOW)
    assert not next(shown.hit for shown in alone.shown if shown.hit.doc.ref == ids["reply"]).weak


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([*"ab 0123456789:/-apmAPM\u0663\u00b2_\n", "May", " next week", "3rd"])).map("".join))
def test_a_text_states_a_time_as_the_full_numeric_pattern_says_whether_or_not_a_word_holds_a_digit(text: str):
    """`has_time_words` looks for a clock time or a date in digits only when a word holds other than letters:
    the answer is the one the pattern gives over the whole text."""
    words = when.WORD.findall(text)
    flags = {when._TIME_WORDS[word] for word in words}
    whole = 1 in flags or bool(2 in flags and when._PHRASES.search(text.lower())) or bool(when._NUMERIC.search(text))
    assert when.has_time_words(text) == whole
    assert when.has_time_words(text, words) == whole
