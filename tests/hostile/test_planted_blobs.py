"""Blob files are synced input too: a planted FIFO, device or huge file is refused before it is read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from contextflow.app import App
from contextflow.conversations import core as conversations
from contextflow.core.blobs import blob_path, read_blob
from contextflow.core.errors import StoreError
from tests.hostile.test_http_bridge import INITIALIZE, StdioServer

CALL_TIMEOUT = 30.0
HUGE = 96 * 1024 * 1024  # over the 64 MiB a 16M-character transcript can take


def _saved_with_blob(app: App) -> tuple[str, Path]:
    """A conversation whose transcript went to a blob, and that blob's path."""
    saved = conversations.save_conversation(
        app,
        {"topic": "deploy", "summary": "how we deploy", "full_transcript": "word " * 20_000},
    )
    assert saved.transcript_blob is not None
    return saved.conversation_id, blob_path(app.store.folder, saved.transcript_blob)


def _plant_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path, 0o600)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_blob_that_is_a_fifo_is_refused_by_the_cli_at_once(app: App) -> None:
    conversation_id, path = _saved_with_blob(app)
    _plant_fifo(path)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "contextflow", "conversations", "show", conversation_id, "--transcript"],
            capture_output=True,
            text=True,
            timeout=CALL_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("reading a blob that is a FIFO hung the CLI")
    assert done.returncode != 0 and "not a regular file" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_blob_that_is_a_fifo_is_a_tool_error_over_mcp_and_later_calls_are_answered(app: App, tmp_path: Path) -> None:
    conversation_id, path = _saved_with_blob(app)
    _plant_fifo(path)
    server = StdioServer(tmp_path)
    try:
        server.send(json.dumps(INITIALIZE).encode())
        assert (server.reply() or {}).get("id") == 1
        server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        arguments = {"conversation_id": conversation_id, "include_transcript": True}
        call = {"name": "get_conversation", "arguments": arguments}
        server.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}).encode())
        answer = server.reply()
        server.send(b'{"jsonrpc":"2.0","id":3,"method":"ping"}')
        after = server.reply()
    finally:
        server.stop()
    assert answer is not None, "get_conversation on a FIFO blob got no reply"
    assert answer["result"]["isError"] and "not a regular file" in answer["result"]["content"][0]["text"]
    assert after == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_a_huge_sparse_blob_is_refused_by_its_size_without_being_read(app: App) -> None:
    _, path = _saved_with_blob(app)
    path.unlink()
    with open(path, "wb") as handle:
        handle.truncate(HUGE)  # sparse: no disk used
    tracemalloc.start()
    try:
        with pytest.raises(StoreError, match="over the limit"):
            read_blob(app.store.folder, path.name)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024, f"{peak} bytes allocated to refuse it"


def test_a_good_blob_still_reads_in_bounded_pieces(app: App) -> None:
    conversation_id, _ = _saved_with_blob(app)
    entry = conversations.find_conversation(app, conversation_id)
    assert conversations.load_transcript(app, entry) == ("word " * 20_000).strip()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_doctor_names_a_planted_fifo_and_a_huge_blob(app: App) -> None:
    from contextflow.admin.diagnose import problems, store_info

    _, fifo = _saved_with_blob(app)
    _plant_fifo(fifo)
    huge = fifo.parent.parent / "ab" / ("ab" * 32)
    huge.parent.mkdir(exist_ok=True)
    with open(huge, "wb") as handle:
        handle.truncate(HUGE)
    info = store_info(app)
    assert sorted(blob["why"].split(",")[0] for blob in info["bad_blobs"]) == [
        f"{HUGE} bytes",
        "not a regular file",
    ]
    assert sum("blob" in problem for problem in problems(info)) == 2
