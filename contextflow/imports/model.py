"""What the importers share: records read from a source, the error for a bad line, the report."""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from contextflow.core import jsonio, regexes
from contextflow.core.errors import InputError

_TAG_VALUE = regexes.compile(r"[^\w.:/@+-]+")  # letters of any script stay (a tag value is any non-space)


class SourceError(InputError):
    """A file that cannot be imported: names the file (and line) and what is wrong with it."""

    def __init__(self, file: Path | str, problem: str, line: int | None = None) -> None:
        self.file, self.line, self.problem = str(file), line, problem
        where = f"{file}:{line}" if line else str(file)
        super().__init__(f"{where}: {problem}; nothing of this file was stored")


class NodeRecord(NamedTuple):
    """One node as the source has it; `key` is unique within the format (an entity name, an issue id)."""

    key: str
    type: str
    content: str
    tags: list[str]
    metadata: dict[str, Any]
    summary: str | None = None


class EdgeRecord(NamedTuple):
    """An edge between two node keys; `relations` are the source's own names for it (kept in metadata)."""

    source: str
    target: str
    type: str
    relations: tuple[str, ...] = ()


class Deleted(NamedTuple):
    """A key the source marks deleted (a beads tombstone): the node an earlier import made is deleted."""

    key: str


class Skipped(NamedTuple):
    """Items of a kind the format does not import, counted."""

    what: str
    n: int = 1


class Member(NamedTuple):
    """The node `key` belongs to `group` (a claude-mem observation to its session)."""

    group: str
    key: str


class GroupEdge(NamedTuple):
    """An edge from `source` to every node of `group` (a claude-mem summary to its session's observations)."""

    source: str
    group: str
    type: str


Item = NodeRecord | EdgeRecord | Deleted | Skipped | Member | GroupEdge  # what a reader yields, one at a time


@dataclass
class Records:
    """What one file of a graph format holds (a folder of notes: one per note)."""

    nodes: list[NodeRecord] = field(default_factory=list)
    edges: list[EdgeRecord] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)  # keys the source marks deleted (beads tombstones)
    skipped: Counter[str] = field(default_factory=Counter)  # what the format does not import, by what

    def items(self) -> list[Item]:
        return [
            *self.nodes,
            *self.edges,
            *map(Deleted, self.deleted),
            *(Skipped(*pair) for pair in self.skipped.items()),
        ]


class Planned(NamedTuple):
    """One event an import would write: its derived id, kind and data, and what it is (node, edge, ...)."""

    id: str
    kind: str
    data: dict[str, Any]
    what: str
    label: str  # a line for --dry-run
    body: bytes | None = None  # `data` as JSON holding no `<private>` text, when the planner has it: not encoded again


@dataclass
class Report:
    """The outcome of one import (or of a dry run): counts by what, per file, and the files refused."""

    format: str
    path: str
    dry_run: bool = False
    files: int = 0
    stored: Counter[str] = field(default_factory=Counter)
    present: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    planned: list[Planned] = field(default_factory=list)  # a dry run's events

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "format": self.format,
            "path": self.path,
            "dry_run": self.dry_run,
            "files": self.files,
            "stored" if not self.dry_run else "would_store": dict(self.stored),
            "already_present": dict(self.present),
            "skipped": dict(self.skipped),
            "errors": self.errors,
        }
        if self.dry_run:
            data["events"] = [{"id": p.id, "kind": p.kind, "what": p.what, "data": p.data} for p in self.planned]
        return data

    def text(self, shown: int = 20) -> str:
        verb = "Would store" if self.dry_run else "Stored"
        files = f"{self.files} file" + ("" if self.files == 1 else "s")
        lines = [f"{verb} {_counts(self.stored)} from {self.path} ({self.format}, {files})."]
        if self.present:
            lines.append(f"Already present: {_counts(self.present)}.")
        if self.skipped:
            lines.append("Left out: " + ", ".join(f"{what} ({n})" for what, n in sorted(self.skipped.items())) + ".")
        if self.dry_run and self.planned:
            lines += [f"  {p.what} {p.id} {p.label}" for p in self.planned[:shown]]
            if len(self.planned) > shown:
                lines.append(f"  ... and {len(self.planned) - shown} more (--format json lists them all)")
        lines += [f"Not imported: {error}" for error in self.errors]
        return "\n".join(lines)


ORDER = ("node", "update", "tag", "edge", "delete", "view", "turn", "handoff")


def _counts(counter: Counter[str]) -> str:
    ranked = sorted(counter.items(), key=lambda item: (ORDER.index(item[0]) if item[0] in ORDER else len(ORDER), item))
    return ", ".join(f"{n} {what if n == 1 else _plural(what)}" for what, n in ranked if n) or "nothing"


def _plural(what: str) -> str:
    return what[:-1] + "ies" if what.endswith("y") else what + ("es" if what.endswith("s") else "s")


# a source's name for a link -> the edge type it means; any other name is RELATES_TO (the name is kept)
_EDGE_NAMES = {
    "depends_on": "DEPENDS_ON",
    "depends": "DEPENDS_ON",
    "requires": "DEPENDS_ON",
    "blocks": "DEPENDS_ON",
    "derived_from": "DERIVED_FROM",
    "based_on": "DERIVED_FROM",
    "discovered_from": "DERIVED_FROM",
    "child_of": "CHILD_OF",
    "part_of": "CHILD_OF",
    "parent_child": "CHILD_OF",
    "belongs_to": "CHILD_OF",
    "supersedes": "SUPERSEDES",
    "replaces": "SUPERSEDES",
    "relates_to": "RELATES_TO",
    "related": "RELATES_TO",
}


def edge_type_for(name: str) -> str:
    """The edge type a relation named `name` means (`depends_on`, `requires` -> DEPENDS_ON, ...)."""
    return _EDGE_NAMES.get(re.sub(r"[\s-]+", "_", name.strip().lower()), "RELATES_TO")


def tag_value(value: Any) -> str:
    """A source's label, type or status as the value part of a namespace:value tag (no spaces)."""
    text = value if type(value) is str else str(value)
    return _tag_text(text) if len(text) <= _REMEMBERED_CHARS else _tag_text.__wrapped__(text)


_REMEMBERED_CHARS = 200  # a type or status a source repeats on every item: its tag value is remembered


@functools.lru_cache(maxsize=1024)
def _tag_text(text: str) -> str:
    return _TAG_VALUE.sub("-", text.strip()).strip("-").lower()[:120]


def tags_of(*pairs: tuple[str, Any]) -> list[str]:
    """`namespace:value` tags for the (namespace, value) pairs whose value leaves a tag value (once each)."""
    return list(dict.fromkeys(f"{namespace}:{value}" for namespace, raw in pairs if (value := tag_value(raw))))


MAX_META_VALUE = 19_000  # under graph.model.MAX_META_CHARS: what does not fit is cut (lists) or left out


def fitted(metadata: dict[str, Any]) -> dict[str, Any]:
    """`metadata` with every value within the graph's metadata limit: a long list keeps its first
    items, a long text is left out (it belongs in the content), so one odd field never refuses a file."""
    out: dict[str, Any] = {}
    for key, value in metadata.items():
        if isinstance(value, list):
            kept: list[Any] = []
            for item in value:
                if len(str([*kept, item])) > MAX_META_VALUE:
                    break
                kept.append(item)
            value = kept
        if len(str(value)) <= MAX_META_VALUE:
            out[key] = value
    return out


MAX_SOURCE_LINE = 16 * 1024 * 1024  # a line of a JSON Lines source; a longer one is a bad line


def parse_lines(handle: BinaryIO, path: Path | str) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON object on each non-blank line of `handle`, with its line number (one line in memory at a time)."""
    number = 0
    while line := handle.readline(MAX_SOURCE_LINE + 1):
        number += 1
        if len(line) > MAX_SOURCE_LINE:
            raise SourceError(path, f"a line longer than {MAX_SOURCE_LINE >> 20} MiB; split the item", number)
        if not line.strip():
            continue
        try:
            value = jsonio.loads(line)
        except jsonio.DecodeError as exc:
            raise SourceError(path, f"not valid JSON ({exc})", number) from None
        if not isinstance(value, dict):
            raise SourceError(path, "expected a JSON object on this line", number)
        yield number, value
