"""The knowledge graph's vocabulary: node and edge types, tags, tiers, and their validation.

A node is a piece of knowledge (`fact`, `decision`, ...) with content, an optional summary
and metadata; an edge is a typed, directed link between two nodes, unique per
(from, to, type); tags are `namespace:value` strings, and the `tier:` tags steer what
context composition loads. Token estimates are `text.estimate_tokens`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from contextflow.core import checks, regexes
from contextflow.core.errors import InputError, arg
from contextflow.graph.fields import (  # the vocabulary and limits the table shares, said once there
    DEFAULT_VIEW_BUDGET as DEFAULT_VIEW_BUDGET,
)
from contextflow.graph.fields import EDGE_TYPES as EDGE_TYPES
from contextflow.graph.fields import MAX_BUDGET as MAX_BUDGET
from contextflow.graph.fields import MAX_CONTENT_CHARS as MAX_CONTENT_CHARS
from contextflow.graph.fields import MAX_SUMMARY_CHARS as MAX_SUMMARY_CHARS
from contextflow.graph.fields import MAX_TAGS as MAX_TAGS
from contextflow.graph.fields import NODE_TYPES as NODE_TYPES

TIERS = ("pinned", "reference", "working", "off-context")
TIER_TAGS = tuple(f"tier:{tier}" for tier in TIERS)
PINNED, REFERENCE, WORKING, OFF_CONTEXT = TIER_TAGS

# event kinds (another feature indexes graph.node for ranked search: keep these names)
NODE = "graph.node"
NODE_UPDATE = "graph.node_update"
NODE_DELETE = "graph.node_delete"
EDGE = "graph.edge"
EDGE_DELETE = "graph.edge_delete"
TAG = "graph.tag"
UNTAG = "graph.untag"
VIEW = "graph.view"
VIEW_DELETE = "graph.view_delete"

# metadata that says where or when a node came from, not what it knows: kept, but not searched
UNSEARCHED_METADATA = frozenset({"source_version", "created_at", "updated_at", "closed_at"})

MAX_TAG_CHARS = 200
MAX_META_KEYS = 50
MAX_META_CHARS = 20_000

_TAG = regexes.compile(r"^[A-Za-z0-9_.-]+:\S+$")
_NAME = regexes.compile(r"^[A-Za-z0-9_.-]{1,64}$")  # a view name or metadata key


def edge_type(value: str) -> str:
    """An edge type in any case (the CLI takes `depends_on`), as stored."""
    if value.upper() in EDGE_TYPES:
        return value.upper()
    raise InputError(f"edge type must be one of {', '.join(EDGE_TYPES)}; got {value!r}")


def content(value: str, name: str = "content") -> str:
    if not value.strip():
        raise InputError(f"{arg(name)} is required: pass the knowledge as a non-empty string")
    text = value.strip()
    if len(text) > MAX_CONTENT_CHARS:
        raise InputError(
            f"{arg(name)} is {len(text)} characters; the limit is {MAX_CONTENT_CHARS}. Split it into nodes"
        )
    return text


def summary(value: str | None) -> str | None:
    return checks.trimmed(value, "summary", max_chars=MAX_SUMMARY_CHARS)


def tag(value: str) -> str:
    return _known_tag(value) if type(value) is str and len(value) <= MAX_TAG_CHARS else _tag(value)


@lru_cache(maxsize=4096)
def _known_tag(value: str) -> str:
    """A tag checked once (an import gives the same few on every node; a refused one is checked again)."""
    return _tag(value)


def _tag(value: str) -> str:
    text = value.strip()
    if not _well_formed(text):
        raise InputError(
            f"tag {value!r} is not valid: use namespace:value without spaces, "
            "e.g. project:viberent, task:auth, tier:reference"
        )
    namespace, _, rest = text.partition(":")
    if namespace.lower() == "tier" and rest not in TIERS:
        raise InputError(f"tier tag {text!r} is not known: use one of {', '.join(TIER_TAGS)}")
    return text


@lru_cache(maxsize=4096)
def _well_formed(text: str) -> bool:
    """namespace:value within the length limit (an import checks the same few tags thousands of times)."""
    return bool(_TAG.match(text)) and len(text) <= MAX_TAG_CHARS


def project_tag(project: str) -> str | None:
    """The tag that scopes a node to `project` (`project:owner/repo`; spaces and parentheses
    become `-`), or None for the shared project and for a name no tag can hold."""
    from contextflow.core.project import DEFAULT_PROJECT

    if project == DEFAULT_PROJECT:
        return None
    text = "project:" + re.sub(r'[\s()"]', "-", project)
    return text if _TAG.match(text) and len(text) <= MAX_TAG_CHARS else None


def scoped_tags(values: list[str] | None, project: str) -> list[str]:
    """`values` checked, plus the project's tag when none names a project (and room is left)."""
    checked = tags(values)
    extra = project_tag(project)
    if extra and len(checked) < MAX_TAGS and not any(t.lower().startswith("project:") for t in checked):
        checked.append(extra)
    return checked


def dedupe_key(content: str) -> str:
    """What makes two remembered texts the same node: compared without case, runs of white
    space and final punctuation (the stored content keeps its own)."""
    return " ".join(content.split()).casefold().rstrip(" .!?;:,")


def tags(values: list[str] | None) -> list[str]:
    """Tags validated (the table row, or `inbound.tags`, held their count), deduplicated, order kept."""
    out: list[str] = []
    for value in values or []:
        checked = tag(value)
        if checked not in out:
            out.append(checked)
    return out


def metadata(value: dict[str, Any] | None, *, allow_null: bool = False) -> dict[str, Any]:
    """A flat JSON object of metadata; a null value (when allowed) removes that key."""
    if value is None:
        return {}
    checks.json_size(value, "metadata")
    if len(value) > MAX_META_KEYS:
        raise InputError(f"metadata has {len(value)} keys; the limit is {MAX_META_KEYS}")
    out: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not _named(key):
            raise InputError(f"metadata key {key!r} is not valid: use 1-64 letters, digits, '_', '-' or '.'")
        if type(item) is str and len(item) <= MAX_META_CHARS:  # the common case (an import's every node)
            out[key] = item
            continue
        if item is None and not allow_null:
            continue
        if item is not None and not isinstance(item, str | int | float | bool | list | dict):
            raise InputError(f"metadata[{key!r}] must be JSON (string, number, boolean, list or object)")
        if len(str(item)) > MAX_META_CHARS:
            raise InputError(f"metadata[{key!r}] is too long; the limit is {MAX_META_CHARS} characters")
        out[key] = item
    return out


@lru_cache(maxsize=1024)
def _named(key: str) -> bool:
    """A valid metadata key (an import checks the same few keys on every node)."""
    return _NAME.match(key) is not None


def meta_pairs(pairs: list[str] | None) -> dict[str, Any]:
    """`key=value` strings (CLI --meta) as a dict; `key=` removes the key on update."""
    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--meta {pair!r} is not key=value, e.g. --meta confidence=high")
        out[key.strip()] = value if value else None
    return out


def view_name(value: str) -> str:
    if not _NAME.match(value.strip()):
        raise InputError(f"view name {value!r} is not valid: use 1-64 letters, digits, '_', '-' or '.'")
    return value.strip()


def tier_of(node_tags: set[str] | frozenset[str]) -> str | None:
    """The node's tier (the strongest when several are set), or None."""
    for tier_tag in TIER_TAGS:
        if tier_tag in node_tags:
            return tier_tag.partition(":")[2]
    return None


NOT_PRINTABLE = -(1 << 30)


def shortest_text(content: str, summary: str) -> int:
    """A lower bound of the length a node's bullet gives its text (content or summary, whichever is
    shorter): printable text comes out of cleaning unchanged, and each later line is quoted (`> `);
    text cleaning may change counts as NOT_PRINTABLE."""
    found = _shown(content)
    return min(found, _shown(summary)) if summary else found


def _shown(text: str) -> int:
    if not text.replace("\n", "").isprintable():
        return NOT_PRINTABLE
    lines = text.strip().split("\n")
    return sum(len(line) for line in lines if line.strip()) + len(lines) - 1
