"""The page's JSON API: each endpoint calls operations from the table, as the MCP server and the CLI do.

No reading or writing is done here: an endpoint picks the operation, passes the request's
arguments (checked as the CLI checks them), and returns the reply's data with every string
cleaned of control sequences (`text.clean_data`). Writes are attributed to `AGENT`. Store work
runs in a worker thread, one call at a time (a store is not shared between threads).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import anyio
import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from contextflow.adapters.ui import graphview, live
from contextflow.app import App
from contextflow.core.errors import ContextflowError, InputError
from contextflow.core.text import clean_data
from contextflow.features import operations
from contextflow.operations.arguments import check_arguments
from contextflow.operations.spec import JSON, Operation, Reply

AGENT = "human"  # who the page's changes are attributed to (the CLI's default too)
PAGE = 50  # entries, sessions and records per page
MAX_PAGE = 200
TIERS = ("tier:pinned", "tier:reference", "tier:working", "tier:off-context")


def json_response(data: Any, status: int = 200) -> Response:
    body = orjson.dumps(clean_data(data), option=orjson.OPT_NON_STR_KEYS)
    return Response(body, status, media_type="application/json", headers={"cache-control": "no-store"})


class Api:
    def __init__(self, app: App) -> None:
        self.app = app
        # the same store, without an active session: reads that name no session read them all
        self.unscoped = App(app.store, replace(app.settings, active_session=None, active_session_file=None))
        self.lock = threading.Lock()
        self.waiting = 0  # requests waiting for or holding the lock: warming up gives way to them
        self.idle = threading.Condition()
        self.ops: dict[str, Operation] = {op.name: op for op in operations()}
        self.stopping: Callable[[], bool] = lambda: False  # the server sets it: live streams end with it

    # -- calling operations ---------------------------------------------------------------

    def call_sync(self, name: str, arguments: JSON, unscoped: bool = False) -> Any:
        """Run one operation with these arguments; its reply's data."""
        op = self.ops[name]
        checked = check_arguments(op, {k: v for k, v in arguments.items() if v not in (None, "")}, cli=True)
        with self.idle:
            self.waiting += 1
        try:
            with self.lock:
                reply = op.run(self.unscoped if unscoped else self.app, checked)
        finally:
            with self.idle:
                self.waiting -= 1
                self.idle.notify_all()
        assert isinstance(reply, Reply), name
        return reply.data

    async def call(self, name: str, arguments: JSON, unscoped: bool = False) -> Any:
        return await anyio.to_thread.run_sync(lambda: self.call_sync(name, arguments, unscoped))

    def warm(self) -> None:
        """Fold (or load) what the first pages read, so the first request does not pay for it: the
        sessions, then the graph, giving way to requests between. The search index (the largest
        view to load) is loaded by the first search."""
        try:
            for view in ("sessions", "graph"):
                with self.idle:
                    self.idle.wait_for(lambda: self.waiting == 0)
                with self.lock:
                    self.app.store.view(view)
        except Exception as exc:  # a page will report the same problem when it asks
            print(f"contextflow ui: could not read the store yet: {exc}", flush=True)

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
        }
        posts: dict[str, Callable[[JSON], Any]] = {
            "node": self.curate_node,
            "record": self.curate_record,
            "handoff-wrong": self.mark_wrong,
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
                body = orjson.loads(await request.body())
                if not isinstance(body, dict):
                    raise InputError("send a JSON object")
                return json_response(await handler(body))
            except orjson.JSONDecodeError:
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
        return await self.call("list_sessions", {"project": q.get("project"), "limit": _limit(q.get("limit"))})

    async def start(self, request: Request) -> Any:
        q = request.query_params
        return await self.call("start-preview", {"project": q.get("project"), "session_id": q.get("session")})

    async def search(self, request: Request) -> Any:
        q = request.query_params
        kinds = [q["kind"]] if q.get("kind") else None
        return await self.call(
            "get_context",
            {"query": q.get("q"), "kinds": kinds, "project": q.get("project"), "limit": 30, "budget_tokens": 50_000},
        )

    async def graph(self, request: Request) -> Any:
        q = request.query_params
        query = graphview.query_of(q.get("q", ""), q.get("type", ""), q.get("tag", ""), q.get("tier", ""))
        data = await self.call("graph", {"query": query, "limit": _limit(q.get("limit"), 80, 300)})
        return {**data, "query": query, "layout": graphview.layout(data["nodes"], data["edges"])}

    async def node(self, request: Request) -> Any:
        return await self.call("show", {"id": request.query_params.get("id"), "with_edges": True})

    async def records(self, request: Request) -> Any:
        q = request.query_params
        wanted = {"prefix": q.get("prefix"), "category": q.get("category"), "limit": _limit(q.get("limit"))}
        return await self.call("context_list", {**wanted, "since_days": 0})  # every record, however old

    async def record(self, request: Request) -> Any:
        q = request.query_params
        return await self.call("context_get", {"key": q.get("key"), "project": q.get("project")})

    async def threads(self, request: Request) -> Any:
        q = request.query_params
        return await self.call("timeline_list_threads", {"status": q.get("status"), "limit": _limit(q.get("limit"))})

    async def thread(self, request: Request) -> Any:
        return await self.call("timeline_get_thread", {"thread_id": request.query_params.get("id"), "limit": 200})

    async def conversations(self, request: Request) -> Any:
        q = request.query_params
        found = await self.call("conversations list", {"project": q.get("project"), "limit": _limit(q.get("limit"))})
        return {"conversations": found}

    async def conversation(self, request: Request) -> Any:
        q = request.query_params
        return await self.call("get_conversation", {"conversation_id": q.get("id"), "project": q.get("project")})

    async def health(self, request: Request) -> Any:
        return await self.call("doctor", {})

    # -- curation: each an ordinary append --------------------------------------------------

    async def curate_node(self, body: JSON) -> Any:
        """pin, unpin, archive, unarchive, forget, or tags (add_tags / remove_tags)."""
        node_id, action = body.get("id"), body.get("action")
        changes: dict[str, list[str]] = {
            "pin": {"add_tags": ["tier:pinned"], "remove_tags": ["tier:off-context"]},
            "unpin": {"remove_tags": ["tier:pinned"]},
            "archive": {"add_tags": ["tier:off-context"], "remove_tags": [t for t in TIERS if t != "tier:off-context"]},
            "unarchive": {"remove_tags": ["tier:off-context"]},
        }.get(str(action), {})
        if action == "forget":
            return await self.call("graph_update", {"id": node_id, "delete": True, "agent": AGENT})
        if action == "tags":
            changes = {"add_tags": body.get("add_tags") or [], "remove_tags": body.get("remove_tags") or []}
        if not changes:
            raise InputError("action must be pin, unpin, archive, unarchive, forget or tags")
        given = {name: tags for name, tags in changes.items() if tags}
        return await self.call("graph_update", {"id": node_id, "agent": AGENT, **given})

    async def curate_record(self, body: JSON) -> Any:
        """pin, unpin or forget a keyed context record."""
        key, project, action = body.get("key"), body.get("project"), body.get("action")
        if action == "forget":
            return await self.call("context_delete", {"key": key, "project": project, "agent": AGENT})
        if action not in ("pin", "unpin"):
            raise InputError("action must be pin, unpin or forget")
        record = await self.call("context_get", {"key": key, "project": project})
        return await self.call(
            "context_set",
            {"key": key, "project": project, "value": record["value"], "pinned": action == "pin", "agent": AGENT},
        )

    async def mark_wrong(self, body: JSON) -> Any:
        return await self.call(
            "mark_handoff_wrong", {"handoff_id": body.get("id"), "reason": body.get("reason"), "agent": AGENT}
        )


def _limit(raw: str | None, default: int = PAGE, high: int = MAX_PAGE) -> int:
    try:
        return max(1, min(high, int(raw))) if raw else default
    except ValueError:
        return default
