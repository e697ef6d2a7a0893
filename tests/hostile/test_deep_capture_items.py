"""One item nested far deeper than a JSON decoder goes (300,000 levels, under every size bound), or not
UTF-8, never stops capture: every capture reader (Claude Code, Codex, Gemini CLI, Cursor, OpenCode)
skips it, counts it and reads what follows, on this call and every later one."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest

from contextflow.adapters.cli import main
from contextflow.capture import claude, codex, cursor_events, gemini, opencode
from contextflow.capture.health import capture_health
from tests.folding import view_of

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "capture"
SAMPLE = json.loads((FIXTURES / "opencode-session.json").read_text())
SESSION = SAMPLE["message"][0]["session_id"]
DEPTH = 300_000


def deep_array() -> str:
    return "[" * DEPTH + "]" * DEPTH  # 600 KB


def deep_object() -> str:
    return '{"a":' * DEPTH + "1" + "}" * DEPTH  # 1.8 MB: under OpenCode's row bound and a transcript's line bound


def lines(name: str) -> list[bytes]:
    return [line for line in (FIXTURES / name).read_bytes().split(b"\n") if line.strip()]


@pytest.mark.parametrize(
    ("parser", "name", "deep"),
    [
        (claude, "claude-transcript.jsonl", '{"type":"assistant","message":{"content":[{"type":"text","text":%s}]}}'),
        (codex, "codex-rollout.jsonl", '{"type":"event_msg","payload":{"type":"item_completed","item":%s}}'),
        (gemini, "gemini-chat.jsonl", '{"id":"x","type":"gemini","content":%s}'),
    ],
    ids=["claude-code", "codex", "gemini-cli"],
)
def test_a_transcript_line_nested_300k_deep_is_skipped_and_the_turn_after_it_read(parser, name, deep):
    counts: dict[str, int] = {}
    hostile = [deep.replace("%s", deep_array()).encode(), deep.replace("%s", deep_object()).encode()]
    turns = parser.parse([*hostile, *lines(name)], counts, {})
    assert counts.get("bad") == 2
    assert any(turn.prompt.startswith("Create calc.py") for turn in turns)


def test_a_cursor_journal_line_nested_300k_deep_is_skipped():
    counts: dict[str, int] = {}
    good = [b'{"event":"beforeSubmitPrompt","prompt":"fix it"}', b'{"event":"afterAgentResponse","text":"done"}']
    turns = cursor_events.parse([('{"event":' + deep_array() + "}").encode(), *good], counts)
    assert counts == {"bad": 1} and turns[0].prompt == "fix it" and turns[0].final == "done"


# -- OpenCode: its session database ------------------------------------------------------------------------


def make_database(path: Path, root: str, extra_messages: list[tuple], extra_parts: list[tuple]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path)
    for statement in SAMPLE["schema"]:
        connection.execute(statement)
    for row in SAMPLE["message"]:
        values = (row["id"], row["session_id"], row["time_created"], row["time_updated"])
        connection.execute(
            "INSERT INTO message VALUES (?, ?, ?, ?, ?)", (*values, row["data"].replace("/home/u/shop", root))
        )
    for row in SAMPLE["part"]:
        values = (row["id"], row["message_id"], row["session_id"], row["time_created"], row["time_updated"])
        connection.execute(
            "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", (*values, row["data"].replace("/home/u/shop", root))
        )
    for values in extra_messages:  # data as TEXT, whatever its bytes
        connection.execute("INSERT INTO message VALUES (?, ?, ?, ?, CAST(? AS TEXT))", values)
    for values in extra_parts:
        connection.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, CAST(? AS TEXT))", values)
    connection.commit()
    connection.close()
    return path


def idle(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], repo: Path) -> str:
    payload = {"session_id": SESSION, "cwd": str(repo), "hook_event_name": "session.idle"}
    monkeypatch.setenv("CONTEXTFLOW_CLIENT", "opencode")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode())))
    assert main(["hook", "stop"]) == 0
    return capsys.readouterr().err


def test_an_opencode_message_or_part_nested_300k_deep_or_not_utf8_is_skipped_and_capture_goes_on(
    app, tmp_path, monkeypatch, capsys
):
    repo = tmp_path / "work"
    (repo / ".git").mkdir(parents=True)
    first = SAMPLE["message"][0]
    last = SAMPLE["message"][-1]
    before = first["time_created"] - 10
    deep_message = ('{"role":"assistant","time":{"completed":1},"x":' + deep_array() + "}").encode()
    assert len(deep_object()) < opencode.MAX_ROW and len(deep_message) < opencode.MAX_ROW
    messages = [
        ("msg_000deep", SESSION, before, before, deep_message),
        ("msg_000utf8", SESSION, before + 1, before + 1, b'{"role":"assistant","text":"\xff\xfe"}'),
    ]
    parts = [
        ("prt_zzzdeep", last["id"], SESSION, last["time_created"], last["time_created"], deep_object().encode()),
        (
            "prt_zzzutf8",
            last["id"],
            SESSION,
            last["time_created"],
            last["time_created"],
            b'{"type":"text","text":"\xc3"}',
        ),
    ]
    make_database(tmp_path / "home" / ".local" / "share" / "opencode" / "opencode.db", str(repo), messages, parts)
    for _ in range(2):  # the second call: nothing new, nothing wedged
        err = idle(monkeypatch, capsys, repo)
        assert "did nothing" not in err, err
    app.store.refresh()
    [turn] = list(view_of(app.store, "activity").all_events())
    assert turn.data["turn"]["final"] == "I set x to 2.  Next: add a CLI."
    [row] = [row for row in capture_health(Path(app.store.state_dir)) if row["client"] == "opencode"]
    assert row["bad"] >= 4 and row["turns"] == 1
