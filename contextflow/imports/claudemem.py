"""claude-mem's JSON export (`scripts/export-memories.ts`): observations and session summaries.

    {"exportedAt": "...", "totalObservations": 2, "observations": [{"memory_session_id": "...",
      "project": "shop", "type": "decision", "title": "...", "subtitle": "...", "narrative": "...",
      "facts": "[\\"...\\"]", "concepts": "[\\"how-it-works\\"]", "files_read": "[...]",
      "files_modified": "[...]", "created_at": "...", "created_at_epoch": 1730000000000}, ...],
     "summaries": [{"memory_session_id": "...", "request": "...", "investigated": "...", "learned": "...",
      "completed": "...", "next_steps": "...", ...}], "sessions": [...], "prompts": [...]}

An observation becomes a node keyed as claude-mem itself tells duplicates apart (session, title,
time): a `decision` stays one, every other type is an `observation`; content its title, subtitle,
narrative, text and facts; summary its title; tags `imported:claude-mem`, `kind:<type>`,
`project:<project>` and `concept:<concept>`; metadata the session, time and files. A session summary
becomes a `summary` node (request, investigated, learned, completed, next steps, notes) DERIVED_FROM
the observations of its session. Raw prompts and session records are counted and left out.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from contextflow.core import jsonio
from contextflow.imports import jsondoc
from contextflow.imports.model import GroupEdge, Item, Member, NodeRecord, Skipped, SourceError, fitted, tags_of

FORMAT = "claude-mem"
SUMMARY_PARTS = (
    ("request", "Request"),
    ("investigated", "Investigated"),
    ("learned", "Learned"),
    ("completed", "Completed"),
    ("next_steps", "Next steps"),
    ("notes", "Notes"),
)
MAX_FILES = 200
NOT_AN_EXPORT = 'not a claude-mem export: expected an object with an "observations" list'


def looks_like(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("observations"), list)
        and ("exportedAt" in doc or "totalObservations" in doc or "summaries" in doc)
    )


def _strings(value: Any, where: str, path: Path) -> list[str]:
    """A list of strings, given as a list or as the JSON text of one (claude-mem stores them as text)."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        try:
            value = jsonio.loads(value)
        except jsonio.DecodeError:
            return [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise SourceError(path, f"{where} must be a list of strings")
    return [item.strip() for item in value if item.strip()]


def _text(item: dict[str, Any], key: str, where: str, path: Path) -> str:
    value = item.get(key)
    if value is None:
        return ""
    if not isinstance(value, str | int | float):
        raise SourceError(path, f"{where}.{key} must be text")
    return str(value).strip()


def _common(item: dict[str, Any], where: str, path: Path) -> tuple[str, list[str], dict[str, Any]]:
    session = _text(item, "memory_session_id", where, path)
    project = _text(item, "project", where, path)
    tags = tags_of(("imported", "claude-mem"), ("project", project))
    metadata: dict[str, Any] = {"session": session} if session else {}
    if created := _text(item, "created_at", where, path):
        metadata["created_at"] = created
    for name in ("files_read", "files_modified", "files_edited"):
        if files := _strings(item.get(name), f"{where}.{name}", path):
            metadata[name] = files[:MAX_FILES]
    return session, tags, metadata


def _observation(item: dict[str, Any], where: str, path: Path) -> NodeRecord:
    session, tags, metadata = _common(item, where, path)
    kind = _text(item, "type", where, path) or "discovery"
    title = _text(item, "title", where, path)
    parts = [_text(item, key, where, path) for key in ("title", "subtitle", "narrative", "text")]
    facts = _strings(item.get("facts"), f"{where}.facts", path)
    if facts:
        parts.append("Facts:\n" + "\n".join(f"- {fact}" for fact in facts))
    content = "\n\n".join(part for part in parts if part)
    if not content:
        raise SourceError(path, f"{where} has no title, narrative, text or facts")
    concepts = _strings(item.get("concepts"), f"{where}.concepts", path)
    tags += tags_of(("kind", kind), *(("concept", concept) for concept in concepts))
    key = f"observation:{session}:{_text(item, 'created_at_epoch', where, path)}:{title or content[:200]}"
    node_type = "decision" if kind == "decision" else "observation"
    return NodeRecord(key, node_type, content, list(dict.fromkeys(tags))[:50], fitted(metadata), summary=title or None)


def _summary(item: dict[str, Any], where: str, path: Path) -> NodeRecord:
    session, tags, metadata = _common(item, where, path)
    parts = [f"{heading}: {text}" for key, heading in SUMMARY_PARTS if (text := _text(item, key, where, path))]
    if not parts:
        raise SourceError(path, f"{where} has none of request, investigated, learned, completed, next_steps")
    key = f"summary:{session or _text(item, 'created_at_epoch', where, path)}"
    return NodeRecord(key, "summary", "\n\n".join(parts), tags, fitted(metadata))


def items(label: str, handle: BinaryIO) -> Iterator[Item]:
    """The observations and summaries of an export, one at a time (the document is never read whole)."""
    path = Path(label)
    found = False
    index: dict[str, int] = {}
    for event, name, value in jsondoc.members(handle, path, NOT_AN_EXPORT):
        if name in ("prompts", "sessions"):
            if event == "item":
                yield Skipped("prompt" if name == "prompts" else "session record")
            continue
        if name not in ("observations", "summaries"):
            continue
        found = found or (name == "observations" and event == "array")
        if event == "value":
            if name == "observations":
                raise SourceError(path, NOT_AN_EXPORT)
            if value:  # no summaries: null or empty
                raise SourceError(path, '"summaries" must be a list')
            continue
        if event != "item":
            continue
        where = f"{name}[{index.setdefault(name, 0)}]"
        index[name] += 1
        if not isinstance(value, dict):
            raise SourceError(path, f"{where} must be an object")
        if name == "observations":
            record = _observation(value, where, path)
            yield record
            if session := record.metadata.get("session"):
                yield Member(session, record.key)
        else:
            record = _summary(value, where, path)
            yield record
            if session := record.metadata.get("session"):
                yield GroupEdge(record.key, session, "DERIVED_FROM")
    if not found:  # detection also wants a marker
        raise SourceError(path, NOT_AN_EXPORT)
