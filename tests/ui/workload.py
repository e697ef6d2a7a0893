"""A store written by real tool calls (an in-memory MCP client), from two machines: what the UI tests
and `scripts/screenshots.py` look at. It holds hostile text that must stay text on the page."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from contextflow.adapters import hooks
from contextflow.adapters.server.app import ContextflowServer
from contextflow.app import App

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "capture"
CAPTURED_PROJECT = "example-owner/calc-demo"
HOSTILE_IMG = '<img src=x onerror="window.__pwned=1">'
HOSTILE_SCRIPT = "</script><script>window.__pwned=2</script>"


@dataclass
class Written:
    """Ids of what was written, for the tests to find again."""

    handoffs: dict[str, str] = field(default_factory=dict)
    nodes: dict[str, str] = field(default_factory=dict)
    thread: str = ""
    conversation: str = ""
    captured_session: str = ""


async def _call(client: Client, name: str, arguments: dict[str, Any]) -> Any:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, (name, result.content)
    return result.structured_content


async def _machine(env: Mapping[str, str], work: Any) -> None:
    app = App.open({**env, "CONTEXTFLOW_TOOLS": "all"})
    try:
        async with Client(ContextflowServer(app).server, mode="legacy") as client:
            await work(client)
    finally:
        app.close()


async def write_store(env: Mapping[str, str] | None = None) -> Written:
    env = dict(os.environ if env is None else env)
    done = Written()

    async def laptop(client: Client) -> None:
        shop = {"project": "acme/shop", "session_id": "checkout-flow"}
        await _call(
            client,
            "append_shared_note",
            {**shop, "agent": "claude", "text": "Cart totals now in cents", "task": "checkout"},
        )
        first = await _call(
            client,
            "write_shared_handoff",
            {
                **shop,
                "agent": "claude",
                "summary": "Checkout works end to end; refunds not started",
                "next_steps": ["add refund endpoint", "test refunds"],
                "files": ["shop/checkout.py"],
            },
        )
        done.handoffs["first"] = first["id"]
        await _call(client, "append_shared_note", {**shop, "agent": "claude", "text": HOSTILE_IMG})
        api = {"project": "acme/api", "session_id": "rate-limits"}
        await _call(client, "append_shared_note", {**api, "agent": "gemini", "text": "Token bucket per API key"})
        decision = await _call(
            client,
            "graph_remember",
            {
                "type": "decision",
                "content": "Store money as integer cents",
                "agent": "claude",
                "tags": ["project:shop", "tier:reference"],
                "metadata": {"rationale": "no float rounding"},
            },
        )
        done.nodes["decision"] = decision["id"]
        fact = await _call(
            client,
            "graph_remember",
            {
                "type": "fact",
                "content": "Refunds go through the payments service",
                "agent": "claude",
                "tags": ["project:shop", "tier:off-context"],
                "links": [{"to": decision["id"], "type": "DEPENDS_ON"}],
            },
        )
        done.nodes["fact"] = fact["id"]
        done.nodes["hostile"] = (
            await _call(
                client,
                "graph_remember",
                {"type": "observation", "content": HOSTILE_SCRIPT, "agent": "codex", "tags": ["project:shop"]},
            )
        )["id"]
        await _call(
            client,
            "context_set",
            {
                "key": "pr:acme/shop:42",
                "value": {"status": "waiting for review", "title": "Refund endpoint"},
                "agent": "claude",
                "pinned": True,
            },
        )
        thread = await _call(
            client, "timeline_create_thread", {"name": "Refunds", "description": "refund flow", "agent": "claude"}
        )
        done.thread = thread["id"]
        await _call(
            client,
            "timeline_add_thought",
            {"thread_id": thread["id"], "content": "Start with full refunds", "agent": "claude"},
        )

    async def desktop(client: Client) -> None:
        shop = {"project": "acme/shop", "session_id": "checkout-flow"}
        await _call(client, "append_shared_note", {**shop, "agent": "codex", "text": "Picked up checkout on desktop"})
        second = await _call(
            client,
            "write_shared_handoff",
            {
                **shop,
                "agent": "codex",
                "summary": "Refunds done and tested " + HOSTILE_SCRIPT,
                "open_questions": ["partial refunds?"],
            },
        )
        done.handoffs["second"] = second["id"]
        saved = await _call(
            client,
            "save_conversation",
            {
                "source": "codex",
                "project": "acme/shop",
                "topic": "Money representation",
                "summary": "We compared floats, decimals and integer cents for prices.",
                "decisions": [
                    {"decision": "integer cents", "reasoning": "exact sums", "status": "chosen"},
                    {"decision": "floats", "reasoning": "rounding errors", "status": "rejected"},
                ],
                "related_entities": ["shop/money.py"],
            },
        )
        done.conversation = saved["conversation_id"]
        await _call(
            client,
            "timeline_add_thought",
            {"thread_id": done.thread, "content": "Partial refunds later", "agent": "codex"},
        )

    await _machine({**env, "CONTEXTFLOW_WRITER": "laptop"}, laptop)
    await _machine({**env, "CONTEXTFLOW_WRITER": "desktop"}, desktop)
    done.captured_session = capture_turn({**env, "CONTEXTFLOW_WRITER": "laptop"})
    return done


def capture_turn(env: Mapping[str, str]) -> str:
    """A Claude Code turn captured by the real Stop hook from a recorded transcript (an activity
    record and an automatic handoff in the repository's project); returns its session id."""
    root = Path(env["CONTEXTFLOW_STORE"]).parent / "captured"
    work = root / "work"
    (work / ".git").mkdir(parents=True, exist_ok=True)
    (work / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:Example-Owner/calc-demo.git\n')
    transcript = root / "transcript.jsonl"
    sample = "/work/research/capture/runs/claude-full/work"
    transcript.write_text((FIXTURES / "claude-transcript.jsonl").read_text().replace(sample, str(work)))
    payload = {
        **json.loads((FIXTURES / "claude-Stop.json").read_text()),
        "transcript_path": str(transcript),
        "cwd": str(work),
    }
    hooks.run("stop", json.dumps(payload).encode(), env)
    return str(payload["session_id"])


def write_store_sync(env: Mapping[str, str] | None = None) -> Written:
    return anyio.run(write_store, env)
