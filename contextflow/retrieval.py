"""get_context: ranked retrieval across every kind of record, hydrated into budgeted markdown.

The search view (contextflow/search) ranks documents of every kind; this module checks the
caller's arguments, asks for the top `limit`, and renders each hit as a markdown block:
a header with its provenance (kind, id, writer, agent, time, project) and its stored text
quoted line by line as untrusted data. Blocks are added best first until `budget_tokens`
is reached; the block that crosses it is clipped, the rest are listed as left out. The text
returned never exceeds the budget (`estimate_tokens`, about four characters a token).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from contextflow import checks, timeutil
from contextflow.app import App
from contextflow.clock import stamp_iso
from contextflow.errors import InputError
from contextflow.search import VIEW_NAME, Doc, Hit, Query, SearchIndex, rank, search_kinds
from contextflow.search.tokens import query_terms
from contextflow.text import DATA_NOTICE, clean, clip, estimate_tokens, quote
from contextflow.views.conversations import ConversationEntry, ConversationsState

DEFAULT_LIMIT, MAX_LIMIT = 8, 50
DEFAULT_BUDGET, MIN_BUDGET, MAX_BUDGET = 2_000, 200, 50_000
CHARS_PER_TOKEN = 4
MIN_CLIPPED_CHARS = 320
FOOTER_RESERVE = 160
CLIP_MARK = "[clipped to stay within budget_tokens]"
DETAILS = ("type", "thought_type", "status", "session_id")


@dataclass(frozen=True)
class Shown:
    hit: Hit
    status: str  # full | clipped | omitted


@dataclass(frozen=True)
class ContextResult:
    query: Query
    budget: int
    shown: list[Shown]
    text: str

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)

    def as_dict(self) -> dict[str, Any]:
        return {
            "query": self.query.text,
            "project": self.query.project,
            "kinds": sorted(self.query.kinds),
            "count": len(self.shown),
            "tokens": self.tokens,
            "budget_tokens": self.budget,
            "results": [{"rank": n, **hit_json(s.hit), "shown": s.status} for n, s in enumerate(self.shown, 1)],
        }


def search_index(app: App) -> SearchIndex:
    index: SearchIndex = app.store.view(VIEW_NAME)
    return index


def context_query(app: App, *, query: Any, project: Any = None, kinds: Any = None, limit: Any = None) -> Query:
    text = checks.text(query, "query", required=True, max_chars=2_000)
    assert text is not None
    if not query_terms(text):
        raise InputError("query has no searchable words: use names of files, components, topics or decisions")
    known = search_kinds()
    if kinds is None:
        chosen: frozenset[str] = frozenset()
    elif isinstance(kinds, list | tuple):
        for n, kind in enumerate(kinds):
            if kind not in known:
                raise InputError(f"kinds[{n}]={kind!r} is not a searchable kind; kinds are: {', '.join(known)}")
        chosen = frozenset(kinds)
    else:
        raise InputError(f'kinds must be a list such as ["conversation", "handoff"]; kinds are: {", ".join(known)}')
    return Query(
        text=text,
        limit=checks.bounded_int(limit, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT),
        kinds=chosen,
        project=checks.text(project, "project", max_chars=200),
    )


def get_context(
    app: App, *, query: Any, project: Any = None, kinds: Any = None, limit: Any = None,
    budget_tokens: Any = None, now_ms: int | None = None,
) -> ContextResult:
    """The best matches for `query`, as markdown within `budget_tokens`."""
    wanted = context_query(app, query=query, project=project, kinds=kinds, limit=limit)
    budget = checks.bounded_int(budget_tokens, "budget_tokens", DEFAULT_BUDGET, MIN_BUDGET, MAX_BUDGET)
    hits = rank(search_index(app), wanted, timeutil.now_ms() if now_ms is None else now_ms)
    return hydrate(app, wanted, hits, budget)


# -- hydration -----------------------------------------------------------------------------


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def hit_json(hit: Hit) -> dict[str, Any]:
    doc = hit.doc
    return {
        "kind": doc.kind,
        "id": doc.ref,
        "title": clip(doc.text("title").split("\n", 1)[0], 200) or None,
        "project": doc.project or None,
        "writer": doc.value("writer"),
        "agent": doc.value("agent") or None,
        "time": stamp_iso(doc.latest[0]),
        "score": round(hit.score, 4),
    }


def provenance(kind: str, ref: str, writer: Any, agent: Any, time: str, project: Any) -> str:
    parts = [f"kind={kind}", f"id={clip(ref, 120)}", f"writer={clip(writer or 'unknown', 64)}"]
    parts += [f"agent={clip(agent or 'unknown', 64)}", f"time={time}", f"project={clip(project or 'shared', 80)}"]
    return " | ".join(parts)


def _section(label: str, text: str) -> str:
    return f"{label}:\n{quote(text)}"


def generic_body(doc: Doc, max_chars: int = MAX_BUDGET * CHARS_PER_TOKEN) -> str:
    """Every non-empty field, title first; `tags.*` and `meta.*` members gathered under one label.
    Fields are cut to `max_chars` first: no budget could show more, and huge ones cost time to clean."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for name, text in sorted(doc.field_texts(), key=lambda item: item[0] != "title"):
        if text:
            head, _, member = name.partition(".")
            groups.setdefault(head, []).append((member, text[:max_chars]))
    sections = []
    for head, members in groups.items():
        if head == "tags":
            text = ", ".join(clean(value, True) for _, value in members)
        elif head == "meta":
            text = "\n".join(f"{clean(member, True)}: {value}" for member, value in members)
        else:
            text = "\n".join(value for _, value in members)
        sections.append(_section({"meta": "metadata"}.get(head, head.replace("_", " ")), text))
    return "\n".join(sections)


def _bullets(items: Sequence[str]) -> str:
    return "\n".join(f"- {clean(item, True)}" for item in items)


def _decisions(items: Any) -> str:
    lines: list[str] = []
    for item in items if isinstance(items, list) else []:
        lines.append(f"- [{item.get('status', 'chosen')}] {clean(item.get('decision', ''), True)}")
        lines.append(f"  why: {clean(item.get('reasoning', ''), True)}")
    return "\n".join(lines)


def _record_sections(part: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        ("summary", clean(part.get("summary") or "")),
        ("decisions", _decisions(part.get("decisions"))),
        ("open questions", _bullets(part.get("open_questions") or [])),
        ("related entities", "; ".join(clean(e, True) for e in part.get("related_entities") or [])),
        ("categories", ", ".join(clean(c, True) for c in part.get("categories") or [])),
    ]


def conversation_body(entry: ConversationEntry) -> str:
    data = entry.event.data
    sections = [("topic", clean(data.get("topic") or "", True))]
    sections.append(("overall summary", clean(data.get("overall_summary") or "")))
    sections.append(("cross-topic insights", _bullets(data.get("cross_topic_insights") or [])))
    sections += _record_sections(data)
    topics = [t for t in data.get("topics") or [] if isinstance(t, dict)]
    for n, topic in enumerate(topics, 1):
        inner = [f"{label}:\n{text}" for label, text in _record_sections(topic) if text]
        sections.append((f"topic {n}/{len(topics)}", "\n".join([clean(topic.get("topic", ""), True), *inner])))
    blocks = [_section(label, text) for label, text in sections if text]
    transcript = data.get("transcript")
    if isinstance(transcript, dict):
        blocks.append(
            f"transcript: {transcript.get('tokens', '?')} tokens, not shown. Fetch it with get_conversation "
            f'{{"conversation_id": "{entry.conversation_id}", "include_transcript": true}} or '
            f"`contextflow conversations show {entry.conversation_id} --transcript`"
        )
    return "\n".join(blocks)


def conversation_markdown(entry: ConversationEntry, transcript: str | None = None) -> str:
    event = entry.event
    data = event.data
    header = f"## conversation {entry.conversation_id}\n" + provenance(
        "conversation", entry.conversation_id, event.writer, data.get("source"), event.ts, data.get("project")
    )
    header += f" | first_saved={entry.first_ts} | versions={entry.versions}"
    text = f"{header}\n{conversation_body(entry)}"
    if transcript is not None:
        text += "\n" + _section("full transcript", transcript)
    return text


class Views:
    """View states read once per get_context call (each `store.view` re-checks the logs)."""

    def __init__(self, app: App) -> None:
        self.app = app
        self._states: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._states:
            self._states[name] = self.app.store.view(name)
        return self._states[name]


def _conversation_hydrator(views: Views, doc: Doc) -> str | None:
    state: ConversationsState = views["conversations"]
    entry = state.records.get(doc.ref)
    return conversation_body(entry) if entry is not None else None


# A kind whose record has more structure than its index fields renders from its own view.
Hydrator = Callable[[Views, Doc], str | None]
HYDRATORS: dict[str, Hydrator] = {"conversation": _conversation_hydrator}


def hit_block(views: Views, hit: Hit, position: int, max_chars: int = MAX_BUDGET * CHARS_PER_TOKEN) -> str:
    doc = hit.doc
    info = hit_json(hit)
    header = f"## [{position}] {doc.kind} {clip(doc.ref, 120)}\n" + provenance(
        doc.kind, doc.ref, info["writer"], info["agent"], info["time"], info["project"]
    ) + "".join(f" | {name}={clip(doc.value(name), 40)}" for name in DETAILS if doc.value(name))
    header += f" | score={info['score']}"
    hydrator = HYDRATORS.get(doc.kind)
    body = (hydrator(views, doc) if hydrator else None) or generic_body(doc, max_chars)
    return f"{header}\n{body}"


def _clipped(block: str, room: int) -> str:
    """`block` cut at a line boundary (or inside its last line) to fit `room` characters."""
    limit = room - len(CLIP_MARK) - 2
    kept: list[str] = []
    used = 0
    for line in block.split("\n"):
        if used + len(line) + 1 > limit:
            space = limit - used - 4
            if space >= 40:
                kept.append(line[:space] + "...")
            break
        kept.append(line)
        used += len(line) + 1
    return "\n".join([*kept, CLIP_MARK])


def hydrate(app: App, query: Query, hits: list[Hit], budget: int) -> ContextResult:
    limit = budget * CHARS_PER_TOKEN
    scope = []
    if query.project is not None:
        scope.append(f"project={clip(query.project, 80)}")
    if query.kinds:
        scope.append("kinds=" + ",".join(sorted(query.kinds)))
    where = f" ({'; '.join(scope)})" if scope else ""
    if not hits:
        text = (
            f"# Context for: {clip(query.text, 200)}\nNo stored records match{where}. Try other words: names of "
            "files, components, people or decisions, or drop the filters."
        )
        return ContextResult(query, budget, [], text[:limit])
    found = _plural(len(hits), "match", "matches")
    parts = [f"# Context for: {clip(query.text, 200)}\n{found}, best first{where}. {DATA_NOTICE}"]
    used = len(parts[0])
    shown: list[Shown] = []
    views = Views(app)
    for position, hit in enumerate(hits, 1):
        block = hit_block(views, hit, position, limit)
        room = limit - used - 2 - FOOTER_RESERVE
        if len(block) <= room:
            parts.append(block)
            shown.append(Shown(hit, "full"))
        elif room >= MIN_CLIPPED_CHARS:
            parts.append(_clipped(block, room))
            shown.append(Shown(hit, "clipped"))
        else:
            break
        used += len(parts[-1]) + 2
        if shown[-1].status == "clipped":
            break
    omitted = hits[len(shown) :]
    if omitted:
        ids = ", ".join(f"{hit.doc.kind} {clip(hit.doc.ref, 20)}" for hit in omitted[:3])
        note = f"{len(omitted)} more match(es) left out by budget_tokens={budget} (e.g. {ids})"
        parts.append(clip(note, FOOTER_RESERVE - 4))
        shown += [Shown(hit, "omitted") for hit in omitted]
    return ContextResult(query, budget, shown, "\n\n".join(parts))
