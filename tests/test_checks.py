"""The shared argument checks: each failure says what was wrong and how to do it right."""

import pytest

from contextflow.core import checks
from contextflow.core.errors import InputError


@pytest.mark.parametrize(
    ("value", "described"),
    [(None, "null"), (True, "a boolean"), (7, "a number (7)"), ([1], "a list"), ({}, "an object"), (b"x", "bytes")],
)
def test_json_types_are_named_as_a_caller_would_read_them(value, described):
    assert checks.json_type(value) == described


def test_a_text_argument_is_trimmed_and_its_faults_name_the_fix():
    assert checks.text("  hi ", "name") == "hi"
    assert checks.text("  ", "name") is None
    with pytest.raises(InputError, match=r"^topic is required: give a 2-5 word topic$"):
        checks.text(None, "topic", required=True, hint="give a 2-5 word topic")
    with pytest.raises(InputError, match=r"^topic is empty: pass a non-empty string$"):
        checks.text(" ", "topic", required=True)
    with pytest.raises(InputError, match=r"^topic must be a string, got a number \(7\)$"):
        checks.text(7, "topic")
    with pytest.raises(InputError, match=r"topic is 5 characters; the limit is 4\. Shorten it"):
        checks.text("abcde", "topic", max_chars=4)


def test_a_json_object_argument_must_be_an_object_within_its_size():
    value = {"a": "b"}
    assert checks.json_object(value, "meta", example="{}", max_bytes=100) is value
    with pytest.raises(InputError, match=r'^meta must be a JSON object, e.g. \{"a": 1\}; wrap text$'):
        checks.json_object([1], "meta", example='{"a": 1}', hint="wrap text")
    with pytest.raises(InputError, match=r"^meta is 2008 bytes as JSON; the limit is 1024 \(1 KB\)\. Keep links$"):
        checks.json_object({"a": "x" * 2000}, "meta", example="{}", max_bytes=1024, size_hint="Keep links")
    with pytest.raises(InputError, match="meta is not JSON-serializable"):
        checks.json_object({"a": object()}, "meta", example="{}")


def test_an_iso_time_argument_comes_back_in_event_timestamp_form():
    assert checks.iso_time("2026-01-31T10:30:00+01:00", "since") == "2026-01-31T09:30:00.000Z"
    with pytest.raises(InputError, match=r"since='soon' is not an ISO-8601 time; use e\.g\. 2026-01-31"):
        checks.iso_time("soon", "since")


def test_json_file_reads_a_file_and_names_it_in_each_error(tmp_path):
    good = tmp_path / "good.json"
    good.write_text('{"a": 1}')
    assert checks.json_file(str(good), "pass X") == {"a": 1}
    with pytest.raises(InputError, match=r"cannot read .*missing\.json: .*; pass X"):
        checks.json_file(str(tmp_path / "missing.json"), "pass X")
    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(InputError, match=r"bad\.json is not valid JSON \(.*\); pass X"):
        checks.json_file(str(tmp_path / "bad.json"), "pass X")
