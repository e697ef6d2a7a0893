"""Conversation memory: structured conversation records, saved whole, latest wins.

A record is the client model's decomposition of its session: topic, categories, decisions
(with reasoning, chosen or rejected), open questions, related entities and a summary; a
multi-topic one adds an overall summary, cross-topic insights and `topics[]`. Validation errors
name the field (`topics[2].decisions[0].reasoning must be a string`). A record is identified
by its project and id: saving the same id again in a project replaces it (a save naming no
project goes to the project already holding that id, else the default one), and lookups naming
no project take the default project's record, else the only one with that id.

A transcript over `TRANSCRIPT_INLINE_TOKENS` goes to a write-once blob (blobs.py), never
indexed and returned only on request. The store admits the event (a scoped HTTP token may not
write every project) before the blob is written, so a refused save leaves nothing behind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from contextflow import ondisk
from contextflow.app import App
from contextflow.conversations.fields import DEFAULT_LIST
from contextflow.conversations.view import SAVE_KIND, ConversationEntry
from contextflow.core import checks, jsonio, regexes, secrets
from contextflow.core.blobs import read_blob, write_blob
from contextflow.core.errors import InputError, arg, call
from contextflow.core.events import Event
from contextflow.core.ids import new_id, resolve_prefix
from contextflow.core.text import estimate_tokens

if TYPE_CHECKING:
    from contextflow.conversations.stored import StoredConversations

SINGLE, MULTI = "single_topic", "multi_topic"
CHOSEN, REJECTED = "chosen", "rejected"
TRANSCRIPT_INLINE_TOKENS = 10_000
MAX_TRANSCRIPT_CHARS = 16_000_000
MAX_RECORD_BYTES = 1_000_000
SHORT, ITEM, LONG = 200, 4_000, 20_000
MAX_ITEMS, MAX_TOPICS = 200, 50
_ID = regexes.compile(r"^[a-z0-9][a-z0-9_.:-]{0,127}$")

TOPIC_FIELDS = ("topic", "categories", "decisions", "open_questions", "related_entities", "summary")
TOP_FIELDS = (
    "conversation_id",
    "source",
    "project",
    "session_id",
    "conversation_type",
    *TOPIC_FIELDS,
    "overall_summary",
    "cross_topic_insights",
    "topics",
    "full_transcript",
)
DECISION_FIELDS = ("decision", "reasoning", "status")
RECORD_EXAMPLE = '{"topic": ..., "summary": ..., "decisions": [...]}'
DECISION_EXAMPLE = '{"decision": "what was decided", "reasoning": "why", "status": "chosen"}'


# -- validation ----------------------------------------------------------------------------


def _required(value: Any, where: str, limit: int, hint: str) -> str:
    return checks.text(value, where, required=True, max_chars=limit, hint=hint) or ""


def _strings(value: Any, where: str) -> list[str]:
    shape = f'strings, e.g. ["first", "second"], got {checks.json_type(value)}'
    items = checks.json_list(value, where, MAX_ITEMS, shape)
    return [_required(item, f"{where}[{n}]", ITEM, "remove the empty item") for n, item in enumerate(items)]


def _object(value: Any, where: str, allowed: tuple[str, ...], example: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputError(f"{arg(where)} must be an object like {example}, got {checks.json_type(value)}")
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise InputError(f"{arg(where)} has unknown field(s) {', '.join(unknown)}; it takes: {', '.join(allowed)}")
    return value


def _decisions(value: Any, where: str) -> list[dict[str, str]]:
    found: list[dict[str, str]] = []
    shape = f"objects like {DECISION_EXAMPLE}, got {checks.json_type(value)}"
    for n, raw in enumerate(checks.json_list(value, where, MAX_ITEMS, shape)):
        at = f"{where}[{n}]"
        item = _object(raw, at, DECISION_FIELDS, DECISION_EXAMPLE)
        decision = _required(item.get("decision"), f"{at}.decision", ITEM, "state what was decided or rejected")
        reasoning = _required(item.get("reasoning"), f"{at}.reasoning", ITEM, "say why it was chosen or rejected")
        status = item.get("status", CHOSEN)
        if status not in (CHOSEN, REJECTED):
            raise InputError(f"{arg(at)}.status must be 'chosen' or 'rejected', got {status!r}")
        found.append({"decision": decision, "reasoning": reasoning, "status": status})
    return found


def _common(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """The fields a record and each of its topics share, validated; empty ones left out."""
    prefix = f"{where}." if where else ""
    out: dict[str, Any] = {
        "topic": _required(raw.get("topic"), prefix + "topic", SHORT, "give a 2-5 word topic"),
        "categories": _strings(raw.get("categories"), prefix + "categories"),
        "decisions": _decisions(raw.get("decisions"), prefix + "decisions"),
        "open_questions": _strings(raw.get("open_questions"), prefix + "open_questions"),
        "related_entities": _strings(raw.get("related_entities"), prefix + "related_entities"),
    }
    return {name: value for name, value in out.items() if value}


def validate_record(raw: Any) -> dict[str, Any]:
    """The record normalized (trimmed, defaults applied, empty fields dropped), or InputError naming the field."""
    record = _object(raw, "the record", TOP_FIELDS, RECORD_EXAMPLE)
    topics_raw = record.get("topics")
    kind = record.get("conversation_type")
    if kind is None:
        kind = MULTI if topics_raw or record.get("overall_summary") else SINGLE
    if kind not in (SINGLE, MULTI):
        raise InputError(f"conversation_type must be 'single_topic' or 'multi_topic', got {kind!r}")
    out: dict[str, Any] = {"conversation_type": kind, **_common(record, "")}
    if kind == SINGLE:
        for name in ("topics", "overall_summary", "cross_topic_insights"):
            if record.get(name):
                raise InputError(
                    f"{arg(name)} is only for multi_topic records: set {arg('conversation_type')} to multi_topic "
                    f"or drop {arg(name)}"
                )
        out["summary"] = _required(record.get("summary"), "summary", LONG, "write a 2-3 paragraph synthesis")
        return out
    hint = "a multi_topic record needs a synthesis of all its topics"
    multi = {
        "summary": checks.text(record.get("summary"), "summary", max_chars=LONG),
        "overall_summary": _required(record.get("overall_summary"), "overall_summary", LONG, hint),
        "cross_topic_insights": _strings(record.get("cross_topic_insights"), "cross_topic_insights"),
    }
    out.update((name, value) for name, value in multi.items() if value)
    if not isinstance(topics_raw, list) or not topics_raw:
        raise InputError(
            "topics is required for a multi_topic record: a list of {topic, summary, decisions, ...} objects"
        )
    out["topics"] = []
    for n, item in enumerate(checks.json_list(topics_raw, "topics", MAX_TOPICS, "")):
        at = f"topics[{n}]"
        entry = _common(_object(item, at, TOPIC_FIELDS, RECORD_EXAMPLE), at)
        entry["summary"] = _required(item.get("summary"), f"{at}.summary", LONG, "summarize this topic")
        out["topics"].append(entry)
    return out


def conversation_id_of(value: Any) -> str | None:
    given = (checks.text(value, "conversation_id", max_chars=128) or "").lower()
    if given and not _ID.match(given):
        raise InputError(
            f"{arg('conversation_id')} may hold only letters, digits and _.:- (up to 128 characters); "
            f"{call('generate_conversation_id')} for one"
        )
    return given or None


# -- writing -------------------------------------------------------------------------------


def generate_conversation_id() -> str:
    """A new conversation id; nothing is stored until save_conversation uses it."""
    return new_id()


@dataclass(frozen=True)
class Saved:
    event: Event
    conversation_id: str
    replaced: bool
    transcript_tokens: int
    transcript_blob: str | None


def _transcript(app: App, value: Any) -> tuple[dict[str, Any], list[str]]:
    """The transcript's entry in the record (a large one written to a blob first), and what was redacted.
    Secrets are scrubbed here as Store.append does for events, since a blob never passes through it."""
    text = checks.text(value, "full_transcript", max_chars=MAX_TRANSCRIPT_CHARS)
    if text is None:
        return {}, []
    scrubbed, redacted = secrets.scrub({"full_transcript": text})
    text = str(scrubbed["full_transcript"])
    tokens = estimate_tokens(text)
    small = tokens <= TRANSCRIPT_INLINE_TOKENS
    kept = {"text": text} if small else {"blob": write_blob(app.store.folder, text.encode())}
    return {"tokens": tokens, "chars": len(text), **kept}, redacted


def _owner(app: App, conversation_id: str) -> str:
    """The project a save naming none goes to: the default project, unless only another one has this id."""
    default = app.settings.default_project
    holders = [owner for owner, cid in conversations_state(app).records if cid == conversation_id]
    return holders[0] if len(holders) == 1 and default not in holders else default


def save_conversation(app: App, raw: Any) -> Saved:
    """Validate and store a conversation record; the same conversation_id replaces the old one."""
    record = validate_record(raw)
    conversation_id = conversation_id_of(raw.get("conversation_id")) or generate_conversation_id()
    data: dict[str, Any] = {
        "conversation_id": conversation_id,
        "source": checks.text(raw.get("source"), "source", max_chars=SHORT) or "unknown",
        "project": checks.name(checks.string(raw.get("project"), "project"), "project", SHORT)
        or _owner(app, conversation_id),
        **record,
    }
    session_id = checks.name(checks.string(raw.get("session_id"), "session_id"), "session_id", SHORT)
    if session_id:
        data["session_id"] = session_id
    size = len(jsonio.dumps(data))
    if size > MAX_RECORD_BYTES:
        raise InputError(
            f"the record is {size} bytes without its transcript; the limit is {MAX_RECORD_BYTES}. "
            "Summarize more tightly and put the detail in full_transcript"
        )
    data = app.store.admit(SAVE_KIND, data)  # refused before any blob reaches the synced folder
    transcript, redacted = _transcript(app, raw.get("full_transcript"))
    if transcript:
        data["transcript"] = transcript
    if redacted:
        data[secrets.REDACTED_FIELD] = redacted
    replaced = (str(data["project"]), conversation_id) in conversations_state(app).records
    event = app.store.append(SAVE_KIND, data)
    return Saved(event, conversation_id, replaced, transcript.get("tokens", 0), transcript.get("blob"))


# -- reading -------------------------------------------------------------------------------


def conversations_state(app: App) -> StoredConversations:
    """The conversations for one call, queried from their table on disk (conversations/stored.py): as built
    with the logs' remaining bytes while the derived tables do not hold every log (`ondisk.reading`)."""
    from contextflow.conversations.projection import PROJECTION
    from contextflow.conversations.stored import StoredConversations

    return StoredConversations(ondisk.reading(app, PROJECTION))


def list_conversations(app: App, *, project: str | None = None, limit: int | None = None) -> list[ConversationEntry]:
    """Conversation records, most recently saved first (every project unless one is named); `limit`
    within its table row's LIST_LIMIT."""
    wanted = checks.trimmed(project, "project", max_chars=SHORT)
    count = DEFAULT_LIST if limit is None else limit
    return conversations_state(app).newest_first(wanted, count)


def find_conversation(app: App, conversation_id: Any, project: Any = None) -> ConversationEntry:
    """The record with that id (or unique id prefix): in `project` when named, else the default
    project's, else the only project's that has it."""
    given = _required(conversation_id, "conversation_id", 128, "pass the id or a unique prefix of it")
    named = checks.text(project, "project", max_chars=SHORT)
    records = conversations_state(app).records
    ids = {cid for owner, cid in records if named is None or owner == named}
    where = f" in project {named!r}" if named else ""
    hint = "`contextflow conversations list` shows the saved ones"
    chosen = resolve_prefix(given, ids, f"conversation id{where}", hint)
    holders = sorted(owner for owner, cid in records if cid == chosen and (named is None or owner == named))
    if app.settings.default_project in holders:
        return records[(app.settings.default_project, chosen)]
    if len(holders) > 1:
        raise InputError(
            f"conversation {chosen} exists in projects {', '.join(holders)}; pass {arg('project')}= to choose one"
        )
    return records[(holders[0], chosen)]


def load_transcript(app: App, entry: ConversationEntry) -> str | None:
    """The full transcript of a record, read from its blob when it was stored apart."""
    transcript = entry.event.data.get("transcript")
    if not isinstance(transcript, dict):
        return None
    if isinstance(transcript.get("text"), str):
        return str(transcript["text"])
    sha = transcript.get("blob")
    if not isinstance(sha, str):
        return None
    return read_blob(app.store.folder, sha).decode("utf-8", errors="replace")


def record_json(entry: ConversationEntry, transcript: str | None = None) -> dict[str, Any]:
    """The record for JSON output: provenance first, the transcript only when it was asked for."""
    out: dict[str, Any] = {
        "id": entry.conversation_id,
        "kind": "conversation",
        "writer": entry.event.writer,
        "saved_at": entry.event.ts,
        "first_saved_at": entry.first_ts,
        "versions": entry.versions,
        **{name: value for name, value in entry.event.data.items() if name != "transcript"},
    }
    meta = entry.event.data.get("transcript")
    if isinstance(meta, dict):
        out["transcript"] = {name: meta[name] for name in ("tokens", "chars", "blob") if name in meta}
    if transcript is not None:
        out["full_transcript"] = transcript
    return out
