"""Search hits as markdown blocks: what get_context shows the model for each.

Every block starts with the provenance header (kind, id, writer, agent, time, project) and
quotes the stored text line by line as untrusted data. A kind whose record has more
structure than its index fields (a conversation) renders from its own view (`HYDRATORS`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from contextflow.conversations.present import conversation_body
from contextflow.conversations.view import ConversationsState
from contextflow.core.clock import stamp_iso
from contextflow.core.project import DEFAULT_PROJECT
from contextflow.core.text import clean, clip, quote
from contextflow.operations.provenance import header, stored_header
from contextflow.search.docs import Doc, Hit

if TYPE_CHECKING:
    from contextflow.conversations.stored import StoredConversations

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


# A view's state by name, read once per get_context call (each read queries the tables).
Views = Callable[[str], Any]


def _conversation_hydrator(views: Views, doc: Doc) -> str | None:
    state: ConversationsState | StoredConversations = views("conversations")
    entry = state.records.get((doc.project or DEFAULT_PROJECT, doc.ref))  # records are keyed by (project, id)
    return conversation_body(entry) if entry is not None else None


Hydrator = Callable[[Views, Doc], str | None]
HYDRATORS: dict[str, Hydrator] = {"conversation": _conversation_hydrator}


def hit_block(views: Views, hit: Hit, position: int, max_chars: int) -> str:
    """One search hit: its provenance header, then its record (its fields cut to `max_chars`)."""
    doc = hit.doc
    info = hit_json(hit)
    head = header(
        stored_header(doc.kind, doc.ref, info["writer"], info["agent"], info["time"], info["project"]),
        *((name, clip(doc.value(name), 40)) for name in DETAILS if doc.value(name)),
        ("score", info["score"]),
        *((("match", "weak"),) if hit.weak else ()),
        *((("matched", "only in the entry beside it: " + ", ".join(hit.beside)),) if hit.beside else ()),
    )
    hydrator = HYDRATORS.get(doc.kind)
    body = (hydrator(views, doc) if hydrator else None) or generic_body(doc, max_chars)
    return f"## [{position}] {doc.kind} {clip(doc.ref, 120)}\n{head}\n{body}"
