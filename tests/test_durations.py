"""Durations and expiry times as agents and people type them."""

from datetime import UTC, datetime, timedelta

import pytest

from contextflow.durations import age, expiry, parse_duration
from contextflow.errors import InputError

NOW = datetime(2026, 2, 8, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("raw", "span"),
    [
        ("30m", timedelta(minutes=30)),
        ("24h", timedelta(hours=24)),
        ("7d", timedelta(days=7)),
        ("2w", timedelta(weeks=2)),
        ("1d12h", timedelta(hours=36)),
        ("90s", timedelta(seconds=90)),
        ("P7D", timedelta(days=7)),
        ("PT24H", timedelta(hours=24)),
        ("p1dt2h", timedelta(hours=26)),
        (" 24H ", timedelta(hours=24)),
    ],
)
def test_short_and_iso_durations_parse(raw, span):
    assert parse_duration(raw) == span


@pytest.mark.parametrize("raw", ["", "24", "h", "1y", "P", "PT", "tomorrow", "-1h"])
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
        (5, "must be a duration"),
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


def test_ages_under_two_weeks_are_counted_in_days():
    assert age(NOW - timedelta(days=9), NOW) == "9 days ago"
    assert age(NOW - timedelta(days=20), NOW) == "2 weeks ago"
    assert age(NOW - timedelta(days=45), NOW) == "6 weeks ago"
    assert age(NOW - timedelta(days=90), NOW) == "3 months ago"
