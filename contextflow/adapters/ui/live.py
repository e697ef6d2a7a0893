"""Live updates: server-sent events whenever any log in the store changes.

Each open page holds one stream. The stream looks at the logs' signatures (device, inode,
size, mtime: one folder listing and one stat per log, nothing read) every `POLL_S` seconds
and sends a `change` event when they moved, whichever process or machine appended. The page
then fetches what it shows again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import StreamingResponse

POLL_S = 0.5
HEARTBEAT_S = 15.0


def stream(request: Request, signature: Callable[[], Any], stopping: Callable[[], bool]) -> StreamingResponse:
    """The stream; it ends when the client goes or `stopping()` says the server is shutting down."""
    return StreamingResponse(
        _ticker(request, signature, stopping),
        media_type="text/event-stream",
        headers={"cache-control": "no-store", "x-accel-buffering": "no"},
    )


async def _ticker(request: Request, signature: Callable[[], Any], stopping: Callable[[], bool]) -> AsyncIterator[str]:
    """The change events, with a comment line as heartbeat when nothing changed for a while."""
    yield "retry: 1000\n\n"
    last = await anyio.to_thread.run_sync(signature)
    version, idle = 0, 0.0
    yield f"event: change\ndata: {version}\n\n"
    while True:
        await anyio.sleep(POLL_S)
        if stopping() or await request.is_disconnected():
            return
        now = await anyio.to_thread.run_sync(signature)
        if now != last:
            last, version, idle = now, version + 1, 0.0
            yield f"event: change\ndata: {version}\n\n"
        else:
            idle += POLL_S
            if idle >= HEARTBEAT_S:
                idle = 0.0
                yield ": still here\n\n"
