"""The protocol boundary: every message a client sends gets an answer, a malformed one a JSON-RPC error.

Without this, a line on stdio holding a lone surrogate escape (`"\\ud800"`), JSON nested
hundreds of levels deep or a JSON-RPC batch (`[...]`) got no reply at all: the SDK's reader
hands the parse failure to the session, which only logs it, and the client waits for its
timeout. Over HTTP the SDK does answer, but with its own wording; the bridge checks first so
both transports answer the same way:

- not UTF-8, not JSON, or a lone surrogate: `-32700` parse error;
- a batch, a non-object, or nesting deeper than `MAX_DEPTH`: `-32600` invalid request.

`problem(body)` is the pure check; `JsonRpcGuard` is the ASGI middleware in front of the
SDK's HTTP endpoint; `guard_stdio` wraps the stdio transport's streams.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
import orjson
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_DEPTH = 100  # arrays/objects; tool arguments are checked to 64 levels, the envelope adds a few
MAX_BODY_BYTES = 4 * 1024 * 1024  # the SDK's own limit for one HTTP message
BATCH = "JSON-RPC batches are not supported: send one request per message"
LONE_SURROGATE = ("Parse error: the message holds a lone UTF-16 surrogate "
                  "(e.g. \\ud800 without its pair); send valid Unicode")


@dataclass(frozen=True)
class Problem:
    code: int
    message: str
    id: str | int | None = None

    def reply(self) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": self.id, "error": {"code": self.code, "message": self.message}}


def _depth_exceeds(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def problem(body: bytes) -> Problem | None:
    """What is wrong with one JSON-RPC message, or None when the SDK may have it."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Problem(types.PARSE_ERROR, f"Parse error: the message is not UTF-8 (byte {exc.start})")
    try:
        message = orjson.loads(body)  # strict: lone surrogate escapes are errors here
    except orjson.JSONDecodeError as exc:
        reason = str(exc)
        if "surrogate" in reason:
            return Problem(types.PARSE_ERROR, LONE_SURROGATE)
        if "depth" in reason or "recursion" in reason:
            return Problem(types.INVALID_REQUEST, f"Invalid request: JSON nested more than {MAX_DEPTH} levels")
        return Problem(types.PARSE_ERROR, f"Parse error: not valid JSON ({reason})")
    if isinstance(message, list):
        return Problem(types.INVALID_REQUEST, f"Invalid request: {BATCH}")
    if not isinstance(message, dict):
        return Problem(types.INVALID_REQUEST, "Invalid request: a JSON-RPC message is a JSON object")
    request_id = message.get("id")
    echoed = request_id if isinstance(request_id, str | int) and not isinstance(request_id, bool) else None
    if _depth_exceeds(message, MAX_DEPTH):
        return Problem(types.INVALID_REQUEST, f"Invalid request: JSON nested more than {MAX_DEPTH} levels", echoed)
    return None


class JsonRpcGuard:
    """ASGI middleware: POST bodies are checked before the SDK sees them; a bad one gets a 400 JSON-RPC error."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            event = await receive()
            if event["type"] != "http.request":
                return  # the client went away
            chunk = event.get("body", b"")
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                await _answer(send, 413, Problem(types.INVALID_REQUEST, (
                    f"Invalid request: the message is over {MAX_BODY_BYTES // (1024 * 1024)} MiB")))
                return
            chunks.append(chunk)
            more = bool(event.get("more_body", False))
        body = b"".join(chunks)
        found = problem(body)
        if found is not None:
            await _answer(send, 400, found)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


async def _answer(send: Send, status: int, found: Problem) -> None:
    payload = orjson.dumps(found.reply())
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def problem_of_error(error: Exception) -> Problem:
    """The reply for a line the SDK's stdio reader could not turn into a message."""
    if isinstance(error, ValidationError):
        details = error.errors(include_url=False)
        first: dict[str, Any] = dict(details[0]) if details else {}
        if first.get("type") == "json_invalid":
            reason = str(first.get("ctx", {}).get("error", first.get("msg", "")))
            if "surrogate" in reason:
                return Problem(types.PARSE_ERROR, LONE_SURROGATE)
            if "recursion" in reason:
                return Problem(types.INVALID_REQUEST, "Invalid request: JSON nested too deeply")
            return Problem(types.PARSE_ERROR, f"Parse error: not valid JSON ({reason})")
        if isinstance(first.get("input"), list):
            return Problem(types.INVALID_REQUEST, f"Invalid request: {BATCH}")
        return Problem(types.INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 request, notification or response")
    return Problem(types.PARSE_ERROR, f"Parse error: {type(error).__name__}")


@asynccontextmanager
async def guard_stdio(read_stream: Any, write_stream: Any) -> AsyncIterator[Any]:
    """A read stream for `Server.run` that answers each unreadable line with a JSON-RPC error."""
    guarded_writer, guarded = create_context_streams[SessionMessage | Exception](0)

    async def forward() -> None:
        async with guarded_writer:
            async for item in read_stream:
                if isinstance(item, Exception):
                    error = types.JSONRPCError.model_validate(problem_of_error(item).reply())
                    await write_stream.send(SessionMessage(error))
                else:
                    await guarded_writer.send(item)

    async with anyio.create_task_group() as group:
        group.start_soon(forward)
        try:
            yield guarded
        finally:
            group.cancel_scope.cancel()

