"""The page's connections: a slow or tokenless client cannot hold `contextflow ui` down.

uvicorn bounds neither how long a client may take to send its request headers nor how many
connections stay open: 1,100 half-sent requests used up a 1,024 open-file limit, and the page was
unreachable while they were held. Here a connection is unproven until a request on it shows the
token (the `Guard` calls `Connections.proven`). An unproven connection is closed after
HEADER_TIMEOUT_S, and at most MAX_UNPROVEN stay open: a new one closes the oldest. A page with the
token proves its connection with its first request, within milliseconds.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT_S = 10.0
MAX_UNPROVEN = 128


class Connections:
    """The open connections that have not shown the token yet, oldest first."""

    def __init__(self, limit: int = MAX_UNPROVEN, timeout_s: float = HEADER_TIMEOUT_S) -> None:
        self.limit, self.timeout_s = limit, timeout_s
        self.unproven: dict[Any, asyncio.TimerHandle] = {}  # client address -> its closing timer
        self._protocols: dict[Any, H11Protocol] = {}

    def opened(self, protocol: H11Protocol) -> None:
        key = protocol.client
        self._protocols[key] = protocol
        self.unproven[key] = protocol.loop.call_later(self.timeout_s, self._close, key)
        while len(self.unproven) > self.limit:
            self._close(next(iter(self.unproven)))

    def proven(self, client: Any) -> None:
        """A request on this connection showed the token: it may stay like any other."""
        timer = self.unproven.pop(tuple(client) if client else client, None)
        if timer is not None:
            timer.cancel()

    def closed(self, protocol: H11Protocol) -> None:
        key = protocol.client
        if self._protocols.get(key) is protocol:
            del self._protocols[key]
            self.proven(key)

    def _close(self, key: Any) -> None:
        timer = self.unproven.pop(key, None)
        if timer is not None:
            timer.cancel()
        protocol = self._protocols.pop(key, None)
        if protocol is not None and protocol.transport is not None:
            protocol.transport.close()


def protocol_for(connections: Connections) -> type[H11Protocol]:
    """uvicorn's h11 protocol, telling `connections` when a connection opens and closes."""

    class GuardedProtocol(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            connections.opened(self)

        def connection_lost(self, exc: Exception | None) -> None:
            connections.closed(self)
            super().connection_lost(exc)

    return GuardedProtocol
