"""A synced value nested hundreds of levels deep is a bad line: skipped, counted, reported;
every read and the exit code go on as if it were not there."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contextflow.adapters.cli import main
from contextflow.admin.diagnose import problems, store_info
from contextflow.app import App
from contextflow.core.errors import InputError
from contextflow.core.events import MAX_DEPTH, Event, encode
from tests.folding import view_of
from tests.hostile.helpers import line, now_stamp, plant

pytestmark = pytest.mark.usefixtures("shared_project")  # stored in `shared`, read from the plain tmp folder


def nested(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = [value]
    return value


def deep_line(seq: int, hlc: int, kind: str, data: dict[str, Any], field: str, levels: int) -> bytes:
    """A line whose data[field] is `levels` arrays deep, written as text (no JSON encoder goes that deep)."""
    head = line(writer="deep", seq=seq, hlc=hlc, kind=kind, data={**data, field: "@"}).rstrip(b"\n")
    return head.replace(b'"@"', b"[" * levels + b'"bottom"' + b"]" * levels) + b"\n"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("levels", [300, 1000])
def test_a_deeply_nested_synced_value_never_breaks_a_read(store_dir, capsys, levels):
    stamp = now_stamp()
    plant(
        store_dir,
        "events.deep.jsonl",
        line(writer="deep", seq=1, hlc=stamp, kind="context.set", data={"key": "fact:x", "value": {"ok": 1}}),
        deep_line(2, stamp + 1, "context.set", {"key": "fact:x"}, "value", levels),
        deep_line(3, stamp + 2, "note", {"text": "deep note", "project": "shared"}, "tags", levels),
        line(writer="deep", seq=4, hlc=stamp + 3, data={"text": "plain note"}),
    )
    for argv in (["read"], ["read", "--format", "json"], ["context", "get", "fact:x"], ["context", "list"]):
        code, out, err = run(capsys, *argv)
        assert code == 0 and "Traceback" not in err and "Recursion" not in err, (argv, err)
    code, out, _ = run(capsys, "context", "get", "fact:x", "--format", "json")
    assert json.loads(out)["value"] == {"ok": 1}
    assert "plain note" in run(capsys, "read")[1]
    app = App.open()
    info = store_info(app)
    assert info["bad_lines"] == 2 and info["bad_line_kinds"] == {"nested too deeply": 2}
    assert any("nested" in problem for problem in problems(info))
    view_of(app.store, "records"), view_of(app.store, "sessions")
    app.close()
    again = App.open()
    assert again.store.event_count == 2 and again.store.bad_line_count == 2


def test_a_line_nested_deeper_than_the_bound_is_never_written() -> None:
    event = Event("id1", "writer-a", 1, now_stamp(), "note", {"text": "x", "tags": nested(MAX_DEPTH)})
    with pytest.raises(InputError, match="nested over"):
        encode(event)
