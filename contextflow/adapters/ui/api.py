"""The page's JSON API: each endpoint calls operations from the table, as the MCP server and the CLI do.

No reading or writing is done here: an endpoint picks the operation, passes the request's
arguments (checked as the CLI checks them), and returns the reply's data with every string
cleaned of control sequences (`text.clean_data`). Writes (`curate.py`) are attributed to `curate.AGENT`. Store work
runs in a worker thread, one call at a time (a store is not shared between threads).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from contextflow.adapters.ui import curate, graphview, indexing, live
from contextflow.app import App
from contextflow.core import jsonio
from contextflow.core.errors import ContextflowError, InputError
from contextflow.core.text import clean_data
from contextflow.graph.writes import graph
from contextflow.operations.arguments import check_arguments
from contextflow.operations.spec import JSON, Operation, operations

PAGE = 50  # entries, sessions and records per page
MAX_PAGE = 200


def json_response(data: Any, status: int = 200) -> Response:
    body = jsonio.dumps(clean_data(data), any_keys=True)
    return Response(body, status, media_type="application/json", headers={"cache-control": "no-store"})


class Api:
    def __init__(self, app: App) -> None:
        self.app = app
        # the same store, without an active session: reads that name no session read them all
        self.unscoped = App(app.store, app.settings._replace(active_session=None, active_session_file=None))
        self.lock = threading.Lock()
        self.waiting = 0  # requests waiting for or holding the lock: warming up gives way to them
        self.idle = threading.Condition()
        self.ops: dict[str, Operation] = {op.name: op for op in operations()}
        self.stopping: Callable[[], bool] = lambda: False  # the server sets it: live streams end with it
        self.index = indexing.Indexer(app.store)
        self._checker: App | None = None  # the Health page's own handle on the store (`check`)
        self.checker_lock = threading.Lock()

    # -- calling operations ---------------------------------------------------------------

    def call_sync(
        self, name: str, arguments: JSON, unscoped: bool = False, then: Callable[[App, Any], Any] | None = None
    ) -> Any:
        """Run one operation with these arguments; its reply's data (given to `then` with the app it was read
        with, in the same turn of the lock, when `then` is given)."""
        op = self.ops[name]
        checked = check_arguments(op, {k: v for k, v in arguments.items() if v not in (None, "")}, cli=True)
        with self.idle:
            self.waiting += 1
        try:
            with self.lock:
                used = self.unscoped if unscoped else self.app
                reply = op.run(used, checked)
                if then is not None:
                    return then(used, reply.data)
        finally:
            with self.idle:
                self.waiting -= 1
                self.idle.notify_all()
        return reply.data

    async def call(self, name: str, arguments: JSON, unscoped: bool = False) -> Any:
        return await anyio.to_thread.run_sync(lambda: self.call_sync(name, arguments, unscoped))

    def warm(self) -> None:
        """Bring up to date (or fold) what the first pages read, so the first request does not pay for it:
        the sessions' and the graph's derived tables (the graph's tables in memory where those on disk cannot
        serve), giving way to
        requests between; then bring the search index up to
        date (a first build shows its progress on the search page)."""
        try:
            for view in ("sessions", "graph"):
                with self.idle:
                    self.idle.wait_for(lambda: self.waiting == 0)
                with self.lock:
                    if view == "sessions":
                        self.app.tables().update()  # sessions are read from the tables only: no fold to hold
                    else:
                        len(graph(self.app).live)  # its tables brought up to date (or filled in memory)
        except Exception as exc:  # a page will report the same problem when it asks
            print(f"contextflow ui: could not read the store yet: {exc}", flush=True)
        try:
            if self.index.behind() > 0:
                self.index.start()
        except Exception as exc:  # the first search says the same when it asks
            print(f"contextflow ui: could not start the search index build: {exc}", flush=True)
        try:
            self.check()  # the logs read once, so the Health page answers at once
        except Exception as exc:  # the Health page reports the same when it asks
            print(f"contextflow ui: could not read the logs' health yet: {exc}", flush=True)

    def check(self) -> Any:
        """What `doctor --quick` reports, read with a handle on the store of its own (its scan: events, bad
        lines, writers, bounds). The page's store is not touched, so the Health page does not wait for the
        page's lock; after its first read it reads only what the logs gained."""
        with self.checker_lock:
            if self._checker is None:
                from contextflow.core.store import Store
                from contextflow.features import all_fields

                store = Store.open(self.app.env, self.app.store.location, fields=all_fields)
                self._checker = App(store, self.app.settings, self.app.env)
            op = self.ops["doctor"]
            return op.run(self._checker, check_arguments(op, {"quick": True}, cli=True)).data

    def close(self) -> None:
        self.index.stop()
        with self.checker_lock:
            if self._checker is not None:
                self._checker.close()

    def signature(self) -> Any:
        return self.app.store.current_signatures()

    # -- routes ---------------------------------------------------------------------------

    def routes(self) -> list[Route]:
        gets: dict[str, Callable[[Request], Any]] = {
            "overview": self.overview,
            "entries": self.entries,
            "activity": self.activity,
            "sessions": self.sessions,
            "start": self.start,
            "search": self.search,
            "graph": self.graph,
            "node": self.node,
            "records": self.records,
            "record": self.record,
            "threads": self.threads,
            "thread": self.thread,
            "conversations": self.conversations,
            "conversation": self.conversation,
            "health": self.health,
            "feed": self.feed,
            "index": self.index_state,
            "state": self.derived_state,
        }
        posts: dict[str, Callable[[JSON], Any]] = {
            "node": lambda body: curate.node(self, body),
            "record": lambda body: curate.record(self, body),
            "handoff-wrong": lambda body: curate.mark_wrong(self, body),
            "note": lambda body: curate.add_note(self, body),
            "new-record": lambda body: curate.add_record(self, body),
            "new-node": lambda body: curate.add_node(self, body),
        }
        routes = [Route(f"/api/{name}", self._get(handler), methods=["GET"]) for name, handler in gets.items()]
        routes += [Route(f"/api/{name}", self._post(handler), methods=["POST"]) for name, handler in posts.items()]
        routes.append(
            Route("/api/events", lambda request: live.stream(request, self.signature, self.stopping), methods=["GET"])
        )
        return routes

    def _get(self, handler: Callable[[Request], Any]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            try:
                return json_response(await handler(request))
            except ContextflowError as exc:
                return json_response({"error": str(exc)}, 400)

        return endpoint

    def _post(self, handler: Callable[[JSON], Any]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            try:
                body = jsonio.loads(await request.body())
                if not isinstance(body, dict):
                    raise InputError("send a JSON object")
                return json_response(await handler(body))
            except jsonio.DecodeError:
                return json_response({"error": "the request body is not JSON"}, 400)
            except ContextflowError as exc:
                return json_response({"error": str(exc)}, 400)

        return endpoint

    # -- reads ----------------------------------------------------------------------------

    async def overview(self, request: Request) -> Any:
        projects = await self.call("list_projects", {})
        return {**projects, "default_project": self.app.settings.default_project, "store": str(self.app.store.folder)}

    async def entries(self, request: Request) -> Any:
        q = request.query_params
        return await self.call(
            "read_shared_context",
            {
                "project": q.get("project"),
                "session_id": q.get("session") or "",
                "before": q.get("before"),
                "kind": q.get("kind"),
                "agent": q.get("agent"),
                "since": q.get("since"),
                "limit": _limit(q.get("limit")),
            },
            unscoped=True,
        )

    async def activity(self, request: Request) -> Any:
        q = request.query_params
        return await self.call(
            "session_activity", {"project": q.get("project"), "session_id": q.get("session"), "limit": 200}
        )

    async def sessions(self, request: Request) -> Any:
        q = request.query_params
        return await self.call(
            "list_sessions",
            {
                "project": q.get("project"),
                "agent": q.get("agent"),
                "since": q.get("since"),
                "limit": _limit(q.get("limit")),
            },
        )

    async def start(self, request: Request) -> Any:
        q = request.query_params
        return await self.call("start-preview", {"project": q.get("project"), "session_id": q.get("session")})

    async def search(self, request: Request) -> Any:
        """Results, or (while the index is being built) how far the build is: the page asks again."""
        q = request.query_params
        building = await anyio.to_thread.run_sync(self.index.building)
        if building is not None:
            return {"indexing": building}
        kinds = [q["kind"]] if q.get("kind") else None
        return await self.call(
            "get_context",
            {"query": q.get("q"), "kinds": kinds, "project": q.get("project"), "limit": 30, "budget_tokens": 50_000},
        )

    async def graph(self, request: Request) -> Any:
        """The nodes a filter matches (most recently updated first) and the edges among them; or, with
        `around`, the nodes within `depth` hops of one node; with `find`, the nodes whose text holds it."""
        q = request.query_params
        if q.get("around"):
            depth = _limit(q.get("depth"), 1, graphview.MAX_DEPTH)
            walk = await self.call("related", {"id": q.get("around"), "depth": depth})
            return graphview.neighbourhood(walk, await self.call("show", {"id": walk["id"], "with_edges": True}))
        if "find" in q:  # a search box: the nodes whose text holds these words
            query, limit = graphview.find_query(q["find"]), graphview.FOUND
        else:
            query = graphview.query_of(q.get("q", ""), q.get("type", ""), q.get("tag", ""), q.get("tier", ""))
            limit = _limit(q.get("limit"), graphview.SHOWN, graphview.MAX_SHOWN)
        data = await self.call("graph", {"query": query, "limit": limit})
        return {**data, "query": query}

    async def node(self, request: Request) -> Any:
        """One node with its edges, and its neighbours' labels (`graphview.with_labels`)."""
        node = await self.call("show", {"id": request.query_params.get("id"), "with_edges": True})
        return graphview.with_labels(node, await self.call("related", {"id": node["id"], "depth": 1}))

    async def records(self, request: Request) -> Any:
        q = request.query_params
        return await self.call(
            "context_list",
            {
                "prefix": q.get("prefix"),
                "category": q.get("category"),
                "since_days": _days(q.get("days")),
                "limit": _limit(q.get("limit")),
            },
        )

    async def record(self, request: Request) -> Any:
        q = request.query_params
        return await self.call("context_get", {"key": q.get("key"), "project": q.get("project")})

    async def threads(self, request: Request) -> Any:
        q = request.query_params
        return await self.call("timeline_list_threads", {"status": q.get("status"), "limit": _limit(q.get("limit"))})

    async def thread(self, request: Request) -> Any:
        return await self.call("timeline_get_thread", {"thread_id": request.query_params.get("id"), "limit": 200})

    async def conversations(self, request: Request) -> Any:
        """The saved conversations, and (as other lists' replies say it) `partial`, how far the build is, when
        they were read while it had not reached most of the logs (the operation's JSON is a list: said here)."""
        q = request.query_params
        arguments = {"project": q.get("project"), "limit": _limit(q.get("limit"))}

        def listed() -> Any:
            return self.call_sync("conversations list", arguments, then=_with_progress)

        return await anyio.to_thread.run_sync(listed)

    async def conversation(self, request: Request) -> Any:
        q = request.query_params
        return await self.call("get_conversation", {"conversation_id": q.get("id"), "project": q.get("project")})

    async def health(self, request: Request) -> Any:
        report = await anyio.to_thread.run_sync(self.check)  # `capture`: per client (capture/health.py)
        return {**report, "indexing": await anyio.to_thread.run_sync(self.index.building)}

    async def derived_state(self, request: Request) -> Any:
        """Whether this machine's derived tables hold every log's events, and how far a build is: until
        they do, pages show what is built so far, and say so."""

        def read() -> Any:
            tables = self.app.tables()
            done, total = tables.built()
            return {"tables": {"current": tables.current(), "done_bytes": done, "total_bytes": total}}

        return await anyio.to_thread.run_sync(read)

    async def index_state(self, request: Request) -> Any:
        return {"indexing": await anyio.to_thread.run_sync(self.index.building)}

    async def feed(self, request: Request) -> Any:
        """What every agent on every machine wrote, newest first, with the filters' choices."""
        q = request.query_params
        filters = {name: q.get(name) for name in ("project", "agent", "machine", "kind", "before")}
        arguments = {**filters, "session_id": q.get("session"), "limit": _limit(q.get("limit"))}
        return await self.call("recent_activity", arguments, unscoped=True)


def _with_progress(app: App, found: Any) -> JSON:
    """The conversations `found`, with `partial` when they were read from the logs' newest bytes only."""
    from contextflow import ondisk
    from contextflow.conversations.projection import PROJECTION

    progress = ondisk.partial(app, PROJECTION)
    return {"conversations": found, **({"partial": progress._asdict()} if progress is not None else {})}


def _limit(raw: str | None, default: int = PAGE, high: int = MAX_PAGE) -> int:
    try:
        return max(1, min(high, int(raw))) if raw else default
    except ValueError:
        return default


def _days(raw: str | None) -> int:
    """The records' age window in days; 0 (the default) is any age."""
    try:
        return max(0, min(36_500, int(raw))) if raw else 0
    except ValueError:
        return 0
