"""A full disk and a read-only store: a clear error naming the store and the cause; nothing stored is damaged.

The full disk is a tiny tmpfs (mounted here as root); the read-only store is that tmpfs
remounted read-only (root ignores file modes) or, for other users, a folder without write
permission. Each test skips with the reason when this machine cannot mount.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from contextflow.adapters.server.app import ContextflowServer
from contextflow.app import App
from contextflow.core.errors import StoreError
from contextflow.core.events import decode
from tests.conftest import text_of

SIZE_KB = 96


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, timeout=30, check=False)


@contextlib.contextmanager
def tiny_tmpfs(where: Path, size_kb: int = SIZE_KB) -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("a size-limited file system needs mount(8), which needs root; run as root to test a full disk")
    mounted = _mount("-t", "tmpfs", "-o", f"size={size_kb}k,mode=0700", "tmpfs", str(where))
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tiny tmpfs here ({mounted.stderr.strip()}); the full-disk test needs one")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=30, check=False)


def fill(folder: Path) -> Path:
    """Take every free byte of the file system holding `folder`."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 512)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return filler


def log_bytes(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.glob("events.*.jsonl"))}


def assert_intact(folder: Path, before: dict[str, bytes]) -> None:
    after = log_bytes(folder)
    assert after == before, "stored lines changed"
    for data in after.values():
        assert data.endswith(b"\n")
        for number, line in enumerate(data.splitlines(), 1):
            decode(line, number)


@pytest.fixture
def tiny_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    with tiny_tmpfs(tmp_path / "tiny") as mount:
        store = mount / "store"
        monkeypatch.setenv("CONTEXTFLOW_STORE", str(store))
        yield store


def test_a_full_disk_is_a_clear_error_and_damages_nothing(tiny_store: Path) -> None:
    app = App.open()
    for n in range(20):
        app.store.append("note", {"agent": "a", "text": f"kept {n}"})
    before = log_bytes(tiny_store)
    filler = fill(tiny_store.parent)
    failures = 0
    for n in range(50):
        try:
            app.store.append("note", {"agent": "a", "text": f"big {n} " + "y" * 20_000})
        except StoreError as exc:
            failures += 1
            message = str(exc)
            assert str(tiny_store) in message and "the disk is full" in message, message
    assert failures == 50
    assert_intact(tiny_store, before)
    filler.unlink()
    app.store.append("note", {"agent": "a", "text": "after space was freed"})
    reopened = App.open()
    assert reopened.store.event_count == 21
    assert reopened.store.health().bad_line_count == 0
    app.close()
    reopened.close()


def test_a_full_disk_with_a_torn_tail_to_repair_is_still_a_clear_error(tiny_store: Path) -> None:
    app = App.open()
    app.store.append("note", {"agent": "a", "text": "kept"})
    log = next(tiny_store.glob("events.*.jsonl"))
    with open(log, "ab") as handle:
        handle.write(b'{"v":1,"id":"torn')
    before = log_bytes(tiny_store)
    filler = fill(tiny_store.parent)
    with pytest.raises(StoreError) as caught:
        app.store.append("note", {"agent": "a", "text": "no room"})
    assert str(tiny_store) in str(caught.value) and "the disk is full" in str(caught.value)
    assert log_bytes(tiny_store) == before, "the torn tail stays until it can be quarantined"
    filler.unlink()
    app.store.append("note", {"agent": "a", "text": "room again"})
    fragments = list((tiny_store / "quarantine").iterdir())
    assert [fragment.read_bytes() for fragment in fragments] == [b'{"v":1,"id":"torn']
    assert app.store.health().bad_line_count == 0 and app.store.event_count == 2
    app.close()


def test_a_full_disk_reaches_the_agent_as_a_tool_error(tiny_store: Path) -> None:
    app = App.open()
    server = ContextflowServer(app)
    assert not server.call("append_shared_note", {"agent": "a", "text": "first"}).is_error
    before = log_bytes(tiny_store)
    fill(tiny_store.parent)
    result = server.call("append_shared_note", {"agent": "a", "text": "second " + "z" * 10_000})
    assert result.is_error
    text = text_of(result)
    assert "internal error" not in text
    assert str(tiny_store) in text and "the disk is full" in text, text
    assert_intact(tiny_store, before)
    read = server.call("read_shared_context", {})
    assert "> first" in text_of(read)
    app.close()


@pytest.fixture
def read_only_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str]]:
    """A store with one writer's events in it, then made read-only; yields (store, expected cause)."""
    if os.geteuid() == 0:
        with tiny_tmpfs(tmp_path / "ro", 1024) as mount:
            store = mount / "store"
            monkeypatch.setenv("CONTEXTFLOW_STORE", str(store))
            _seed()
            remounted = _mount("-o", "remount,ro", str(mount))
            if remounted.returncode != 0:
                pytest.skip(f"cannot remount the tmpfs read-only ({remounted.stderr.strip()})")
            yield store, "the file system is read-only"
    else:
        store = tmp_path / "store"
        monkeypatch.setenv("CONTEXTFLOW_STORE", str(store))
        _seed()
        for path in [store, *store.iterdir()]:
            path.chmod(0o500 if path.is_dir() else 0o400)
        try:
            yield store, "permission denied"
        finally:
            store.chmod(0o700)


def _seed() -> None:
    app = App.open()
    app.store.append("note", {"agent": "a", "text": "written before", "session_id": "s"})
    app.close()


def test_a_read_only_store_is_a_clear_error_and_still_reads(read_only_store: tuple[Path, str]) -> None:
    store, cause = read_only_store
    before = log_bytes(store)
    app = App.open()
    with pytest.raises(StoreError) as caught:
        app.store.append("note", {"agent": "a", "text": "cannot land"})
    assert str(store) in str(caught.value) and cause in str(caught.value), str(caught.value)
    server = ContextflowServer(app)
    result = server.call("append_shared_note", {"agent": "a", "text": "nor this"})
    assert result.is_error and cause in text_of(result) and "internal error" not in text_of(result)
    assert "> written before" in text_of(server.call("read_shared_context", {"session_id": "s"}))
    assert_intact(store, before)
    app.close()


def test_a_new_writer_on_a_read_only_store_gets_the_same_clear_error(
    read_only_store: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, cause = read_only_store
    monkeypatch.setenv("CONTEXTFLOW_WRITER", "a-new-machine")
    app = App.open()
    with pytest.raises(StoreError) as caught:
        app.store.append("note", {"agent": "b", "text": "no file can be created"})
    assert str(store) in str(caught.value) and cause in str(caught.value)
    app.close()
