"""`contextflow ui` keeps one address per store: the same port and token on every start, so a
bookmarked URL and the page's cookie survive a restart; the token's file is private (0600)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx2 as httpx
import pytest

from contextflow.adapters.ui import address
from contextflow.adapters.ui.server import bind
from contextflow.app import App
from tests.ui.workload import Written, write_store_sync

COMMAND = [sys.executable, "-m", "contextflow", "ui", "--no-open"]
HANG_GUARD_S = 60.0  # not a speed expectation: the bound on a wait that would otherwise hang


@pytest.fixture
def written() -> Written:
    return write_store_sync()


def first_line(command: list[str]) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    return process, process.stdout.readline().strip()  # printed once the socket listens


def stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    process.wait(HANG_GUARD_S)
    if process.stdout is not None:
        process.stdout.close()


def test_a_restart_keeps_the_address_and_the_cookie_opens_the_page_again(written: Written) -> None:
    process, first = first_line(COMMAND)
    try:
        assert first.startswith("http://127.0.0.1:") and "/?token=" in first, first
        base = first.split("/?")[0]
        with httpx.Client(timeout=HANG_GUARD_S, follow_redirects=True) as client:
            assert client.get(first).status_code == 200  # the token, swapped for the cookie
            cookies = dict(client.cookies)
    finally:
        stop(process)
    process, again = first_line(COMMAND)
    try:
        assert again == first  # a bookmark of the printed URL still works
        with httpx.Client(timeout=HANG_GUARD_S, cookies=cookies) as client:
            assert client.get(base + "/api/overview").status_code == 200  # an open tab goes on, no new token
        assert httpx.get(base + "/api/overview", timeout=HANG_GUARD_S).status_code == 401
    finally:
        stop(process)
    saved = App.open().store.state_dir / address.FILE
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600


def test_a_taken_port_is_replaced_by_a_free_one_which_is_kept(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    taken = bind(0)
    try:
        address.save(state, address.Address(address.load(state).token, taken.getsockname()[1]))
        sock, note = address.listen(state, None)
        try:
            port = sock.getsockname()[1]
            assert port != taken.getsockname()[1] and "taken" in note
        finally:
            sock.close()
    finally:
        taken.close()
    assert address.load(state).port == port


def test_an_explicit_port_is_used_and_not_remembered(tmp_path: Path) -> None:
    sock, _ = address.listen(tmp_path, 0)
    sock.close()
    assert address.load(tmp_path).port is None


@pytest.mark.parametrize(
    "content",
    [b"", b"not json", b'{"token": "short", "port": 8766}', b'{"token": 5}', b"[1]", b"x" * 100_000],
)
def test_a_damaged_file_gets_a_fresh_token(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / address.FILE
    path.write_bytes(content)
    os.chmod(path, 0o600)
    token = address.load(tmp_path).token
    assert len(token) >= 32 and token.encode() not in content


def test_a_file_others_can_read_is_not_trusted(tmp_path: Path) -> None:
    first = address.load(tmp_path)
    address.save(tmp_path, first)
    os.chmod(tmp_path / address.FILE, 0o644)  # its token may have been read: a new one
    assert address.load(tmp_path).token != first.token


def test_a_fifo_in_its_place_does_not_block(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / address.FILE, 0o600)
    assert len(address.load(tmp_path).token) >= 32
