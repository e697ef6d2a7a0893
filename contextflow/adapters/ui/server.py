"""The `contextflow ui` web server: one local page, reachable only from this machine.

It binds 127.0.0.1 only. Every request needs the token printed with the URL (`?token=`), which
is swapped for an HttpOnly, SameSite=Strict cookie at once (the page's links then work); the browser
is opened on a one-time code instead (its command line is readable by every local user). Connections
that have not shown the token are capped and timed out (`transport.py`). A
request whose Host is not this server's loopback address, or whose Origin is another site,
is refused before anything else runs: a web page elsewhere cannot reach the server through
DNS rebinding or a cross-site form. Writes (POST) must come from the page itself (Origin set).
Every response carries a strict Content-Security-Policy: scripts and styles from the server
only, no inline script, nothing fetched from elsewhere.
"""

from __future__ import annotations

import hmac
import secrets
import sys
import threading
import time
import webbrowser
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.datastructures import Headers, QueryParams
from starlette.responses import FileResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from contextflow.adapters.ui import address
from contextflow.adapters.ui.address import HOST, bind
from contextflow.adapters.ui.api import Api
from contextflow.adapters.ui.transport import Connections, protocol_for
from contextflow.app import App
from contextflow.core import jsonio

__all__ = ["HOST", "bind", "build_app", "run_ui"]
CODE_TTL_S = 120.0  # how long the browser's one-time code opens the page
STATIC = Path(__file__).parent / "static"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGI = Callable[[Scope, Receive, Send], Awaitable[None]]


def cookie_name(port: int) -> str:
    return f"contextflow_ui_{port}"  # cookies ignore ports: two servers must not share one


class Guard:
    """ASGI middleware: loopback Host, same Origin, then the token (query once, cookie after) or the
    one-time code the browser was opened with (`one_time_code`: the token is never on a command line)."""

    def __init__(self, app: ASGI, token: str, port: int, connections: Connections | None = None) -> None:
        self.app, self.token, self.cookie = app, token, cookie_name(port)
        self.hosts = {f"{HOST}:{port}", f"localhost:{port}"}
        self.origins = {f"http://{host}" for host in self.hosts}
        self.connections = connections  # told which connections showed the token (transport.py)
        self._code: tuple[str, float] | None = None

    def _valid(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())

    def one_time_code(self) -> str:
        """A code that opens the page once, within CODE_TTL_S (for the browser's command line)."""
        code = secrets.token_urlsafe(24)
        self._code = (code, time.monotonic() + CODE_TTL_S)
        return code

    def _take_code(self, given: str | None) -> bool:
        if given is None or self._code is None:
            return False
        code, expires = self._code
        if time.monotonic() >= expires:
            self._code = None
            return False
        if not hmac.compare_digest(given.encode(), code.encode()):
            return False
        self._code = None  # once
        return True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        response = self.refusal(scope)
        proven = response is None or response.status_code == 303
        if proven and self.connections is not None:
            self.connections.proven(scope.get("client"))
        if response is not None:
            await response(scope, receive, secured)
            return
        await self.app(scope, receive, secured)

    def refusal(self, scope: Scope) -> Response | None:
        """Why this request may not go on (a response to send), or None."""
        headers = Headers(scope=scope)
        if headers.get("host") not in self.hosts:
            return PlainTextResponse("refused: the Host header is not this server's local address", 403)
        origin = headers.get("origin")
        if origin is not None and origin not in self.origins:
            return PlainTextResponse("refused: the request comes from another site (Origin)", 403)
        if headers.get("sec-fetch-site") == "cross-site":
            return PlainTextResponse("refused: the request comes from another site", 403)
        if scope["method"] not in ("GET", "HEAD") and origin is None:
            return PlainTextResponse("refused: changes must come from the contextflow page (no Origin)", 403)
        query = QueryParams(scope.get("query_string", b"").decode("latin-1"))
        if self._valid(query.get("token")) or self._take_code(query.get("code")):
            # the printed URL (or the browser's one-time code): swap it for a cookie, drop it from the URL
            rest = urlencode([(k, v) for k, v in query.multi_items() if k not in ("token", "code")])
            path = "/" + scope["path"].lstrip("/")  # never `//host`: a redirect stays on this server
            redirect = RedirectResponse(path + (f"?{rest}" if rest else ""), 303)
            redirect.set_cookie(self.cookie, self.token, httponly=True, samesite="strict", path="/")
            return redirect
        cookies = SimpleCookie()
        try:
            cookies.load(headers.get("cookie", ""))
        except Exception:
            cookies = SimpleCookie()
        morsel = cookies.get(self.cookie)
        if self._valid(morsel.value if morsel is not None else None):
            return None
        return PlainTextResponse("unauthorized: open the URL that `contextflow ui` printed (it carries the token)", 401)


def build_app(app: App, token: str, port: int, api: Api | None = None, connections: Connections | None = None) -> Guard:
    """The whole server as an ASGI app: the page, its assets, the JSON API and the live stream."""
    api = api or Api(app)

    async def index(request: Any) -> Response:
        return FileResponse(STATIC / "index.html", headers={"cache-control": "no-store"})

    routes = [Route("/", index), *api.routes(), Mount("/static", StaticFiles(directory=STATIC), name="static")]
    return Guard(Starlette(routes=routes), token, port, connections)


def run_ui(app: App, port: int | None, open_browser: bool = True) -> None:
    """Serve until interrupted. The first line printed is the URL with this store's token; without a
    `port`, on this store's kept port (`address.py`): the same URL on every start."""
    import uvicorn

    jsonio.fast()  # the page's server parses rows all its life
    sock, note = address.listen(app.store.state_dir, port)
    bound = sock.getsockname()[1]
    token = address.token(app.store.state_dir)
    url = f"http://{HOST}:{bound}/?token={token}"
    print(url, flush=True)
    if note:
        print(f"contextflow ui: {note}", file=sys.stderr, flush=True)
    print("contextflow ui: serving on this machine only; Ctrl-C stops it", file=sys.stderr, flush=True)
    api = Api(app)
    threading.Thread(target=api.warm, daemon=True).start()  # fold the store before the first page asks
    connections = Connections()
    guard = build_app(app, token, bound, api, connections)
    if open_browser:  # a browser's command line is readable by every local user: a one-time code, not the token
        opened = f"http://{HOST}:{bound}/?code={guard.one_time_code()}"
        threading.Thread(target=webbrowser.open, args=(opened,), daemon=True).start()
    config = uvicorn.Config(
        guard,
        http=protocol_for(connections),
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    api.stopping = lambda: server.should_exit  # open pages' streams end, so Ctrl-C stops at once
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
