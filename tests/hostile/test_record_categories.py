"""Record categories are the closed list the tool help names; a key prefix outside it defaults to `fact`."""

from __future__ import annotations

import pytest

from contextflow.app import App
from contextflow.core.errors import InputError
from contextflow.records import core as records
from tests.table import run

ALLOWED = "project, pr, machine, waiting, fact, clipboard"


def test_an_unknown_category_is_refused_with_the_allowed_ones_listed_and_nothing_stored(app: App) -> None:
    with pytest.raises(InputError, match=f"category must be one of {ALLOWED}; got 'bogus'; pick one of those"):
        run(app, "context_set", key="fact:x", value={"v": 1}, category="bogus")
    assert records.list_records(app, since_days=0) == []


@pytest.mark.parametrize(
    ("key", "category"), [("pr:owner/repo:1", "pr"), ("waiting:ci", "waiting"), ("ticket:123", "fact")]
)
def test_a_record_without_a_category_takes_its_key_prefix_when_that_is_one_else_fact(
    app: App, key: str, category: str
) -> None:
    records.set_record(app, key=key, value={"v": 1})
    assert records.get_record(app, key=key).category == category


def test_listing_by_an_unknown_category_is_refused_but_a_stored_older_one_still_filters(app: App) -> None:
    app.store.append("context.set", {"key": "todo:a", "value": {"v": 1}, "category": "todo"})
    with pytest.raises(InputError, match=ALLOWED):
        records.list_records(app, category="bogus")
    assert [r.key for r in records.list_records(app, category="todo")] == ["todo:a"]
