"""The stdio server's input: whole lines off stdin, within ContextFlowMCP's two inbound limits.

- `MCP_SHARED_CONTEXT_MAX_INBOUND_LINE_BYTES`: a line (without its newline) longer than this is
  dropped and answered `-32700` "Parse error" with ContextFlowMCP's detail "Line-delimited JSON
  message exceeds max size (N bytes)"; the lines after it are read as usual (ContextFlowMCP
  drops what else it had buffered too).
- `MCP_SHARED_CONTEXT_MAX_INPUT_BUFFER_BYTES`: when the bytes held (a line not yet ended) and
  the chunk just read would exceed this, both are dropped and answered `-32600` "Incoming MCP
  message exceeds max buffer size (N bytes)", as ContextFlowMCP does; reading goes on.

A line that is not UTF-8 is answered `-32700` too (never decoded with U+FFFD in its bytes' place,
which would store them so). All these answers carry id null, and the server goes on serving.
Unset, the limits are contextflow's own (`MAX_LINE_BYTES`, `MAX_BUFFER_BYTES`): larger than
ContextFlowMCP's 2 and 4 MiB, because `save_conversation` takes transcripts of up to 16 million
characters in one message.

While serving, fd 0 points at the null device (as the SDK does when it reads stdin itself), so a
child process cannot read the client's bytes; the input comes from a private duplicate.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, NamedTuple

import anyio
import anyio.to_thread

from contextflow.core.settings import INBOUND, MAX_BUFFER_BYTES, MAX_LINE_BYTES, read

READ_SIZE = 64 * 1024
LINE_SETTING, BUFFER_SETTING = INBOUND


class Limits(NamedTuple):
    line: int = MAX_LINE_BYTES
    buffer: int = MAX_BUFFER_BYTES

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Limits:
        """The limits `env` sets (the process's environment when None); a value not understood is refused."""
        settings = read(env)
        settings.refuse(LINE_SETTING, BUFFER_SETTING)
        return cls(settings.inbound_line_bytes, settings.inbound_buffer_bytes)


def line_too_long(limit: int) -> dict[str, Any]:
    detail = f"Line-delimited JSON message exceeds max size ({limit} bytes)"
    return {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32700,
            "message": f"Parse error: {detail}; the line was dropped (raise {LINE_SETTING} to allow it)",
            "data": {"detail": detail},
        },
    }


def not_utf8(position: int) -> dict[str, Any]:
    message = f"Parse error: the message is not UTF-8 (byte {position}); send UTF-8 text"
    return {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": message}}


def buffer_full(limit: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32600,
            "message": f"Incoming MCP message exceeds max buffer size ({limit} bytes); the input held was dropped "
            f"(raise {BUFFER_SETTING} to allow it)",
        },
    }


def split(held: bytes, chunk: bytes, limits: Limits) -> tuple[list[str | dict[str, Any]], bytes]:
    """The whole lines (decoded) and refusals one chunk completes, and the bytes still held. Pure."""
    if len(held) + len(chunk) > limits.buffer:
        return [buffer_full(limits.buffer)], b""
    *lines, held = (held + chunk).split(b"\n")
    found: list[str | dict[str, Any]] = []
    for line in lines:
        if len(line) > limits.line:
            found.append(line_too_long(limits.line))
        elif line.strip():
            try:
                found.append(line.decode("utf-8"))
            except UnicodeDecodeError as exc:  # answered, never stored with U+FFFD in place of the bytes
                found.append(not_utf8(exc.start))
    return found, held


@contextlib.contextmanager
def claimed_stdin() -> Iterator[int]:
    """A private duplicate of fd 0, with fd 0 pointed at the null device until the end."""
    try:
        private = os.dup(0)
        quiet = os.open(os.devnull, os.O_RDONLY)
    except OSError:
        yield sys.stdin.fileno()  # nothing to divert to: read it in place
        return
    try:
        os.dup2(quiet, 0)
        yield private  # never closed: a worker thread may still be blocked reading it
    finally:
        os.close(quiet)
        with contextlib.suppress(OSError):
            os.dup2(private, 0)


async def stdin_lines(fd: int, limits: Limits) -> AsyncIterator[str | dict[str, Any]]:
    """Each whole line of input, or the error to answer in its place, until the client closes stdin."""
    held = b""
    while chunk := await anyio.to_thread.run_sync(os.read, fd, READ_SIZE, abandon_on_cancel=True):
        found, held = split(held, chunk, limits)
        for item in found:
            yield item
    if held.strip():  # the last line, not ended by a newline
        found, _ = split(b"", held + b"\n", limits)
        for item in found:
            yield item


class UntilDone:
    """The stdin handed to the SDK's `stdio_server`, which then serves stdout only: it yields no line
    and ends when `done` is set, so the transport closes once our own reader saw the end of input."""

    def __init__(self) -> None:
        self.done = anyio.Event()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._wait()

    async def _wait(self) -> AsyncIterator[str]:
        await self.done.wait()
        nothing: tuple[str, ...] = ()
        for line in nothing:
            yield line
