"""What a session start's sweep finds in a client's transcript folder is untrusted: a FIFO, a folder
named like a transcript, a link out of the folder, a link that cannot be followed, an enormous file.
Each is skipped without blocking or reading it, named in doctor, and never stops the capture of the
real transcripts beside it."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

from contextflow.adapters.cli import main
from tests.folding import view_of

SESSION = "11111111-2222-3333-4444-555555555555"


def aged(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then), follow_symlinks=False)


def transcript_lines(repo: Path) -> str:
    def entry(kind: str, content: object, uuid: str) -> str:
        line = {"isSidechain": False, "cwd": str(repo), "sessionId": SESSION, "type": kind, "uuid": uuid}
        return json.dumps({**line, "message": {"role": kind, "content": content}})

    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make release"}}
    return (
        "\n".join(
            [entry("user", "ship it", "u1"), entry("assistant", [{"type": "text", "text": "Shipping."}, call], "a1")]
        )
        + "\n"
    )


def test_hostile_files_in_the_clients_folders_are_skipped_named_in_doctor_and_never_block(
    app, tmp_path, monkeypatch, capsys
):
    repo = tmp_path / "work"
    (repo / ".git").mkdir(parents=True)
    home = tmp_path / "home"
    folder = home / ".claude" / "projects" / "".join(c if c.isalnum() else "-" for c in str(repo))
    folder.mkdir(parents=True)
    real = folder / f"{SESSION}.jsonl"
    real.write_text(transcript_lines(repo))
    aged(real, 120)
    os.mkfifo(folder / "fifo.jsonl")  # a reader opening it would wait for a writer for ever
    (folder / "folder.jsonl").mkdir()
    outside = tmp_path / "elsewhere" / "private.jsonl"
    outside.parent.mkdir()
    outside.write_text(transcript_lines(repo).replace("ship it", "read elsewhere"))
    (folder / "link-out.jsonl").symlink_to(outside)
    (folder / "loop.jsonl").symlink_to(folder / "loop.jsonl")  # cannot be followed: unreadable
    enormous = folder / "enormous.jsonl"
    with open(enormous, "wb") as handle:
        handle.truncate(8 << 30)  # 8 GB (sparse): never read
    aged(enormous, 60)  # the newest transcript: the one after it is still captured
    day = home / ".codex" / "sessions" / "2026" / "12" / "01"
    day.mkdir(parents=True)
    os.mkfifo(day / "rollout-2026-12-01T10-00-00-x.jsonl")

    payload = {"session_id": "next", "cwd": str(repo), "hook_event_name": "SessionStart"}
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode())))
    assert main(["hook", "session-start"]) == 0
    out, err = capsys.readouterr()
    assert err.count("contextflow hook: sweep: ") == 6  # each said once on stderr and in hooks.log
    shown = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "Shipping." in shown and "make release" in shown  # the real transcript beside them: captured
    assert "read elsewhere" not in shown
    app.store.refresh()
    assert [event.data["turn"]["request"] for event in view_of(app.store, "activity").all_events()] == ["ship it"]

    assert main(["doctor"]) in (0, 1)
    doctor = capsys.readouterr().out
    said = [line.strip() for line in doctor.splitlines() if "not swept:" in line]
    expected = {
        "fifo.jsonl": "a FIFO, not a transcript",
        "folder.jsonl": "a folder, not a transcript",
        "link-out.jsonl": "a link out of the client's folder",
        "loop.jsonl": "unreadable:",
        "enormous.jsonl": "more than a sweep reads (8589.9 MB not read yet)",
        "rollout-2026-12-01T10-00-00-x.jsonl": "a FIFO, not a transcript",
    }
    for name, why in expected.items():
        assert any(f"{name}: {why}" in line for line in said), (name, said)
    assert len(said) == len(expected)

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode())))
    assert main(["hook", "session-start"]) == 0
    assert "sweep:" not in capsys.readouterr().err  # known already: doctor says it, the hook does not repeat it


def test_a_damaged_sweep_state_is_read_as_nothing_known(app, tmp_path, monkeypatch, capsys):
    repo = tmp_path / "work"
    (repo / ".git").mkdir(parents=True)
    folder = tmp_path / "home" / ".claude" / "projects" / "".join(c if c.isalnum() else "-" for c in str(repo))
    folder.mkdir(parents=True)
    real = folder / f"{SESSION}.jsonl"
    real.write_text(transcript_lines(repo))
    aged(real, 120)
    info = real.stat()
    seen = {str(real): [info.st_ino, info.st_size, info.st_mtime_ns]}
    damaged = {"seen": seen, "heads": {str(real): 5}, "problems": {str(real): "abc", "x": [1]}, "opencode": 3}
    state = Path(app.store.state_dir) / "sweep.json"
    state.write_text(json.dumps(damaged))
    payload = {"session_id": "next", "cwd": str(repo), "hook_event_name": "SessionStart"}

    def start() -> tuple[str, str]:
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode())))
        assert main(["hook", "session-start"]) == 0
        return capsys.readouterr()

    assert "did nothing" not in start()[1]
    assert main(["doctor"]) in (0, 1)
    assert "abc" not in capsys.readouterr().out
    state.write_bytes(b"[" * 100_000)  # nested past any decoder: nothing known, the transcript read
    out, err = start()
    assert "did nothing" not in err and "Shipping." in out
