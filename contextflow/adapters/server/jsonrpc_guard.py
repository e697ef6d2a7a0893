"""The protocol boundary: every message a client sends gets an answer, a malformed one a JSON-RPC error.

The SDK's stdio reader only logs a line it cannot parse (a lone surrogate escape, JSON nested
hundreds deep, a batch), so the client waited for its timeout; over HTTP the SDK answers in its
own wording. Both transports now answer the same way: not UTF-8, not JSON, or a lone surrogate
is `-32700` parse error; a batch, a non-object or nesting deeper than `MAX_DEPTH` is `-32600`
invalid request. `problem(body)` is the pure check, `JsonRpcGuard` the ASGI middleware in front
of the SDK's HTTP endpoint, `guard_stdio` the read stream of the stdio transport (over `inbound.py`'s lines).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from contextflow.core import jsonio
from contextflow.core.events import MAX_DEPTH, nested_deeper  # a log line's limit (arguments: 64 + the envelope)

MAX_BODY_BYTES = 4 * 1024 * 1024  # the SDK's own limit for one HTTP message
BATCH = "JSON-RPC batches are not supported: send one request per message"


def _error(code: int, message: str, request_id: str | int | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _not_json(reason: str, too_deep: str) -> dict[str, Any]:
    """The reply for a message a JSON parser refused with `reason`."""
    if "surrogate" in reason:
        return _error(
            types.PARSE_ERROR,
            "Parse error: the message holds a lone UTF-16 surrogate "
            "(e.g. \\ud800 without its pair); send valid Unicode",
        )
    if "depth" in reason or "recursion" in reason:
        return _error(types.INVALID_REQUEST, f"Invalid request: JSON nested {too_deep}")
    return _error(types.PARSE_ERROR, f"Parse error: not valid JSON ({reason})")


def problem(body: bytes) -> dict[str, Any] | None:
    """What is wrong with one JSON-RPC message, or None when the SDK may have it."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _error(types.PARSE_ERROR, f"Parse error: the message is not UTF-8 (byte {exc.start})")
    try:
        message = jsonio.loads(body)  # strict: lone surrogate escapes are errors here
    except jsonio.DecodeError as exc:
        return _not_json(str(exc), f"more than {MAX_DEPTH} levels")
    if isinstance(message, list):
        return _error(types.INVALID_REQUEST, f"Invalid request: {BATCH}")
    if not isinstance(message, dict):
        return _error(types.INVALID_REQUEST, "Invalid request: a JSON-RPC message is a JSON object")
    request_id = message.get("id")
    echoed = request_id if isinstance(request_id, str | int) and not isinstance(request_id, bool) else None
    if nested_deeper(message, MAX_DEPTH):
        return _error(types.INVALID_REQUEST, f"Invalid request: JSON nested more than {MAX_DEPTH} levels", echoed)
    return None


class JsonRpcGuard:
    """ASGI middleware: POST bodies are checked before the SDK sees them; a bad one gets a 400 JSON-RPC error."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        received = bytearray()
        more = True
        while more:
            event = await receive()
            if event["type"] != "http.request":
                return  # the client went away
            received += event.get("body", b"")
            if len(received) > MAX_BODY_BYTES:
                await _answer(
                    send,
                    413,
                    _error(
                        types.INVALID_REQUEST,
                        (f"Invalid request: the message is over {MAX_BODY_BYTES // (1024 * 1024)} MiB"),
                    ),
                )
                return
            more = bool(event.get("more_body", False))
        body = bytes(received)
        found = problem(body)
        if found is not None:
            await _answer(send, 400, found)
            return
        unread: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

        async def replay() -> Message:
            return unread.pop() if unread else await receive()

        await self.app(scope, replay, send)


async def _answer(send: Send, status: int, found: dict[str, Any]) -> None:
    payload = jsonio.dumps(found)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def problem_of_error(error: Exception) -> dict[str, Any]:
    """The reply for a line the SDK's stdio reader could not turn into a message."""
    if isinstance(error, ValidationError):
        details = error.errors(include_url=False)
        first: dict[str, Any] = dict(details[0]) if details else {}
        if first.get("type") == "json_invalid":
            return _not_json(str(first.get("ctx", {}).get("error", first.get("msg", ""))), "too deeply")
        if isinstance(first.get("input"), list):
            return _error(types.INVALID_REQUEST, f"Invalid request: {BATCH}")
        return _error(types.INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 request, notification or response")
    return _error(types.PARSE_ERROR, f"Parse error: {type(error).__name__}")


END_OF_INPUT_GRACE_S = 60.0  # at end of input, how long requests already read may still run to their answer


class AnswerWatch:
    """The write stream the server answers on, noting which requests read are still unanswered, so the
    end of input waits for their answers instead of cancelling them (`printf ... | contextflow serve`)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.waiting: set[str | int] = set()
        self._idle = anyio.Event()
        self._idle.set()

    def asked(self, request_id: str | int) -> None:
        self.waiting.add(request_id)
        if self._idle.is_set():
            self._idle = anyio.Event()

    async def send(self, item: Any) -> None:
        await self.stream.send(item)
        message = getattr(item, "message", None)
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self.waiting.discard(message.id)
            if not self.waiting:
                self._idle.set()

    async def all_answered(self, limit_s: float = END_OF_INPUT_GRACE_S) -> None:
        with anyio.move_on_after(limit_s):
            await self._idle.wait()

    async def aclose(self) -> None:
        await self.stream.aclose()

    async def __aenter__(self) -> AnswerWatch:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@asynccontextmanager
async def guard_stdio(
    lines: AsyncIterator[str | dict[str, Any]], write_stream: Any, on_end: Callable[[], None] = lambda: None
) -> AsyncIterator[tuple[Any, AnswerWatch]]:
    """A read stream for `Server.run` from the input's lines (`inbound.stdin_lines`), and the write stream
    to give it: a line that is not a JSON-RPC message, or an error the inbound limits put in a line's
    place, is answered on `write_stream` and never reaches the server. When the input ends, the read
    stream closes only once every request read was answered. `on_end` runs when the input ends."""
    guarded_writer, guarded = create_context_streams[SessionMessage | Exception](0)
    watch = AnswerWatch(write_stream)

    async def answer(error: dict[str, Any]) -> None:
        await write_stream.send(SessionMessage(types.JSONRPCError.model_validate(error)))

    async def forward() -> None:
        try:
            async with guarded_writer:
                async for item in lines:
                    if isinstance(item, dict):
                        await answer(item)
                        continue
                    try:
                        message = types.jsonrpc_message_adapter.validate_json(item, by_name=False)
                    except Exception as exc:
                        await answer(problem_of_error(exc))
                        continue
                    if isinstance(message, types.JSONRPCRequest):
                        watch.asked(message.id)
                    await guarded_writer.send(SessionMessage(message))
                await watch.all_answered()  # the input ended: the requests read still get their answers
        finally:
            on_end()

    async with anyio.create_task_group() as group:
        group.start_soon(forward)
        try:
            yield guarded, watch
        finally:
            group.cancel_scope.cancel()
