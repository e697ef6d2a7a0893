"""Stored records as markdown blocks: what get_context shows the model for each search hit.

Every block starts with the provenance header (kind, id, writer, agent, time, project) and
quotes the stored text line by line as untrusted data. A kind whose record has more
structure than its index fields (a conversation) renders from its own view (`HYDRATORS`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from contextflow.clock import stamp_iso
from contextflow.present.provenance import header
from contextflow.search.index import Doc, Hit
from contextflow.text import clean, clip, quote
from contextflow.views.conversations import ConversationEntry, ConversationsState
from contextflow.views.sessions import DEFAULT_PROJECT

DETAILS = ("type", "thought_type", "status", "session_id")


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
        "weak": hit.weak,
    }


def provenance(kind: str, ref: str, writer: Any, agent: Any, time: str, project: Any) -> str:
    return header(
        ("kind", kind), ("id", ref), ("writer", writer or "unknown"), ("agent", agent or "unknown"), ("time", time),
        ("project", project or "shared"),
    )


def _section(label: str, text: str) -> str:
    return f"{label}:\n{quote(text)}"


def generic_body(doc: Doc, max_chars: int) -> str:
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


# A view's state by name, read once per get_context call (each `store.view` re-checks the logs).
Views = Callable[[str], Any]


def _conversation_hydrator(views: Views, doc: Doc) -> str | None:
    state: ConversationsState = views("conversations")
    entry = state.records.get((doc.project or DEFAULT_PROJECT, doc.ref))  # records are keyed by (project, id)
    return conversation_body(entry) if entry is not None else None


Hydrator = Callable[[Views, Doc], str | None]
HYDRATORS: dict[str, Hydrator] = {"conversation": _conversation_hydrator}


def hit_block(views: Views, hit: Hit, position: int, max_chars: int) -> str:
    """One search hit: its provenance header, then its record (its fields cut to `max_chars`)."""
    doc = hit.doc
    info = hit_json(hit)
    head = header(
        provenance(doc.kind, doc.ref, info["writer"], info["agent"], info["time"], info["project"]),
        *((name, clip(doc.value(name), 40)) for name in DETAILS if doc.value(name)),
        ("score", info["score"]),
        *((("match", "weak"),) if hit.weak else ()),
    )
    hydrator = HYDRATORS.get(doc.kind)
    body = (hydrator(views, doc) if hydrator else None) or generic_body(doc, max_chars)
    return f"## [{position}] {doc.kind} {clip(doc.ref, 120)}\n{head}\n{body}"
