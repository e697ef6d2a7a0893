"""An import reads only what lies inside the folder it is given, and never blocks on a special file:
a link out of the folder is refused and named (nothing of its target is stored), a FIFO or a device as
the import path is a clear error within a second."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from contextflow.adapters.cli import main
from tests.hostile.test_stuck_locks import within

SECRET = "root:x:0:0:root:/root:/bin/bash"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def stored(store_dir: Path) -> bytes:
    return b"".join(path.read_bytes() for path in store_dir.glob("events.*.jsonl"))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    target = tmp_path / "outside" / "passwd"
    target.parent.mkdir()
    target.write_text(f"{SECRET}\n---\ntitle: planted\n---\n{SECRET}\n")
    return target


def test_a_note_that_links_out_of_the_folder_is_refused_and_named(tmp_path, store_dir, outside, capsys):
    notes = tmp_path / "n"
    notes.mkdir()
    (notes / "real.md").write_text("---\ntitle: Real note\n---\nThe parser handles brackets.\n")
    (notes / "p.md").symlink_to(outside)
    code, out, err = run(capsys, "import", str(notes), "--format", "json")
    report = json.loads(out)
    assert code == 2 and report["stored"].get("node") == 1, (out, err)  # 2: some files were refused
    assert any("p.md" in error and "outside" in error for error in report["errors"]), report
    assert SECRET.encode() not in stored(store_dir)
    assert b"The parser handles brackets" in stored(store_dir)


def test_a_folder_link_out_of_the_folder_is_not_followed(tmp_path, store_dir, outside, capsys):
    (outside.parent / "planted.md").write_text(f"---\ntitle: planted\n---\n{SECRET}\n")
    notes = tmp_path / "n"
    notes.mkdir()
    (notes / "real.md").write_text("---\ntitle: Real note\n---\nKept.\n")
    (notes / "sub").symlink_to(outside.parent, target_is_directory=True)
    code, out, _ = run(capsys, "import", str(notes), "--format", "json")
    assert code == 2 and "sub" in " ".join(json.loads(out)["errors"])
    assert SECRET.encode() not in stored(store_dir)


def test_a_transcript_that_links_out_of_the_folder_is_refused(tmp_path, store_dir, outside, capsys):
    folder = tmp_path / "projects" / "p"
    folder.mkdir(parents=True)
    line = {"type": "user", "sessionId": "s", "uuid": "u1", "timestamp": "2026-01-01T00:00:00Z"}
    (folder / "real.jsonl").write_text(json.dumps({**line, "message": {"role": "user", "content": "hello"}}) + "\n")
    leaked = outside.parent / "leak.jsonl"
    leaked.write_text(json.dumps({**line, "uuid": "u2", "message": {"role": "user", "content": SECRET}}) + "\n")
    (folder / "leak.jsonl").symlink_to(leaked)
    _, out, err = run(capsys, "import", str(tmp_path / "projects"), "--from", "claude-code", "--format", "json")
    assert SECRET.encode() not in stored(store_dir)
    assert "leak.jsonl" in out + err


def test_a_fifo_as_the_import_path_is_a_clear_error_within_a_second(tmp_path, store_dir, capsys):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    code, _, err = within(1.0, lambda: run(capsys, "import", str(fifo)))
    assert code == 2 and "FIFO" in err and "regular file" in err
    assert not stored(store_dir)


def test_a_device_as_the_import_path_is_a_clear_error_within_a_second(capsys, store_dir):
    code, _, err = within(1.0, lambda: run(capsys, "import", "/dev/zero"))
    assert code == 2 and "device" in err and "regular file" in err
    assert not stored(store_dir)


def test_a_fifo_inside_the_folder_is_named_and_the_rest_imported(tmp_path, store_dir, capsys):
    notes = tmp_path / "n"
    notes.mkdir()
    (notes / "real.md").write_text("---\ntitle: Real note\n---\nKept.\n")
    os.mkfifo(notes / "pipe.md")
    code, out, _ = within(1.0, lambda: run(capsys, "import", str(notes), "--format", "json"))
    report = json.loads(out)
    assert code == 2 and report["stored"].get("node") == 1
    assert any("pipe.md" in error for error in report["errors"])
