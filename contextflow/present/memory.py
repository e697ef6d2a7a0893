"""Keyed context records, the timeline and orientation (whereami, wherewasi) as replies for every adapter."""

from __future__ import annotations

from contextflow import orient, records, timeline
from contextflow.app import App
from contextflow.events import Event
from contextflow.operations.spec import JSON, Reply
from contextflow.text import DATA_NOTICE
from contextflow.timeutil import now

# -- context -------------------------------------------------------------------------------


def context_set(app: App, args: JSON) -> Reply:
    event = records.set_record(app, **args, now=now())
    record = records.record_of(app, event)  # as folded, even if expired since
    data = {**records.record_dict(record), "id": event.id}
    return Reply(f"Saved context {record.key} (id {event.id}).\n" + orient.record_header(record, now()), data)


def context_get(app: App, args: JSON) -> Reply:
    moment = now()
    record = records.get_record(app, key=args.get("key"), project=args.get("project"), now=moment)
    text = orient.record_text(record, moment, value_limit=None)
    return Reply(DATA_NOTICE + "\n" + text, records.record_dict(record))


def context_list(app: App, args: JSON) -> Reply:
    moment = now()
    found = records.list_records(app, **args, now=moment)
    title = "Context records, newest first"
    # Values can be 64 KB each: the list carries provenance only; context_get returns a whole value.
    listed = [{k: v for k, v in records.record_dict(r).items() if k != "value"} for r in found]
    payload = {"count": len(found), "records": listed}
    return Reply(orient.records_text(found, title, moment), payload)


def context_delete(app: App, args: JSON) -> Reply:
    event = records.delete_record(app, **args)
    key = event.data["key"]
    return Reply(f"Deleted context {key} (tombstone id {event.id}).", {"id": event.id, "key": key, "deleted": True})


# -- orientation ---------------------------------------------------------------------------


def whereami(app: App, args: JSON) -> Reply:
    return orient.whereami(app)


def wherewasi(app: App, args: JSON) -> Reply:
    return orient.wherewasi(app)


def whereami_prompt(app: App, args: dict[str, str]) -> str:
    return orient.whereami(app).text + (
        "\n\nTell the user briefly where they are: active work and its current position, pinned facts, "
        "what they are waiting on, and the latest handoff. Suggest the next step."
    )


def wherewasi_prompt(app: App, args: dict[str, str]) -> str:
    return orient.wherewasi(app).text + (
        "\n\nSummarize the paused work for the user, most recent first, and ask which thread to resume "
        "(resuming: timeline_update_thread with status active)."
    )


def remember_prompt(app: App, args: dict[str, str]) -> str:
    return orient.remember_prompt(args["what"].strip())  # required: the server checks it is given


# -- timeline ------------------------------------------------------------------------------


def _created(kind: str, event_id: str, text: str, **extra: object) -> Reply:
    return Reply(f"{text} (id {event_id}).", {"id": event_id, "kind": kind, **extra})


def _threads(found: list[timeline.Whereabouts], title: str, empty: str, tail: str = "", **more: int) -> Reply:
    """Threads with their current position, under `title` (`empty` when there are none)."""
    moment = now()
    blocks = "\n\n".join(orient.whereabouts_text(where, moment) for where in found)
    text = f"{title} {DATA_NOTICE}\n\n{blocks}{tail}" if found else empty
    return Reply(text, {"count": len(found), **more, "threads": [orient.whereabouts_dict(w) for w in found]})


def timeline_create_thread(app: App, args: JSON) -> Reply:
    event = timeline.create_thread(app, **args)
    return _created("thread", event.id, f"Created thread {event.data['name']!r}", name=event.data["name"])


def timeline_list_threads(app: App, args: JSON) -> Reply:
    state = timeline.timeline_state(app)
    found = [timeline.whereabouts(state, thread) for thread in timeline.list_threads(app, **args)]
    return _threads(found, f"Threads, most recently active first: {len(found)}.",
                    "No threads yet. Start one with timeline_create_thread.")


def timeline_get_thread(app: App, args: JSON) -> Reply:
    detail = timeline.get_thread(app, **args)
    payload = {
        **orient.thread_dict(detail.thread),
        "thought_count": detail.total_thoughts,
        "position_thought_id": detail.position.id if detail.position else None,
        "thoughts": [orient.thought_dict(t) for t in detail.thoughts],
        "tangents": [orient.thread_dict(child) for child in detail.children],
    }
    return Reply(orient.thread_detail_text(detail, now()), payload)


def timeline_add_thought(app: App, args: JSON) -> Reply:
    event = timeline.add_thought(app, **args)
    return _created("thought", event.id, f"Added {event.data['thought_type']} thought; you are here",
                    thread_id=event.data["thread_id"], previous_thought_id=event.data.get("previous_thought_id"))


def _updated(what: str, id_field: str, event: Event) -> Reply:
    changed = sorted(k for k in event.data if k not in (id_field, "agent"))
    target = event.data[id_field]
    data = {"id": event.id, id_field: target, "changed": changed}
    return Reply(f"Updated {what} {target}: {', '.join(changed)}.", data)


def timeline_update_thought(app: App, args: JSON) -> Reply:
    return _updated("thought", "thought_id", timeline.update_thought(app, **args))


def timeline_update_thread(app: App, args: JSON) -> Reply:
    return _updated("thread", "thread_id", timeline.update_thread(app, **args))


def timeline_where_am_i(app: App, args: JSON) -> Reply:
    found = timeline.where_am_i(app, limit=args.get("limit"))
    total = timeline.thread_count(app, "active")
    hidden = total - len(found)
    tail = f"\n\n({hidden} older active threads not shown; pass a larger limit.)" if hidden > 0 else ""
    return _threads(found, f"You are here, on {total} active thread(s).",
                    "No active threads. Start one with timeline_create_thread.", tail, total=total)


def timeline_go_tangent(app: App, args: JSON) -> Reply:
    tangent = timeline.go_tangent(app, **args)
    text = f"Went on a tangent: new thread {tangent.thread.id}, marked by thought {tangent.thought.id}"
    return _created("thread", tangent.thread.id, text, thread_id=tangent.thread.id,
                    tangent_start_thought_id=tangent.thought.id, parent_thread_id=tangent.thought.data["thread_id"])


def timeline_return(app: App, args: JSON) -> Reply:
    done = timeline.return_from(app, **args)
    text = f"Tangent {done.tangent.id} is {done.status}; back on thread {done.parent.id} at thought {done.position.id}."
    data = {"thread_id": done.tangent.id, "status": done.status, "parent_thread_id": done.parent.id,
            "position_thought_id": done.position.id}
    return Reply(text, data)
