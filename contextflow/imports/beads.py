"""beads' `.beads/issues.jsonl` (the `bd` issue tracker): one issue a line.

    {"id":"bd-a1","title":"...","description":"...","status":"open","priority":1,"issue_type":"bug",
     "labels":["auth"],"dependencies":[{"issue_id":"bd-a1","depends_on_id":"bd-b2","type":"blocks"}],
     "created_at":"2025-11-01T10:00:00Z","updated_at":"..."}

An issue becomes a `task` node keyed on its id: content `id: title`, then the description, design,
acceptance criteria, notes and comments; summary `id: title`; tags `imported:beads`,
`kind:<issue_type>`, `status:<status>`, `priority:p<0-4>` and `label:<label>`; metadata
`beads_id`, `status`, `priority`, `issue_type`, the assignee, owner, creator, times and pin when set,
and its own `metadata` as `beads_metadata`. `bd` leaves a
priority of 0 out of the line, so a missing priority is 0. Dependencies become edges from the issue:
`blocks` DEPENDS_ON its blocker, `parent-child` CHILD_OF its parent, `discovered-from` DERIVED_FROM,
`related` RELATES_TO. A tombstone (a deleted issue) deletes the node an earlier import made. A memory line
(`bd export --include-memories`: `{"_type": "memory", "key", "value"}`) becomes a `fact` node tagged
`kind:memory`; another `_type` (a schema header) is counted and left out.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from contextflow.imports.model import (
    Deleted,
    EdgeRecord,
    Item,
    NodeRecord,
    Skipped,
    SourceError,
    edge_type_for,
    fitted,
    parse_lines,
    tags_of,
)

FORMAT = "beads"
SECTIONS = (("design", "Design"), ("acceptance_criteria", "Acceptance criteria"), ("notes", "Notes"))
KEPT = (
    "assignee",
    "owner",
    "created_by",
    "created_at",
    "updated_at",
    "started_at",
    "due_at",
    "defer_until",
    "closed_at",
    "close_reason",
    "external_ref",
    "estimated_minutes",
    "pinned",
)


def _text(item: dict[str, Any], key: str, path: Path, line: int) -> str:
    value = item.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise SourceError(path, f'"{key}" must be a string', line)
    return value.strip()


def _comments(item: dict[str, Any], path: Path, line: int) -> list[str]:
    comments = item.get("comments") or []
    if not isinstance(comments, list) or not all(isinstance(c, dict) for c in comments):
        raise SourceError(path, '"comments" must be a list of objects', line)
    return [
        f"- {c.get('author') or 'someone'} ({c.get('created_at') or 'undated'}): {str(c.get('text') or '').strip()}"
        for c in comments
    ]


def issue_record(item: dict[str, Any], path: Path, line: int) -> tuple[NodeRecord, list[EdgeRecord]]:
    key = _text(item, "id", path, line)
    title = _text(item, "title", path, line)
    if not key or not title:
        raise SourceError(path, 'an issue needs "id" and "title" strings', line)
    status = _text(item, "status", path, line) or "open"
    priority = item.get("priority", 0)
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise SourceError(path, '"priority" must be a whole number (0-4)', line)
    issue_type = _text(item, "issue_type", path, line) or "task"
    parts = [f"{key}: {title}"]
    if description := _text(item, "description", path, line):
        parts.append(description)
    parts += [f"## {heading}\n\n{text}" for field, heading in SECTIONS if (text := _text(item, field, path, line))]
    if comments := _comments(item, path, line):
        parts.append("## Comments\n\n" + "\n".join(comments))
    labels = item.get("labels") or []
    if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
        raise SourceError(path, '"labels" must be a list of strings', line)
    pairs = [("imported", "beads"), ("kind", issue_type), ("status", status), ("priority", f"p{priority}")]
    tags = tags_of(*pairs, *(("label", label) for label in labels))
    metadata: dict[str, Any] = {"beads_id": key, "status": status, "priority": priority, "issue_type": issue_type}
    metadata.update({name: item[name] for name in KEPT if isinstance(item.get(name), str | int) and item[name] != ""})
    if isinstance(item.get("metadata"), dict) and item["metadata"]:
        metadata["beads_metadata"] = item["metadata"]  # its own free-form fields, as they are
    record = NodeRecord(key, "task", "\n\n".join(parts), tags[:50], fitted(metadata), summary=f"{key}: {title}")
    return record, _dependencies(item, key, path, line)


def _dependencies(item: dict[str, Any], key: str, path: Path, line: int) -> list[EdgeRecord]:
    found = item.get("dependencies") or []
    if not isinstance(found, list) or not all(isinstance(d, dict) for d in found):
        raise SourceError(path, '"dependencies" must be a list of objects', line)
    edges = []
    for dependency in found:
        target, kind = dependency.get("depends_on_id"), dependency.get("type") or "blocks"
        if not isinstance(target, str) or not target or not isinstance(kind, str):
            raise SourceError(path, 'a dependency needs "depends_on_id" and "type" strings', line)
        source = dependency.get("issue_id") if isinstance(dependency.get("issue_id"), str) else key
        edges.append(EdgeRecord(source or key, target, edge_type_for(kind), (kind,)))
    return edges


def items(label: str, handle: BinaryIO) -> Iterator[Item]:
    """The issues (and memories, tombstones) of an issues.jsonl, one line at a time."""
    path = Path(label)
    for line, item in parse_lines(handle, path):
        marked = item.get("_type")
        if marked == "memory":  # `bd export --include-memories`: one of its `bd remember` memories
            yield memory_record(item, path, line)
            continue
        if marked is not None and marked != "issue":  # a schema header or a record type it adds later
            yield Skipped(f"beads {marked!s:.40} record")
            continue
        if item.get("status") == "tombstone" or item.get("deleted_at"):
            if isinstance(item.get("id"), str):
                yield Deleted(item["id"])
            continue
        record, edges = issue_record(item, path, line)
        yield record
        yield from edges


def memory_record(item: dict[str, Any], path: Path, line: int) -> NodeRecord:
    """A `{"_type": "memory", "key": ..., "value": ...}` line as a `fact` node keyed on its key."""
    key, value = item.get("key"), item.get("value")
    if not isinstance(key, str) or not key.strip() or not isinstance(value, str):
        raise SourceError(path, 'a memory needs "key" and "value" strings', line)
    tags = tags_of(("imported", "beads"), ("kind", "memory"))
    return NodeRecord(f"memory:{key.strip()}", "fact", value.strip() or key, tags, {"beads_memory": key.strip()})


def issues_file(path: Path) -> Path:
    """`.beads/issues.jsonl` when given the repository or its `.beads` folder, else the path itself."""
    for candidate in (path / ".beads" / "issues.jsonl", path / "issues.jsonl"):
        if path.is_dir() and candidate.is_file():
            return candidate
    return path
