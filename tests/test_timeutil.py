"""Times, durations and expiry times as agents and people type them, and legacy times read as UTC."""

import time
from datetime import UTC, datetime, timedelta

import orjson
import pytest

from contextflow.core import checks
from contextflow.core.errors import InputError
from contextflow.core.events import decode
from contextflow.core.timeutil import age, age_ms, expiry, iso_ms, parse_duration, parse_iso
from contextflow.graph.query import parse

NOW = datetime(2026, 2, 8, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("raw", "span"),
    [
        ("30m", timedelta(minutes=30)),
        ("24h", timedelta(hours=24)),
        ("7d", timedelta(days=7)),
        ("2w", timedelta(weeks=2)),
        ("1d12h", timedelta(hours=36)),
        ("1y", timedelta(days=365)),
        ("1w2d", timedelta(days=9)),
        ("P1Y", timedelta(days=365)),
        ("90s", timedelta(seconds=90)),
        ("P7D", timedelta(days=7)),
        ("PT24H", timedelta(hours=24)),
        ("p1dt2h", timedelta(hours=26)),
        (" 24H ", timedelta(hours=24)),
    ],
)
def test_short_and_iso_durations_parse(raw, span):
    assert parse_duration(raw) == span


@pytest.mark.parametrize("raw", ["", "24", "h", "1x", "P", "PT", "tomorrow", "-1h", "1.5h", " "])
def test_things_that_are_not_durations_are_none(raw):
    assert parse_duration(raw) is None


def test_expiry_is_now_plus_a_duration_or_an_iso_time():
    assert expiry("24h", NOW) == NOW + timedelta(hours=24)
    assert expiry("2026-02-09T00:00:00+02:00", NOW) == datetime(2026, 2, 8, 22, 0, tzinfo=UTC)
    assert expiry("2026-02-10", NOW) == datetime(2026, 2, 10, tzinfo=UTC)
    assert expiry(None, NOW) is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("0h", "is zero"),
        ("99999d", "over 10 years"),
        ("2026-02-01T00:00:00Z", "already past"),
        ("someday", "not understood; use a duration such as 30m"),
        ("  ", "must be a duration"),
    ],
)
def test_bad_expiry_values_say_what_to_pass(raw, message):
    with pytest.raises(InputError, match=message):
        expiry(raw, NOW)


def test_age_reads_like_speech():
    assert age(NOW - timedelta(seconds=5), NOW) == "just now"
    assert age(NOW - timedelta(minutes=1), NOW) == "1 minute ago"
    assert age(NOW - timedelta(hours=9), NOW) == "9 hours ago"
    assert age(NOW - timedelta(days=3), NOW) == "3 days ago"
    assert age(NOW + timedelta(days=1), NOW) == "in the future"


@pytest.mark.parametrize(
    "elapsed_ms", [0, 999, 1000, 59_999, 60_000, 3_599_999, 3_600_000, 86_400_000 * 400, -1, -999, -1000, -60_000]
)
def test_an_age_in_milliseconds_reads_as_the_age_of_its_moment(elapsed_ms):
    now = NOW + timedelta(microseconds=123)  # (a clock between milliseconds)
    moment_ms = (now - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1) - elapsed_ms
    moment = datetime.fromtimestamp(moment_ms / 1000, tz=UTC)
    assert age_ms(moment_ms, now) == age(moment, now)


def test_ages_under_two_weeks_are_counted_in_days():
    assert age(NOW - timedelta(days=9), NOW) == "9 days ago"
    assert age(NOW - timedelta(days=20), NOW) == "2 weeks ago"
    assert age(NOW - timedelta(days=45), NOW) == "6 weeks ago"
    assert age(NOW - timedelta(days=90), NOW) == "3 months ago"


def test_a_huge_duration_is_refused_as_too_long_not_crashed_on():
    assert parse_duration("9" * 30 + "d") is not None
    with pytest.raises(InputError, match="over 10 years"):
        expiry("9" * 30 + "d", NOW)


def test_a_time_without_a_zone_is_utc_everywhere():
    assert parse_iso("2026-01-31T09:30:00") == datetime(2026, 1, 31, 9, 30, tzinfo=UTC)
    assert parse_iso("2026-01-31") == datetime(2026, 1, 31, tzinfo=UTC)
    assert parse_iso("2026-01-31T10:30:00+01:00") == datetime(2026, 1, 31, 9, 30, tzinfo=UTC)
    assert iso_ms("1970-01-01T00:00:01") == 1000
    assert checks.iso_time("2026-01-31T09:30", "since") == "2026-01-31T09:30:00.000Z"


@pytest.mark.parametrize("raw", ["yesterday", "", "2026-13-01", "0001-01-01T00:00:00+01:00"])
def test_what_is_not_an_iso_time_parses_to_none(raw):
    assert parse_iso(raw) is None and iso_ms(raw) is None


@pytest.mark.parametrize("raw", [None, 20260131, ["2026-01-31"], {"ts": "2026-01-31"}])
def test_a_stored_value_that_is_not_text_is_no_time(raw):
    assert iso_ms(raw) is None  # the reader of other machines' fields: any type


@pytest.fixture
def far_east_zone(monkeypatch):
    """The machine's local time is UTC+14, so reading a zoneless time as local would be 14 hours off."""
    monkeypatch.setenv("TZ", "Etc/GMT-14")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_a_legacy_contextflowmcp_time_without_a_zone_is_read_as_utc_not_local_time(far_east_zone):
    line = orjson.dumps({"id": "u-1", "ts": "2025-03-01T10:00:00", "kind": "note", "project": "p", "text": "x"})
    assert decode(line, 0).ts == "2025-03-01T10:00:00.000Z"


def test_records_and_queries_take_the_same_durations():
    assert expiry("1d12h", NOW) == NOW + timedelta(hours=36)
    assert expiry("1y", NOW) == NOW + timedelta(days=365)
    assert parse("created:>1d12h").number == 36 * 3600_000
    assert parse("created:<1y").number == 365 * 86400_000
    assert parse("created:>P7D").number == 7 * 86400_000
