"""Keyed context records and orientation (/whereami, /wherewasi, /remember) as replies for every adapter.
Stored text is untrusted: every value, name and thought is cleaned and quoted under a provenance header."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from contextflow.app import App
from contextflow.core.clock import stamp_iso
from contextflow.core.events import as_dict
from contextflow.core.text import DATA_NOTICE, clean, quote
from contextflow.core.timeutil import now
from contextflow.core.timeutil import to_iso as iso
from contextflow.operations.provenance import age_of, clipped, header, one_line, value_quoted
from contextflow.operations.spec import JSON, Reply, given, partial
from contextflow.records import core as records
from contextflow.records.fields import DEFAULT_SINCE_DAYS
from contextflow.records.view import Record
from contextflow.sessions import core as sessions
from contextflow.sessions.entry import entry_text
from contextflow.timeline import core as timeline
from contextflow.timeline import present as timeline_present

if TYPE_CHECKING:
    from contextflow.records.stored import StoredRecords

RECENT_IN_WHEREAMI = 5
MAX_PINNED_SHOWN = 20


def record_header(record: Record, now: datetime) -> str:
    label = record.data.get("label")
    title = f"[{one_line(record.category)}] {one_line(record.key)}" + (f" ({clipped(label, 80)})" if label else "")
    return header(
        title,
        ("writer", record.writer),
        ("agent", record.data.get("agent")),
        f"updated={stamp_iso(record.event_key[0])} ({age_of(record.event_key, now)})",
        "pinned" if record.pinned else None,
        ("thread", record.thread_id),
        ("expires", record.data.get("expires_at")),
        ("id", record.event_id),
    )


def record_text(record: Record, now: datetime, value_limit: int | None = 240) -> str:
    return record_header(record, now) + "\n" + value_quoted(record.data.get("value"), value_limit)


def records_text(found: list[Record], title: str, now: datetime) -> str:
    if not found:
        return f"{title}: none."
    body = "\n\n".join(record_text(record, now) for record in found)
    return f"{title}: {len(found)}. {DATA_NOTICE}\n\n{body}"


# -- timeline ------------------------------------------------------------------------------


def _more(app: App, status: str, shown: int) -> list[str]:
    total = timeline.thread_count(app, status)
    if total <= shown:
        return []
    return [f"({total - shown} older {status} threads not shown: timeline_list_threads status={status})\n"]


def orientation(app: App, now: datetime | None = None) -> Reply:
    """Active threads (position, last thought), pinned, waiting and recent context, latest handoff."""
    moment = now or datetime.now(UTC)
    active = timeline.where_am_i(app)
    waiting = records.waiting_records(app, moment)
    pinned_now = records.pinned_records(app, moment)
    # a record of another category whose value says it waits (seed 000's PR: category pr, status: waiting)
    waiting += [r for r in pinned_now if r.category != "waiting" and records.waits(r)]
    waiting_keys = {r.key for r in waiting}
    all_pinned = [r for r in pinned_now if r.key not in waiting_keys]
    pinned = all_pinned[:MAX_PINNED_SHOWN]
    shown = {r.key for r in pinned} | {r.key for r in waiting}
    listed = records.list_records(app, limit=min(500, RECENT_IN_WHEREAMI + len(shown)), now=moment)
    waiting += [r for r in listed if r.key not in shown and records.waits(r)]
    shown |= {r.key for r in waiting}
    recent = [r for r in listed if r.key not in shown][:RECENT_IN_WHEREAMI]
    session_id = sessions.active_session(app)
    in_session = sessions.EntryFilter(app.settings.default_project, session_id=session_id)
    handoff = sessions.latest_handoff(app, in_session) if session_id else None
    lines = [f"# Where am I ({iso(moment)}, store {app.store.folder})", DATA_NOTICE, "", "## Active work"]
    lines += [timeline_present.whereabouts_text(where, moment) + "\n" for where in active] or ["(no active threads)\n"]
    lines += _more(app, "active", len(active))
    lines.append("## Pinned context")
    lines += [record_text(r, moment) for r in pinned] or ["(none)"]
    if len(all_pinned) > len(pinned):
        lines.append(f"({len(all_pinned) - len(pinned)} older pinned records: context_list pinned_only=true)")
    lines += ["", "## Waiting on"]
    lines += [
        f"waiting {age_of(r.created_key, moment).removesuffix(' ago')} (since {stamp_iso(r.created_key[0])})\n"
        + record_text(r, moment)
        for r in waiting
    ] or ["(nothing)"]
    if len(waiting) >= records.WAITING_SHOWN:
        lines.append(f"(the {len(waiting)} most recently updated; context_list category=waiting shows more)")
    lines += ["", f"## Recent context ({DEFAULT_SINCE_DAYS} days)"]
    lines += [record_text(r, moment) for r in recent] or ["(none)"]
    if older := _older(app, {}, moment):
        lines.append(f"({older} older record(s) left out: context_list since_days=0 lists them)")
    lines += ["", "## Latest handoff" + (f" (active session {clean(session_id, True)})" if session_id else "")]
    lines.append(entry_text(handoff) if handoff else "(no active session)" if not session_id else "(none yet)")
    data = {
        "now": iso(moment),
        "active_threads": [timeline_present.whereabouts_dict(where) for where in active],
        "pinned": [records.record_dict(r) for r in pinned],
        "waiting": [records.record_dict(r) for r in waiting],
        "recent": [records.record_dict(r) for r in recent],
        "active_session": session_id,
        "latest_handoff": as_dict(handoff) if handoff else None,
    }
    return _read_partially(app, Reply("\n".join(lines), data), "records, threads and entries written earlier")


def paused_orientation(app: App, now: datetime | None = None) -> Reply:
    """Paused threads: how long ago, last thought, and the context records linked to them."""
    moment = now or datetime.now(UTC)
    paused = timeline.where_am_i(app, status="paused")
    lines = [f"# Where was I ({iso(moment)})", DATA_NOTICE, "", "## Paused work"]
    items: list[dict[str, Any]] = []
    for where in paused:
        since = where.thread.fields.since("status") or where.thread.updated
        linked = records.linked_records(app, where.thread.id, moment)
        lines.append(f"paused {age_of(since, moment)}")
        lines.append(timeline_present.whereabouts_text(where, moment))
        lines.append("context:" if linked else "context: (none linked)")
        lines += ["  " + line for r in linked for line in record_text(r, moment).split("\n")]
        lines.append("")
        context = [records.record_dict(r) for r in linked]
        items.append({**timeline_present.whereabouts_dict(where), "paused_at": stamp_iso(since[0]), "context": context})
    if not paused:
        lines.append("(no paused threads)")
    lines += _more(app, "paused", len(paused))
    reply = Reply("\n".join(lines).rstrip(), {"now": iso(moment), "paused_threads": items})
    return _read_partially(app, reply, "threads and records written earlier")


def _read_partially(app: App, reply: Reply, missing: str) -> Reply:
    """`reply` (an orientation: threads, records and the active session's handoff read in this call), saying
    once that it is partial when any of them was read while the build had not reached most of the logs."""
    from contextflow import ondisk
    from contextflow.records.projection import PROJECTION
    from contextflow.sessions import stored as sessions_stored
    from contextflow.timeline import stored as timeline_stored

    read = (timeline_stored.partial(app), ondisk.partial(app, PROJECTION))
    handoff = (
        sessions_stored.partial(app) if isinstance(reply.data, dict) and reply.data.get("active_session") else None
    )
    return partial(reply, next((p for p in (*read, handoff) if p is not None), None), missing)


REMEMBER = """Store this in shared context so any agent on any machine can find it later:

WHAT

Do it with one context_set call:
- key: `prefix:name`, stable and lower-case so a later update hits the same key. Prefixes: project:<name>, \
pr:<owner/repo>:<number>, machine:<hostname>, waiting:<id> (blocked on someone), fact:<topic>, \
clipboard:<name> (expires after 24h).
- value: a JSON object holding the facts, e.g. {"description": "...", "status": "..."}.
- category: the key's prefix (project, pr, machine, waiting, fact or clipboard).
- label: a short human-readable title.
- pinned: true when it should show in every /whereami (things waited on, key facts).
- expires_at: only for temporary items, e.g. "24h" or "7d".
- thread_id: the current timeline thread, if this belongs to it (see timeline_where_am_i).
If the key may exist already, call context_get first and merge rather than overwrite.

Example: for "waiting on PR #1777 from Yeraze" call context_set with
{"key": "waiting:pr-1777", "value": {"description": "PR #1777 from Yeraze"}, \
"category": "waiting", "label": "Waiting on PR #1777", "pinned": true}

Then answer in one line: Saved as <key>. Will show in /whereami (when pinned or waiting)."""


def remember_text(what: str) -> str:
    """The /remember prompt: have the agent store `what` with context_set."""
    return REMEMBER.replace("WHAT", quote(what), 1)


# -- context -------------------------------------------------------------------------------


def context_set(app: App, args: JSON) -> Reply:
    told = given(args, "category", "label", "pinned", "expires_at", "agent", "project", "source")
    thread_id = _thread_id(args.get("thread_id"))
    event = records.set_record(app, key=args["key"], value=args["value"], thread_id=thread_id, **told, now=now())
    record = records.record_of(app, event)  # as folded, even if expired since
    data = {**records.record_dict(record), "id": event.id}
    return Reply(f"Saved context {record.key} (id {event.id}).\n" + record_header(record, now()), data)


def _thread_id(value: Any) -> str | None:
    """A thread id as given: seed 000 writes numeric ones (`thread_id: 3`); ours are strings, so a number is
    looked up as its digits (not found unless an id starts with them: the error lists where ids are)."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def context_get(app: App, args: JSON) -> Reply:
    moment = now()
    record = records.get_record(app, key=args["key"], project=args.get("project"), now=moment)
    text = record_text(record, moment, value_limit=None)
    return _partial(app, Reply(DATA_NOTICE + "\n" + text, records.record_dict(record)))


def _partial(app: App, reply: Reply, empty: bool = False) -> Reply:
    """`reply`, saying it is partial when the records were read while the build had not reached most of the
    logs (only their newest bytes were read beside the tables: `ondisk.partial`); `empty`: see `partial`."""
    from contextflow import ondisk
    from contextflow.records.projection import PROJECTION

    return partial(reply, ondisk.partial(app, PROJECTION), "records written earlier", empty)


def context_list(app: App, args: JSON) -> Reply:
    moment, state = now(), records.records_state(app)  # (the tables checked once for the call)
    found = _listed(app, args, moment, state)
    title = "Context records, newest first"
    # Values can be 64 KB each: the list carries provenance only; context_get returns a whole value.
    older = _older(app, args, moment, state)

    def payload() -> JSON:
        listed = [records.record_dict(r, value=False) for r in found]
        return {"count": len(found), "records": listed, "older_left_out": older}

    text = records_text(found, title, moment)
    if older:
        days = args.get("since_days") or DEFAULT_SINCE_DAYS
        text += (
            f"\n({older}{'+' if older >= 500 else ''} older record(s) not updated in the last {days} days are left "
            "out: since_days=0 (--since-days 0) shows every record)"
        )
    return _partial(app, Reply(text, payload), empty=not found and not older)


FILTERS = ("category", "thread_id", "pinned_only", "since_days", "limit", "prefix", "project")  # context_list's


def _listed(app: App, args: JSON, moment: datetime, state: StoredRecords | None = None) -> list[Record]:
    """context_list's records for these arguments, from `state` when the call read it already."""
    return records.list_records(app, **given(args, *FILTERS), now=moment, state=state)


def _older(app: App, args: JSON, moment: datetime, state: StoredRecords | None = None) -> int:
    """How many records (of the 500 newest) the `since_days` window leaves out (0 when it is 0: none are),
    counted, not read."""
    if args.get("since_days") == 0:
        return 0
    return records.records_left_out(app, state, **given({**args, "limit": 500}, *FILTERS), now=moment)


def context_delete(app: App, args: JSON) -> Reply:
    event = records.delete_record(app, key=args["key"], agent=args.get("agent"), project=args.get("project"))
    key = event.data["key"]
    return Reply(f"Deleted context {key} (tombstone id {event.id}).", {"id": event.id, "key": key, "deleted": True})


# -- orientation ---------------------------------------------------------------------------


def whereami(app: App, args: JSON) -> Reply:
    return orientation(app)


def wherewasi(app: App, args: JSON) -> Reply:
    return paused_orientation(app)


def whereami_prompt(app: App, args: dict[str, str]) -> str:
    return orientation(app).text + (
        "\n\nTell the user briefly where they are: active work and its current position, pinned facts, "
        "what they are waiting on, and the latest handoff. Suggest the next step."
    )


def wherewasi_prompt(app: App, args: dict[str, str]) -> str:
    return paused_orientation(app).text + (
        "\n\nSummarize the paused work for the user, most recent first, and ask which thread to resume "
        "(resuming: timeline_update_thread with status active)."
    )


def remember_prompt(app: App, args: dict[str, str]) -> str:
    return remember_text(args["what"].strip())  # required: the server checks it is given
