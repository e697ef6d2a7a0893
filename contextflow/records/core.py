"""Keyed context records: namespaced keys holding small JSON values (`context_*` tools, `contextflow context`).

A record is written whole as a `context.set` event (its writer is the source machine);
`context.delete` is a tombstone; across writers the latest by `Event.key` wins. Expiry is
judged when read, against the `now` the caller passes (default: the current time). On update,
arguments left out keep the record's current values (label, category, thread, pinned, expiry).

A record is identified by its project and key (see views/records.py). Writes go to the project
named, else the default project (a scoped HTTP token's own); a read or delete that names no
project takes the default project's record, else the only project holding the key, and asks
for `project` when several do. Categories are a closed list (`CATEGORIES`); left out, the
category is the key's prefix when that is one of them, else `fact`.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from contextflow import ondisk
from contextflow.app import App
from contextflow.core import checks, regexes, timeutil
from contextflow.core.ahead import Winner, confirm
from contextflow.core.clock import stamp_from_ms, stamp_iso
from contextflow.core.errors import InputError, NotFoundError, arg, call, tool
from contextflow.core.events import Event
from contextflow.core.project import project_of
from contextflow.records.fields import (
    CATEGORIES,
    CLIPBOARD,
    DEFAULT_CATEGORY,
    DEFAULT_LIMIT,
    DEFAULT_SINCE_DAYS,
)
from contextflow.records.view import DELETE_KIND, SET_KIND, Record, RecordId
from contextflow.timeline.core import agent_field, resolve_thread
from contextflow.timeline.fields import nonempty

if TYPE_CHECKING:
    from contextflow.records.stored import StoredRecords as Records

MAX_VALUE_BYTES = 64 * 1024
MAX_KEY_CHARS = 256
MAX_LABEL_CHARS = 200
MAX_PROJECT_CHARS = 200
WAITING_SHOWN = 20
CLIPBOARD_EXPIRY = timedelta(hours=24)
NEVER = ("never", "none", "off")

_KEY = regexes.compile(r"^[a-z][a-z0-9_-]{0,31}:[^\s\x00-\x1f\x7f]+$")
KEY_HELP = (
    "a key is prefix:name, e.g. pr:owner/repo:1777, machine:chisel, project:meshcore-monitor, "
    "waiting:pr-1777, fact:synology-nas (prefix: lower-case letters, digits, - or _; name: no spaces)"
)


def records_state(app: App, *, whole: bool = False) -> Records:
    """The records for one call, queried from their table on disk (records/stored.py): as built with the
    logs' remaining bytes while the derived tables do not hold every log (`ondisk.reading`); when `whole`,
    never partial (`ondisk.whole`)."""
    from contextflow.records.projection import PROJECTION
    from contextflow.records.stored import StoredRecords

    return StoredRecords((ondisk.whole if whole else ondisk.reading)(app, PROJECTION))


def _ms(moment: datetime | None) -> int:
    return int((moment or timeutil.now()).timestamp() * 1000)


def check_key(value: str) -> str:
    if not value.strip():
        raise InputError(f"key is required: {KEY_HELP}")
    key = value.strip()
    if len(key) > MAX_KEY_CHARS:
        raise InputError(f"key is {len(key)} characters; the limit is {MAX_KEY_CHARS}. {KEY_HELP}")
    if not _KEY.match(key):
        raise InputError(f"{arg('key')}={key!r} is not a namespaced key: {KEY_HELP}")
    return key


def check_category(value: str | None, also: Container[str] = ()) -> str | None:
    """A filter's category: one of CATEGORIES or of `also` (categories stored before the list was closed).
    A write's category is one of CATEGORIES by its table row."""
    category = checks.trimmed(value, "category", max_chars=32)
    if category is not None and category not in CATEGORIES and category not in also:
        raise InputError(
            f"category {category!r} is not one of {', '.join(CATEGORIES)}; pick one of those, "
            f"or leave it out to use the key's prefix (else {DEFAULT_CATEGORY})"
        )
    return category


def check_project(value: str | None) -> str | None:
    return checks.trimmed(value, "project", max_chars=MAX_PROJECT_CHARS)


def _identity(app: App, state: Records, key: str, project: str | None) -> RecordId:
    """Which record a read or delete of `key` means; see the module docstring."""
    named = check_project(project)
    if named:
        return (named, key)
    default = app.settings.default_project
    if (default, key) in state.records:
        return (default, key)
    holders = state.holders(key)
    live = [name for name in holders if state.live((name, key)) is not None]
    candidates = live or holders
    if len(candidates) > 1:
        raise InputError(
            f"the key {key!r} exists in projects {', '.join(candidates)}; pass {arg('project')}= to choose one"
        )
    return (candidates[0], key) if candidates else (default, key)


def _partial(app: App) -> bool:
    """Whether the last records reading read only the logs' newest bytes (a build unfinished)."""
    from contextflow.records.projection import PROJECTION

    return ondisk.partial(app, PROJECTION) is not None


def set_record(
    app: App,
    *,
    key: str,
    value: dict[str, Any],
    category: str | None = None,
    label: str | None = None,
    thread_id: str | None = None,
    pinned: bool | None = None,
    expires_at: str | None = None,
    agent: str | None = None,
    project: str | None = None,
    source: str | None = None,
    now: datetime | None = None,
) -> Event:
    """Create or replace the record under (`project`, `key`). Omitted optional fields keep their current values.
    `category` is one of CATEGORIES (the table's row checks it). `source` names the machine the record is
    about or came from (seed 000's field); the writer (this machine) is the source when it is left out."""
    moment = now or timeutil.now()
    name = check_key(key)
    chosen = checks.trimmed(category, "category")
    owner = checks.name(project, "project", MAX_PROJECT_CHARS) or app.settings.default_project
    size_hint = "Store a summary plus a path or URL to the large content, or split it over several keys"
    checked = checks.json_size(value, "value", max_bytes=MAX_VALUE_BYTES, size_hint=size_hint)
    data: dict[str, Any] = {"key": name, "project": owner, "value": checked}
    current = records_state(app).live((owner, name))
    if current is None and _partial(app):  # it may lie before the newest bytes read
        current = records_state(app, whole=True).live((owner, name))  # (what is left out is kept from it)
    previous = current.data if current is not None and not current.expired(_ms(moment)) else {}
    prefix = name.split(":", 1)[0]
    data["category"] = chosen or previous.get("category") or (prefix if prefix in CATEGORIES else DEFAULT_CATEGORY)
    shown = checks.trimmed(label, "label", max_chars=MAX_LABEL_CHARS) if label is not None else previous.get("label")
    if shown:
        data["label"] = shown
    if thread_id is not None:
        if checks.trimmed(thread_id, "thread_id"):
            data["thread_id"] = resolve_thread(app, thread_id).id
    elif previous.get("thread_id"):
        data["thread_id"] = previous["thread_id"]
    named = checks.trimmed(source, "source", max_chars=MAX_LABEL_CHARS) if source is not None else None
    if named or (source is None and previous.get("source")):
        data["source"] = named or previous["source"]
    data["pinned"] = pinned if pinned is not None else previous.get("pinned") is True
    if expires_at is not None and expires_at.strip().lower() in NEVER:
        pass
    elif expires_at is not None:
        expiry = timeutil.expiry(expires_at, moment)
        data["expires_at"] = timeutil.to_iso(expiry) if expiry else None
    elif previous.get("expires_at"):
        data["expires_at"] = previous["expires_at"]
    elif data["category"] == CLIPBOARD:
        data["expires_at"] = timeutil.to_iso(moment + CLIPBOARD_EXPIRY)
    payload = {**data, **agent_field(agent)}
    write = lambda: app.store.append(SET_KIND, payload)  # noqa: E731
    return confirm(app.store, write, _shown(app, (owner, name)), f"context {name}")


def _shown(app: App, identity: RecordId) -> Callable[[Event], Winner | None]:
    """What readers see under `identity` in place of a write (None when they see the write itself)."""

    def shown(event: Event) -> Winner | None:
        record = records_state(app).records.get(identity)
        if record is None or record.event_id == event.id:
            return None
        return Winner(record.event_id, record.writer, record.event_key[0])

    return shown


def _existing(state: Records, identity: RecordId, now_ms: int | None) -> Record:
    """The record under `identity`, else an error saying why not. An expired one counts when `now_ms` is None."""
    key = identity[1]
    record = state.records.get(identity)
    if record is None:
        hint = key.split(":", 1)[0] + ":"
        raise NotFoundError(
            f"no context record under {key!r} in project {identity[0]!r}; "
            f"{call('context_list')} with {arg('prefix')}={hint!r} to see keys"
        )
    if record.deleted:
        raise NotFoundError(
            f"context record {key!r} was deleted at {stamp_iso(record.event_key[0])} "
            f"(writer {record.writer}); set it again with {tool('context_set')} to restore it"
        )
    if now_ms is not None and record.expired(now_ms):
        raise NotFoundError(
            f"context record {key!r} expired at {record.data.get('expires_at')}; "
            f"set it again with {tool('context_set')} to restore it"
        )
    return record


def get_record(app: App, *, key: str, project: str | None = None, now: datetime | None = None) -> Record:
    state = records_state(app)
    return _existing(state, _identity(app, state, check_key(key), project), _ms(now))


def record_of(app: App, event: Event) -> Record:
    """The record a set or delete event wrote, as folded (even if it expired since)."""
    return records_state(app).records[(project_of(event), str(event.data["key"]))]


def delete_record(app: App, *, key: str, project: str | None = None, agent: str | None = None) -> Event:
    """Write a tombstone for a live (or expired) record."""
    state = records_state(app)
    record = _existing(state, _identity(app, state, check_key(key), project), None)
    data = {"key": record.key, "project": record.project, **agent_field(agent)}
    write = lambda: app.store.append(DELETE_KIND, data)  # noqa: E731
    return confirm(app.store, write, _shown(app, record.identity), f"deleting context {record.key}")


def list_records(
    app: App,
    *,
    category: str | None = None,
    thread_id: str | None = None,
    pinned_only: bool | None = None,
    since_days: int | None = None,
    limit: int | None = None,
    prefix: str | None = None,
    project: str | None = None,
    now: datetime | None = None,
    state: Records | None = None,
) -> list[Record]:
    """Live, unexpired records updated within `since_days` (0: any time; within SINCE_DAYS), newest first;
    at most `limit` (within LIMIT). `state`: the records this call already read (`records_state`)."""
    state, selection = _listing(app, state, category, thread_id, pinned_only, since_days, limit, prefix, project, now)
    return state.select(*selection)


def records_left_out(app: App, state: Records | None = None, **filters: Any) -> int:
    """How many records `list_records(app, **filters)` leaves out by its `since_days` window: how many it lists
    with `since_days` 0 less how many it lists, each at most its `limit`; none of them decoded."""
    state, selection = _listing(app, state, **filters)
    return state.left_out(*selection)


def _listing(
    app: App,
    state: Records | None,
    category: str | None = None,
    thread_id: str | None = None,
    pinned_only: bool | None = None,
    since_days: int | None = None,
    limit: int | None = None,
    prefix: str | None = None,
    project: str | None = None,
    now: datetime | None = None,
) -> tuple[Records, tuple[int, int, int, str | None, str | None, bool, str | None, str | None]]:
    """The records read and `StoredRecords.select`'s arguments of a listing (its arguments checked)."""
    state = records_state(app) if state is None else state
    wanted_category = check_category(category, also=state.by_category)
    wanted_project = check_project(project)
    linked = checks.trimmed(thread_id, "thread_id")
    thread = resolve_thread(app, linked).id if linked else None
    days = DEFAULT_SINCE_DAYS if since_days is None else since_days
    count = DEFAULT_LIMIT if limit is None else limit
    start = checks.trimmed(prefix, "prefix", max_chars=MAX_KEY_CHARS)
    now_ms = _ms(now)
    cutoff = stamp_from_ms(now_ms - days * 86_400_000) if days else 0
    return state, (now_ms, count, cutoff, wanted_category, thread, bool(pinned_only), start, wanted_project)


def linked_records(app: App, thread_id: str, now: datetime | None = None) -> list[Record]:
    """Live records linked to a thread (any age), newest first."""
    state = records_state(app)
    return state.select(_ms(now), len(state.records), thread=thread_id)


def pinned_records(app: App, now: datetime | None = None) -> list[Record]:
    state = records_state(app)
    return state.select(_ms(now), len(state.records), pinned=True)


def waiting_records(app: App, now: datetime | None = None, limit: int = WAITING_SHOWN) -> list[Record]:
    """The `limit` most recently updated records of category `waiting`, longest waiting first."""
    found = records_state(app).select(_ms(now), limit, category="waiting")
    return sorted(found, key=lambda r: (r.created_key, r.key))


def waits(record: Record) -> bool:
    """The record is something waited on: category `waiting`, or a value whose `status` starts with "waiting"
    (`{"status": "waiting for review"}` on a `pr:` record)."""
    value = record.data.get("value")
    status = value.get("status") if isinstance(value, dict) else None
    return record.category == "waiting" or (isinstance(status, str) and status.strip().lower().startswith("waiting"))


def record_dict(record: Record, *, value: bool = True) -> dict[str, Any]:
    """A record as JSON for output, with its provenance (without its value unless `value`)."""
    data = record.data
    return {
        "key": record.key,
        "project": record.project,
        **({"value": data.get("value")} if value else {}),
        "category": record.category,
        "label": data.get("label"),
        "thread_id": record.thread_id,
        "pinned": record.pinned,
        "expires_at": data.get("expires_at"),
        "source": nonempty(data.get("source")) or record.writer,  # the machine named when set, else the writer
        "agent": data.get("agent"),
        "created_at": stamp_iso(record.created_key[0]),
        "updated_at": stamp_iso(record.event_key[0]),
        "id": record.event_id,
    }
