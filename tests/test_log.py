import os
import stat
from pathlib import Path

import pytest

from contextflow.core.errors import StoreError
from contextflow.core.log import LogWriter, list_segments, log_path, parse_log_name, read_new
from tests.folding import view_of


def writer(folder: Path, name: str = "w1") -> LogWriter:
    return LogWriter(folder, name, folder.parent / "locks" / f"{name}.lock")


def append(w: LogWriter, data: bytes) -> None:
    with w.locked():
        w.append(data)


def test_a_new_log_is_private_to_its_owner(tmp_path):
    folder = tmp_path / "store"
    append(writer(folder), b'{"a":1}\n')
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(log_path(folder, "w1").stat().st_mode) == 0o600


def test_a_torn_last_line_is_quarantined_and_cut_before_the_next_append(tmp_path):
    folder = tmp_path / "store"
    w = writer(folder)
    append(w, b'{"a":1}\n')
    with open(w.path, "ab") as handle:
        handle.write(b'{"torn":')
    append(w, b'{"b":2}\n')
    assert w.path.read_bytes() == b'{"a":1}\n{"b":2}\n'
    fragments = list((folder / "quarantine").iterdir())
    assert [f.read_bytes() for f in fragments] == [b'{"torn":']


def test_a_log_that_is_a_symlink_is_never_written_through(tmp_path):
    folder = tmp_path / "store"
    folder.mkdir()
    target = tmp_path / "elsewhere.txt"
    target.write_bytes(b"keep me\n")
    os.symlink(target, log_path(folder, "w1"))
    with pytest.raises(StoreError, match="symbolic link"):
        append(writer(folder), b'{"a":1}\n')
    assert target.read_bytes() == b"keep me\n"


def test_reading_continues_from_the_read_position_with_only_the_new_lines(tmp_path):
    folder = tmp_path / "store"
    w = writer(folder)
    append(w, b"one\ntwo\n")
    first = read_new(w.path, None)
    append(w, b"three\n")
    second = read_new(w.path, first.position)
    assert [line for _, line in first.lines] == [b"one", b"two"]
    assert second.lines == [(3, b"three")] and not second.reset


def test_a_line_still_being_written_is_not_read_until_it_is_whole(tmp_path):
    path = tmp_path / "events.w.jsonl"
    path.write_bytes(b"one\ntw")
    chunk = read_new(path, None)
    assert [line for _, line in chunk.lines] == [b"one"]
    with open(path, "ab") as handle:
        handle.write(b"o\n")
    assert [line for _, line in read_new(path, chunk.position).lines] == [b"two"]


def test_a_replaced_file_that_continues_the_old_one_is_read_incrementally(tmp_path):
    path = tmp_path / "events.w.jsonl"
    path.write_bytes(b"one\n")
    first = read_new(path, None)
    replacement = tmp_path / "copy"
    replacement.write_bytes(b"one\ntwo\n")
    os.replace(replacement, path)  # what a sync tool does
    second = read_new(path, first.position)
    assert not second.reset and [line for _, line in second.lines] == [b"two"]


def test_a_rewritten_file_is_reported_as_a_reset(tmp_path):
    path = tmp_path / "events.w.jsonl"
    path.write_bytes(b"one\ntwo\n")
    first = read_new(path, None)
    path.write_bytes(b"uno\ndos\ntres\n")
    assert read_new(path, first.position).reset


def test_segments_are_logs_and_conflict_copies_but_nothing_else(tmp_path):
    for name in ("events.a.jsonl", "events.b.sync-conflict-20260101-101010-ABCDEF.jsonl", "notes.jsonl", "x.txt"):
        (tmp_path / name).write_bytes(b"")
    names = [p.name for p in list_segments(tmp_path)]
    assert names == ["events.a.jsonl", "events.b.sync-conflict-20260101-101010-ABCDEF.jsonl"]
    assert parse_log_name(names[1]) == ("b", True)
    assert parse_log_name("events.a.jsonl") == ("a", False)


def test_the_tail_of_a_log_is_its_last_whole_lines_without_batch_markers(tmp_path):
    from contextflow.core.log import LogWriter, read_tail

    writer = LogWriter(tmp_path, "w1", tmp_path / "lock")
    writer.append_lines([b'{"n":%d}\n' % n for n in range(50)])  # one batch: framed by markers
    for n in range(50, 60):
        writer.append(b'{"n":%d}\n' % n)
    path = next(tmp_path.glob("events.*.jsonl"))
    lines = [raw for _, raw in read_tail(path, 60)]
    assert lines and lines[-1] == b'{"n":59}' and all(raw.startswith(b'{"n":') for raw in lines)
    assert len(lines) <= 7  # whole lines only, from the first that starts within the tail
    everything = [raw for _, raw in read_tail(path, 1 << 20)]
    assert everything == [b'{"n":%d}' % n for n in range(60)]  # the markers never


def test_a_writer_id_differing_only_in_case_from_a_log_in_the_store_is_refused(tmp_path):
    """Two writer ids that differ only in case share one file on a case-insensitive volume: the second
    writer is refused before writing, and the existing log stays readable."""
    from contextflow.app import App
    from contextflow.core.errors import StoreError

    env = {**os.environ, "CONTEXTFLOW_STORE": str(tmp_path / "cased"), "CONTEXTFLOW_STATE": str(tmp_path / "st")}
    first = App.open({**env, "CONTEXTFLOW_WRITER": "laptop"})
    first.store.append("note", {"text": "from laptop"})
    first.close()
    second = App.open({**env, "CONTEXTFLOW_WRITER": "Laptop"})
    try:
        with pytest.raises(StoreError, match="differs only in case from 'laptop'"):
            second.store.append("note", {"text": "from Laptop"})
        assert [e.data["text"] for e in view_of(second.store, "sessions").project_entries(None)] == ["from laptop"]
    finally:
        second.close()
    assert [p.name for p in (tmp_path / "cased").glob("events.*.jsonl")] == ["events.laptop.jsonl"]
