"""The HTTP bridge: the MCP server over streamable HTTP, with bearer tokens scoped to projects.

`contextflow serve --http` binds 127.0.0.1 by default; every request to `/mcp` needs
`Authorization: Bearer <token>` (grants: auth.py), else 401. Scoping is enforced below the
tools, so every tool, prompt and resource (also ones added later) obeys it. Each grant gets its
own `App`, whose store reads only the projects it may read (`Store.read_projects`: a condition of
every query of the derived tables, never a fold in memory; an event's project is its `project`
field, else `shared`), stamps its default project on events that carry none and
refuses writes to projects it may not write; and its own active-session file. A read-only grant
lists and runs only read-only tools, and no prompt that moves its active session.

Store work runs in worker threads, never on the event loop. Calls of one grant run one at a
time; grants that read every project share one lock; scoped grants run side by side, their appends
serialized (every grant's store catches up the machine-local derived tables under their own locks).
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend, RequireAuthMiddleware
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Route

from contextflow.adapters.server.app import ContextflowServer, sdk_server, tool_error
from contextflow.adapters.server.auth import Grant, GrantVerifier
from contextflow.adapters.server.jsonrpc_guard import JsonRpcGuard
from contextflow.app import App
from contextflow.core import regexes
from contextflow.core.errors import InputError
from contextflow.core.store import Store

T = TypeVar("T")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MCP_PATH = "/mcp"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
UNSCOPED_LOCK = "*"  # never a grant name (names are letters, digits, '.', '_', '-')
# Prompts that make a session the active one; a read-only grant may not run them.
SESSION_MOVING_PROMPTS = regexes.compile(r"^(new_session|resume_by_id|resume_\d+)$")


_APPENDING = threading.Lock()


class GrantStore(Store):
    """The store as one grant may use it: reads kept to its projects (`read_projects`), writes checked here."""

    grant: Grant
    default_project: str

    def admit(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        """`data` stamped with the default project when it names none; refused unless the grant may write it."""
        project = data.get("project")
        if not isinstance(project, str) or not project.strip():
            data, project = {**data, "project": self.default_project}, self.default_project
        project = project.strip()
        if not self.grant.can_write(project):
            raise InputError(
                f"the token {self.grant.name!r} may not write to project {project!r}; it is {self.grant.describe()}"
            )
        return data

    appending = _APPENDING  # grants' threads queue here instead of polling the writer's file lock


def grant_app(base: App, grant: Grant) -> App:
    """An App over the same store folder that only sees and writes what `grant` allows."""
    source = base.store
    store = GrantStore(
        source.location,
        source.writer,
        source.state_dir,
        fields=source.fields,
        fsync=base.settings.fsync,
        legacy_max_bytes=source.legacy_max_bytes,
    )
    store.grant = grant
    store.read_projects = grant.read
    store.default_project = grant.default_project(base.settings.default_project)
    session_dir = source.state_dir / "http-sessions"
    session_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    settings = base.settings._replace(
        default_project=store.default_project,
        active_session=None,
        active_session_file=session_dir / f"{grant.name}.txt",
    )
    return App(store, settings)


class ReadOnlyServer(ContextflowServer):
    """A read-only grant's server: only read-only tools, and no prompt that moves the active session."""

    def __init__(self, app: App, grant: Grant) -> None:
        super().__init__(app)
        self.grant = grant

    def tool_list(self) -> list[types.Tool]:
        return [tool for tool in super().tool_list() if self.tools[tool.name].read_only]

    def call(self, name: str, arguments: Any) -> types.CallToolResult:
        spec = self.tools.get(name)
        if spec is not None and not spec.read_only:
            return tool_error(
                f"{name} changes state, and the token {self.grant.name!r} is read-only "
                f"({self.grant.describe()}); use a read-only tool or a token that may write"
            )
        return super().call(name, arguments)

    def prompt_list(self) -> list[types.Prompt]:
        return [prompt for prompt in super().prompt_list() if not SESSION_MOVING_PROMPTS.match(prompt.name)]

    def get_prompt(self, name: str, arguments: dict[str, str] | None) -> tuple[types.GetPromptResult, bool]:
        if SESSION_MOVING_PROMPTS.match(name):
            raise MCPError(
                types.INVALID_PARAMS,
                (
                    f"{name} makes a session the active one, and the token {self.grant.name!r} is read-only "
                    f"({self.grant.describe()}); call resume_session with a session_id to read a session instead"
                ),
            )
        return super().get_prompt(name, arguments)


class HttpBridge:
    """One MCP server facing the network; each request is served by its token's own ContextflowServer,
    in a worker thread under the grant's lock."""

    def __init__(self, base: App, grants: Sequence[Grant]) -> None:
        self.base = base
        self.verifier = GrantVerifier(list(grants))
        self._servers: dict[str, ContextflowServer] = {}
        self._locks: dict[str, anyio.Lock] = {}
        self.server = sdk_server(self._run)

    async def _run(self, ctx: ServerRequestContext[Any], work: Callable[[ContextflowServer], T]) -> T:
        request = ctx.request
        user = request.scope.get("user") if request is not None and hasattr(request, "scope") else None
        grant = self.verifier.by_name.get(user.access_token.client_id) if isinstance(user, AuthenticatedUser) else None
        if grant is None:  # the auth middleware already refused it; never serve unauthenticated
            raise MCPError(types.INVALID_REQUEST, "authentication required: send Authorization: Bearer <token>")
        lock = self._locks.setdefault(UNSCOPED_LOCK if grant.reads_everything else grant.name, anyio.Lock())
        async with lock:
            return await anyio.to_thread.run_sync(lambda: work(self._server_for(grant)))

    def _server_for(self, grant: Grant) -> ContextflowServer:
        """The grant's server, built on first use (in a worker thread holding the grant's lock)."""
        if grant.name not in self._servers:
            app = grant_app(self.base, grant)
            self._servers[grant.name] = ReadOnlyServer(app, grant) if grant.read_only else ContextflowServer(app)
        return self._servers[grant.name]

    def close(self) -> None:
        for server in self._servers.values():
            server.app.close()


def build_http_app(bridge: HttpBridge, host: str = DEFAULT_HOST) -> Starlette:
    """The ASGI app: bearer auth in front of the SDK's streamable-HTTP session manager."""
    security = None
    if host in LOOPBACK:  # DNS-rebinding protection, as the SDK sets up for loopback servers
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    manager = StreamableHTTPSessionManager(app=bridge.server, security_settings=security)
    endpoint = RequireAuthMiddleware(JsonRpcGuard(StreamableHTTPASGIApp(manager)), required_scopes=[])

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return Starlette(
        routes=[Route(MCP_PATH, endpoint=endpoint)],
        middleware=[
            Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(bridge.verifier)),
            Middleware(AuthContextMiddleware),
        ],
        lifespan=lifespan,
    )


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror}; pick another --port") from None
    sock.listen(128)
    return sock


def run_http(base: App, grants: Sequence[Grant], host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> None:
    import uvicorn

    bridge = HttpBridge(base, grants)
    sock = bind(host, port)
    bound = sock.getsockname()[1]
    where = f"[{host}]" if ":" in host else host
    print(
        f"contextflow: MCP over HTTP at http://{where}:{bound}{MCP_PATH} for {len(grants)} token(s): "
        + "; ".join(grant.describe() for grant in grants),
        file=sys.stderr,
        flush=True,
    )
    if host not in LOOPBACK:
        print(
            "contextflow: warning: listening beyond this machine over plain HTTP; put TLS in front of it "
            "(a reverse proxy) so tokens never cross the network in clear text",
            file=sys.stderr,
            flush=True,
        )
    config = uvicorn.Config(build_http_app(bridge, host), log_level="warning", access_log=False, lifespan="on")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
        bridge.close()
