"""Scripted stand-ins for three model APIs on 127.0.0.1, for driving real clients in a live loop.

Each server records every request body and answers from a `Script`: while the conversation in
the request holds fewer calls than the script has, it answers with the next one (first looking
a deferred tool up with the client's search tool, as a model does); then with the script's
final text. The decision reads only the request, so retries and side requests (titles,
classifiers, which offer no tools) get consistent answers.

- `AnthropicMock`: the Messages API (`POST /v1/messages`, SSE when `stream` is set), Claude Code.
- `GeminiMock`: `POST /v1beta/models/M:streamGenerateContent?alt=sse` and `:generateContent`.
- `ResponsesMock`: the OpenAI Responses API (`POST /v1/responses`, SSE), Codex.

A scripted call names the bare tool (`resume_session`); the mock sends whatever name the client
advertised that ends with it (`mcp__contextflow__resume_session`, ...).
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    tool: str  # the bare tool name: an MCP tool (`resume_session`) or the client's own (`Write`, `exec_command`)
    arguments: dict[str, Any] = field(default_factory=dict)
    preface: str = ""  # text the model writes before the call, in the same message
    freeform: str | None = None  # the input of a freeform tool (Codex's `apply_patch`), sent instead of arguments


@dataclass(frozen=True)
class Call:
    """One call the mock makes: the client's tool name, its arguments, any text before it."""

    name: str
    arguments: dict[str, Any]
    preface: str = ""
    freeform: str | None = None


@dataclass(frozen=True)
class Script:
    calls: tuple[ToolCall, ...] = ()
    final_text: str = "Done."


@dataclass(frozen=True)
class Recorded:
    path: str
    body: dict[str, Any]

    @property
    def text(self) -> str:
        return json.dumps(self.body, ensure_ascii=False)

    def texts(self) -> list[str]:
        """Every string anywhere in the body (message texts, tool results, ...)."""
        found: list[str] = []

        def walk(value: Any) -> None:
            if isinstance(value, str):
                found.append(value)
            elif isinstance(value, dict):
                for inner in value.values():
                    walk(inner)
            elif isinstance(value, list):
                for inner in value:
                    walk(inner)

        walk(self.body)
        return found


def advertised_name(bare: str, names: list[str]) -> str:
    """The client's name for `bare`: itself, or the advertised name that ends with `_bare`."""
    for name in names:
        if name == bare or name.endswith(f"_{bare}"):
            return name
    return bare


def full_name(bare: str, text: str) -> str:
    """The longest tool name in `text` that ends with `bare` (`mcp__contextflow__bare`)."""
    found = re.findall(rf"(?<![\\A-Za-z0-9_.-])[A-Za-z0-9_.-]*{re.escape(bare)}\b", text.replace("\\n", " "))
    return max(found, key=len) if found else bare


def sse(events: list[tuple[str | None, dict[str, Any]]]) -> bytes:
    lines = []
    for event, data in events:
        if event:
            lines.append(f"event: {event}")
        lines.append("data: " + json.dumps(data))
        lines.append("")
    return ("\n".join(lines) + "\n").encode()


class MockModel:
    """A threaded HTTP server on a free loopback port; subclasses say how to answer."""

    def __init__(self) -> None:
        self.script = Script()
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name=type(self).__name__, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> MockModel:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def recorded(self, path_part: str = "") -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if path_part in r.path]

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()

    # -- what subclasses provide -------------------------------------------------------------

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        """(status, content type, body) for one POST."""
        raise NotImplementedError

    def tool_results(self, tool: str) -> list[str]:
        """What the model was shown for each call of `tool` (bare name), in call order: the tool
        result as it appears in the requests that followed the call."""
        seen: dict[str, str] = {}
        for recorded in self.recorded():
            seen.update(self.results_in(recorded.body, tool))
        return list(seen.values())

    def results_in(self, body: dict[str, Any], tool: str) -> dict[str, str]:
        """Call id -> result text for the calls of `tool` in one request body."""
        raise NotImplementedError

    def next_call(
        self, made: list[tuple[str, str]], advertised: list[str], request_text: str, discovery: str | None = None
    ) -> Call | None:
        """The next call to make, or None when the final text is due.

        `made` holds (name, JSON arguments) of the calls already in the conversation. A tool the
        client has not loaded yet (only named in the prompt) is first looked up with the client's
        `discovery` tool, once, as a model does; its full name is found in `request_text`.
        """
        done = [call for call in made if call[0] != discovery]
        if len(done) >= len(self.script.calls):
            return None
        step = self.script.calls[len(done)]
        name = advertised_name(step.tool, advertised)
        if name in advertised or discovery is None or discovery not in advertised:
            return Call(name, step.arguments, step.preface, step.freeform)
        full = full_name(step.tool, request_text)
        if not any(call[0] == discovery and step.tool in call[1] for call in made):
            return Call(discovery, self.discovery_arguments(full))
        return Call(full, step.arguments, step.preface, step.freeform)

    def discovery_arguments(self, name: str) -> dict[str, Any]:
        return {"query": name}

    # -- the HTTP side --------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        mock = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _reply(self, status: int, kind: str, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                with mock._lock:
                    mock.requests.append(Recorded(self.path, {"method": "GET"}))
                self._reply(200, "application/json", b"{}")

            do_HEAD = do_GET

            def do_POST(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(size)
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {"unparsed": raw.decode("utf-8", "replace")}
                if not isinstance(body, dict):
                    body = {"value": body}
                with mock._lock:
                    mock.requests.append(Recorded(self.path, body))
                try:
                    status, kind, payload = mock.answer(self.path, body)
                except Exception as exc:  # a mock bug shows up in the client's error, not as a hang
                    status, kind, payload = 500, "application/json", json.dumps({"error": repr(exc)}).encode()
                self._reply(status, kind, payload)

        return Handler


# -- Anthropic Messages API (Claude Code) --------------------------------------------------------


class AnthropicMock(MockModel):
    """Claude Code defers MCP tools: their names are in a system reminder and `ToolSearch`
    with `select:NAME` loads them."""

    def __init__(self) -> None:
        super().__init__()
        self._count = itertools.count(1)

    def discovery_arguments(self, name: str) -> dict[str, Any]:
        return {"query": f"select:{name}", "max_results": 5}

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        if "count_tokens" in path:
            return 200, "application/json", json.dumps({"input_tokens": len(json.dumps(body)) // 4}).encode()
        if "/v1/messages" not in path:
            return 404, "application/json", b'{"type":"error","error":{"type":"not_found_error","message":"no"}}'
        tools = [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)]
        made = [
            (str(b.get("name")), json.dumps(b.get("input")))
            for b in _blocks(body.get("messages"))
            if b.get("type") == "tool_use"
        ]
        call = self.next_call(made, tools, json.dumps(body), "ToolSearch") if tools else None
        number = next(self._count)
        blocks: list[dict[str, Any]]
        if call is not None:
            blocks = [{"type": "text", "text": call.preface}] if call.preface else []
            blocks.append({"type": "tool_use", "id": f"toolu_{number:04d}", "name": call.name, "input": call.arguments})
        else:
            blocks = [{"type": "text", "text": self.script.final_text if tools else "Mock side answer."}]
        message = {
            "id": f"msg_{number:04d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "mock"),
            "content": blocks,
            "stop_reason": "tool_use" if call else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        if not body.get("stream"):
            return 200, "application/json", json.dumps(message).encode()
        return 200, "text/event-stream", sse(_anthropic_events(message))

    def results_in(self, body: dict[str, Any], tool: str) -> dict[str, str]:
        blocks = list(_blocks(body.get("messages")))
        calls = {b.get("id") for b in blocks if b.get("type") == "tool_use" and is_tool(str(b.get("name")), tool)}
        return {
            str(b["tool_use_id"]): _content_text(b.get("content"))
            for b in blocks
            if b.get("type") == "tool_result" and b.get("tool_use_id") in calls
        }


def is_tool(name: str, bare: str) -> bool:
    return name == bare or name.endswith(f"_{bare}")


def _content_text(content: Any) -> str:
    """A tool result's content as text: a string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in content)
    return json.dumps(content)


def _blocks(messages: Any) -> Iterator[dict[str, Any]]:
    for message in messages or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            yield from (b for b in content if isinstance(b, dict))


def _anthropic_events(message: dict[str, Any]) -> list[tuple[str | None, dict[str, Any]]]:
    start = {**message, "content": [], "stop_reason": None, "usage": {"input_tokens": 10, "output_tokens": 1}}
    events: list[tuple[str | None, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            opened = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            opened = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        events += [
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": opened}),
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    return [
        *events,
        (
            "message_delta",
            {
                "type": "message_delta",
                "usage": {"output_tokens": 5},
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


# -- Gemini API (Gemini CLI) ---------------------------------------------------------------------

# What a side request that asks for JSON (next-speaker check, model router) gets back.
GEMINI_SIDE_JSON = {"next_speaker": "user", "reasoning": "scripted mock", "model_choice": "flash"}


class GeminiMock(MockModel):
    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        if ":countTokens" in path:
            return 200, "application/json", json.dumps({"totalTokens": len(json.dumps(body)) // 4}).encode()
        if ":generateContent" not in path and ":streamGenerateContent" not in path:
            return 404, "application/json", b'{"error":{"code":404,"message":"no","status":"NOT_FOUND"}}'
        tools = [
            str(d.get("name"))
            for t in body.get("tools") or []
            if isinstance(t, dict)
            for d in t.get("functionDeclarations") or []
            if isinstance(d, dict)
        ]
        made = [
            (str(p["functionCall"].get("name")), json.dumps(p["functionCall"].get("args")))
            for p in _parts(body.get("contents"))
            if isinstance(p.get("functionCall"), dict)
        ]
        call = self.next_call(made, tools, json.dumps(body)) if tools else None
        parts: list[dict[str, Any]]
        if call is not None:
            parts = [{"text": call.preface}] if call.preface else []
            parts.append({"functionCall": {"name": call.name, "args": call.arguments}})
        elif tools:
            parts = [{"text": self.script.final_text}]
        else:
            wants_json = (body.get("generationConfig") or {}).get("responseMimeType") == "application/json"
            parts = [{"text": json.dumps(GEMINI_SIDE_JSON) if wants_json else "Mock side answer."}]
        chunk = {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": "mock",
        }
        if ":streamGenerateContent" in path:
            return 200, "text/event-stream", sse([(None, chunk)])
        return 200, "application/json", json.dumps(chunk).encode()

    def results_in(self, body: dict[str, Any], tool: str) -> dict[str, str]:
        found = {}
        for part in _parts(body.get("contents")):
            response = part.get("functionResponse")
            if isinstance(response, dict) and is_tool(str(response.get("name")), tool):
                shown = response.get("response")
                output = shown.get("output") if isinstance(shown, dict) and len(shown) == 1 else None
                found[str(response.get("id"))] = output if isinstance(output, str) else json.dumps(shown)
        return found


def _parts(contents: Any) -> Iterator[dict[str, Any]]:
    for content in contents or []:
        parts = content.get("parts") if isinstance(content, dict) else None
        if isinstance(parts, list):
            yield from (p for p in parts if isinstance(p, dict))


# -- OpenAI Responses API (Codex) ----------------------------------------------------------------


class ResponsesMock(MockModel):
    """Codex defers MCP tools: a client-side `tool_search` call (a `tool_search_call` item) makes
    it send their definitions back (`tool_search_output`, tools grouped in namespaces); a call
    then names the tool and its namespace. A scripted call with `freeform` input is sent as a
    `custom_tool_call` (Codex's own `apply_patch` is such a freeform tool)."""

    def __init__(self) -> None:
        super().__init__()
        self._count = itertools.count(1)

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        if not path.rstrip("/").endswith("/responses"):
            return 404, "application/json", b'{"error":{"message":"not found","type":"invalid_request_error"}}'
        items = [i for i in body.get("input") or [] if isinstance(i, dict)]
        tools = _responses_tools(body.get("tools"), items)
        made = [
            (str(i.get("name")), str(i.get("arguments") if i.get("type") == "function_call" else i.get("input")))
            for i in items
            if i.get("type") in ("function_call", "custom_tool_call")
        ]
        made += [("tool_search", json.dumps(i.get("arguments"))) for i in items if i.get("type") == "tool_search_call"]
        call = self.next_call(made, list(tools), json.dumps(body), "tool_search") if tools else None
        number = next(self._count)
        output: list[dict[str, Any]] = []
        if call is None or call.preface:
            text = call.preface if call else self.script.final_text
            output.append(
                {
                    "type": "message",
                    "role": "assistant",
                    "id": f"msg_{number:04d}",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            )
        if call is not None and call.name == "tool_search":
            output.append(
                {
                    "type": "tool_search_call",
                    "id": f"tsc_{number:04d}",
                    "call_id": f"call_{number:04d}",
                    "status": "completed",
                    "execution": "client",
                    "arguments": {"query": call.arguments["query"], "limit": 8},
                }
            )
        elif call is not None and call.freeform is not None:
            output.append(
                {
                    "type": "custom_tool_call",
                    "id": f"ctc_{number:04d}",
                    "call_id": f"call_{number:04d}",
                    "status": "completed",
                    "name": call.name,
                    "input": call.freeform,
                }
            )
        elif call is not None:
            namespace, name = tools.get(call.name, ("", call.name))
            item = {
                "type": "function_call",
                "id": f"fc_{number:04d}",
                "call_id": f"call_{number:04d}",
                "name": name,
                "arguments": json.dumps(call.arguments),
            }
            output.append({**item, "namespace": namespace} if namespace else item)
        response = {
            "id": f"resp_{number:04d}",
            "object": "response",
            "status": "completed",
            "output": output,
            "usage": {
                "input_tokens": 10,
                "input_tokens_details": None,
                "output_tokens": 5,
                "output_tokens_details": None,
                "total_tokens": 15,
            },
        }
        return (
            200,
            "text/event-stream",
            sse(
                [
                    (
                        "response.created",
                        {"type": "response.created", "response": {**response, "status": "in_progress", "output": []}},
                    ),
                    *[
                        (
                            "response.output_item.done",
                            {"type": "response.output_item.done", "output_index": index, "item": item},
                        )
                        for index, item in enumerate(output)
                    ],
                    ("response.completed", {"type": "response.completed", "response": response}),
                ]
            ),
        )

    def results_in(self, body: dict[str, Any], tool: str) -> dict[str, str]:
        items = [i for i in body.get("input") or [] if isinstance(i, dict)]
        calls = {
            i.get("call_id")
            for i in items
            if i.get("type") in ("function_call", "custom_tool_call")
            and is_tool(f"{i.get('namespace') or ''}__{i.get('name')}", tool)
        }
        return {
            str(i["call_id"]): _content_text(i.get("output"))
            for i in items
            if i.get("type") in ("function_call_output", "custom_tool_call_output") and i.get("call_id") in calls
        }


def _responses_tools(declared: Any, items: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """Callable tools as `namespace__name` mapped to (namespace, name), namespace "" for none:
    the request's tools, `tool_search` when offered, and whatever earlier searches loaded."""
    found: dict[str, tuple[str, str]] = {}

    def add(tool: Any, namespace: str = "") -> None:
        if not isinstance(tool, dict):
            return
        if tool.get("type") == "tool_search":
            found["tool_search"] = ("", "tool_search")
        elif tool.get("type") == "namespace":
            for inner in tool.get("tools") or []:
                add(inner, str(tool.get("name") or ""))
        elif tool.get("name"):
            name = str(tool["name"])
            found[f"{namespace}__{name}" if namespace else name] = (namespace, name)

    for tool in declared or []:
        add(tool)
    for item in items:
        if item.get("type") == "tool_search_output":
            for tool in item.get("tools") or []:
                add(tool)
    return found
