"""context set|get|list|delete, timeline ..., whereami, wherewasi: keyed records and the timeline
from a shell or a client hook, over the same core functions as the MCP tools."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import Any

import orjson

from contextflow import orient, records, timeline
from contextflow.app import App
from contextflow.cli.output import add_format, emit
from contextflow.errors import InputError
from contextflow.text import DATA_NOTICE
from contextflow.views.timeline import THOUGHT_STATUSES, THOUGHT_TYPES, THREAD_STATUSES


def _now() -> datetime:
    return datetime.now(UTC)


def _json_object(raw: str | None, name: str) -> dict[str, Any] | None:
    """A JSON object from the command line; '-' reads it from stdin."""
    if raw is None:
        return None
    text = sys.stdin.read() if raw == "-" else raw
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise InputError(
            f'{name} is not valid JSON; pass an object such as \'{{"status": "waiting"}}\' (or - to read stdin)'
        ) from None
    if not isinstance(value, dict):
        raise InputError(f'{name} must be a JSON object such as \'{{"text": "..."}}\', got {type(value).__name__}')
    return value


def _leaf(sub: Any, name: str, help_text: str, func: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name, help=help_text, description=help_text[:1].upper() + help_text[1:] + "."
    )
    add_format(parser)
    parser.set_defaults(func=func)
    return parser


def register(sub: Any) -> None:
    context = sub.add_parser(
        "context",
        help="keyed context records (set, get, list, delete)",
        description="Shared keyed context records: facts, PRs, machines, things waited on.",
    )
    ctx = context.add_subparsers(dest="context_command", metavar="ACTION", required=True)
    setter = _leaf(ctx, "set", "create or update a record", cmd_context_set)
    setter.add_argument("key", help="namespaced key prefix:name, e.g. pr:owner/repo:1777, machine:chisel")
    setter.add_argument("value", help='JSON object, e.g. \'{"ip": "10.0.0.2"}\'; - reads it from stdin')
    setter.add_argument("--category", help="project, pr, machine, waiting, fact or clipboard (default: key prefix)")
    setter.add_argument("--label", help="human-readable title")
    setter.add_argument("--thread", dest="thread_id", help="timeline thread id or prefix to link ('' unlinks)")
    setter.add_argument("--pinned", action=argparse.BooleanOptionalAction, default=None, help="show in whereami")
    setter.add_argument("--expires", dest="expires_at", help="ISO time or duration (24h, 7d); 'never' clears")
    setter.add_argument("--agent", default="human", help="who writes it (default 'human')")
    getter = _leaf(ctx, "get", "show one record by key", cmd_context_get)
    getter.add_argument("key")
    lister = _leaf(ctx, "list", "list records, newest first", cmd_context_list)
    lister.add_argument("--category")
    lister.add_argument("--thread", dest="thread_id", help="thread id or prefix")
    lister.add_argument("--pinned-only", action="store_true", default=None)
    lister.add_argument("--since-days", type=int, help="updated within N days (default 7; 0 = any time)")
    lister.add_argument("--limit", type=int, help="at most N (default 50)")
    lister.add_argument("--prefix", help="key prefix, e.g. pr:")
    deleter = _leaf(ctx, "delete", "delete a record by key", cmd_context_delete)
    deleter.add_argument("key")
    deleter.add_argument("--agent", default="human")

    tl = sub.add_parser(
        "timeline", help="threads, thoughts and tangents", description="Threads of thoughts, tangents and positions."
    )
    tsub = tl.add_subparsers(dest="timeline_command", metavar="ACTION", required=True)
    create = _leaf(tsub, "create", "start a thread", cmd_create)
    create.add_argument("name")
    create.add_argument("--description")
    create.add_argument("--parent-thought", dest="parent_thought_id", help="makes it a tangent of this thought")
    create.add_argument("--agent", default="human")
    threads = _leaf(tsub, "threads", "list threads, most recent first", cmd_threads)
    threads.add_argument("--status", choices=THREAD_STATUSES)
    threads.add_argument("--limit", type=int)
    show = _leaf(tsub, "show", "show a thread's thoughts and tangents", cmd_show)
    show.add_argument("thread_id", help="thread id or unique prefix")
    show.add_argument("--limit", type=int, help="latest N thoughts (default 100)")
    add = _leaf(tsub, "add", "add a thought and move the position to it", cmd_add)
    add.add_argument("thread_id", help="thread id or unique prefix")
    add.add_argument("content")
    add.add_argument("--type", dest="thought_type", choices=THOUGHT_TYPES, help="default progress")
    add.add_argument("--metadata", help="JSON object of links (files, commits, ...)")
    add.add_argument("--agent", default="human")
    update = _leaf(tsub, "update", "change a thought's status, content or type", cmd_update)
    update.add_argument("thought_id", help="thought id or unique prefix")
    update.add_argument("--status", choices=THOUGHT_STATUSES)
    update.add_argument("--content")
    update.add_argument("--type", dest="thought_type", choices=THOUGHT_TYPES)
    update.add_argument("--metadata", help="JSON object")
    update.add_argument("--agent", default="human")
    status = _leaf(tsub, "set-thread", "rename a thread or set its status (pause, resume, ...)", cmd_set_thread)
    status.add_argument("thread_id", help="thread id or unique prefix")
    status.add_argument("--name")
    status.add_argument("--description")
    status.add_argument("--status", choices=THREAD_STATUSES)
    status.add_argument("--agent", default="human")
    _leaf(tsub, "where", "current position of every active thread", cmd_where)
    tangent = _leaf(tsub, "tangent", "go on a tangent from a thread", cmd_tangent)
    tangent.add_argument("thread_id", help="the thread you leave (id or prefix)")
    tangent.add_argument("name", help="name of the tangent thread")
    tangent.add_argument("--description")
    tangent.add_argument("--content", help="why (default 'Tangent: NAME')")
    tangent.add_argument("--agent", default="human")
    back = _leaf(tsub, "return", "close or pause a tangent and go back to its parent thread", cmd_return)
    back.add_argument("thread_id", help="the tangent thread (id or prefix)")
    back.add_argument("--status", choices=("completed", "paused", "abandoned"), help="default completed")
    back.add_argument("--agent", default="human")

    _leaf(sub, "whereami", "active threads, pinned context, waiting items, latest handoff", cmd_whereami)
    _leaf(sub, "wherewasi", "paused threads with their last thought and linked context", cmd_wherewasi)


# -- context -------------------------------------------------------------------------------


def cmd_context_set(args: argparse.Namespace, app: App) -> int:
    event = records.set_record(
        app,
        key=args.key,
        value=_json_object(args.value, "value"),
        category=args.category,
        label=args.label,
        thread_id=args.thread_id,
        pinned=args.pinned,
        expires_at=args.expires_at,
        agent=args.agent,
        now=_now(),
    )
    record = records.record_of(app, event)  # as folded, even if expired since
    emit(args, f"Saved {record.key} (id {event.id})", records.record_dict(record))
    return 0


def cmd_context_get(args: argparse.Namespace, app: App) -> int:
    moment = _now()
    record = records.get_record(app, key=args.key, now=moment)
    emit(args, DATA_NOTICE + "\n" + orient.record_text(record, moment, value_limit=None), records.record_dict(record))
    return 0


def cmd_context_list(args: argparse.Namespace, app: App) -> int:
    moment = _now()
    found = records.list_records(
        app,
        category=args.category,
        thread_id=args.thread_id,
        pinned_only=args.pinned_only,
        since_days=args.since_days,
        limit=args.limit,
        prefix=args.prefix,
        now=moment,
    )
    emit(
        args,
        orient.records_text(found, "Context records, newest first", moment),
        [records.record_dict(r) for r in found],
    )
    return 0


def cmd_context_delete(args: argparse.Namespace, app: App) -> int:
    event = records.delete_record(app, key=args.key, agent=args.agent)
    emit(args, f"Deleted {event.data['key']} (tombstone id {event.id})", {"id": event.id, "key": event.data["key"]})
    return 0


# -- timeline ------------------------------------------------------------------------------


def cmd_create(args: argparse.Namespace, app: App) -> int:
    event = timeline.create_thread(
        app, name=args.name, description=args.description, parent_thought_id=args.parent_thought_id, agent=args.agent
    )
    emit(args, f"Created thread {event.id}", {"id": event.id, "name": event.data["name"]})
    return 0


def cmd_threads(args: argparse.Namespace, app: App) -> int:
    moment = _now()
    state = timeline.timeline_state(app)
    found = [timeline.whereabouts(state, t) for t in timeline.list_threads(app, status=args.status, limit=args.limit)]
    text = "\n\n".join(orient.whereabouts_text(where, moment) for where in found) or "No threads."
    emit(args, text, [orient.whereabouts_dict(where) for where in found])
    return 0


def cmd_show(args: argparse.Namespace, app: App) -> int:
    detail = timeline.get_thread(app, thread_id=args.thread_id, limit=args.limit)
    data = {
        **orient.thread_dict(detail.thread),
        "position_thought_id": detail.position.id if detail.position else None,
        "thoughts": [orient.thought_dict(t) for t in detail.thoughts],
        "tangents": [orient.thread_dict(child) for child in detail.children],
    }
    emit(args, orient.thread_detail_text(detail, _now()), data)
    return 0


def cmd_add(args: argparse.Namespace, app: App) -> int:
    event = timeline.add_thought(
        app,
        thread_id=args.thread_id,
        content=args.content,
        thought_type=args.thought_type,
        metadata=_json_object(args.metadata, "--metadata"),
        agent=args.agent,
    )
    emit(args, f"Added thought {event.id}", {"id": event.id, "thread_id": event.data["thread_id"]})
    return 0


def cmd_update(args: argparse.Namespace, app: App) -> int:
    event = timeline.update_thought(
        app,
        thought_id=args.thought_id,
        status=args.status,
        content=args.content,
        thought_type=args.thought_type,
        metadata=_json_object(args.metadata, "--metadata"),
        agent=args.agent,
    )
    emit(args, f"Updated thought {event.data['thought_id']}", {"id": event.id, "thought_id": event.data["thought_id"]})
    return 0


def cmd_set_thread(args: argparse.Namespace, app: App) -> int:
    event = timeline.update_thread(
        app,
        thread_id=args.thread_id,
        name=args.name,
        description=args.description,
        status=args.status,
        agent=args.agent,
    )
    emit(args, f"Updated thread {event.data['thread_id']}", {"id": event.id, "thread_id": event.data["thread_id"]})
    return 0


def cmd_where(args: argparse.Namespace, app: App) -> int:
    moment = _now()
    found = timeline.where_am_i(app)
    text = "\n\n".join(orient.whereabouts_text(where, moment) for where in found) or "No active threads."
    emit(args, text, [orient.whereabouts_dict(where) for where in found])
    return 0


def cmd_tangent(args: argparse.Namespace, app: App) -> int:
    tangent = timeline.go_tangent(
        app,
        thread_id=args.thread_id,
        name=args.name,
        description=args.description,
        content=args.content,
        agent=args.agent,
    )
    data = {"id": tangent.thread.id, "tangent_start_thought_id": tangent.thought.id}
    emit(args, f"On tangent thread {tangent.thread.id} (marked by thought {tangent.thought.id})", data)
    return 0


def cmd_return(args: argparse.Namespace, app: App) -> int:
    done = timeline.return_from(app, thread_id=args.thread_id, status=args.status, agent=args.agent)
    text = f"Tangent {done.tangent.id} is {done.status}; back on thread {done.parent.id} at thought {done.position.id}"
    data = {
        "thread_id": done.tangent.id,
        "status": done.status,
        "parent_thread_id": done.parent.id,
        "position_thought_id": done.position.id,
    }
    emit(args, text, data)
    return 0


# -- orientation ---------------------------------------------------------------------------


def cmd_whereami(args: argparse.Namespace, app: App) -> int:
    report = orient.whereami(app)
    emit(args, report.text, report.data)
    return 0


def cmd_wherewasi(args: argparse.Namespace, app: App) -> int:
    report = orient.wherewasi(app)
    emit(args, report.text, report.data)
    return 0
