"""`@modelcontextprotocol/server-memory`'s `memory.json`: read it in, and write the graph out as one.

The file is JSON Lines, one object a line (as the server writes it, without a final newline):

    {"type":"entity","name":"Alice","entityType":"person","observations":["Leads payments"]}
    {"type":"relation","from":"Alice","to":"Payments API","relationType":"owns"}

An entity becomes a node keyed on its name (unique in a server-memory graph): its type is the
entity type when that is a node type (`decision`, `task`, ...), else `fact`; its content is
`Name (entityType)` and one `- observation` a line (a line break inside an observation is kept as
an indented line); tags `imported:server-memory` and `kind:<entityType>`; metadata `name` and
`entityType`. A relation becomes an edge whose type its name means (`depends_on` -> DEPENDS_ON,
others RELATES_TO) with the name in the edge's `relations`, so export gives the same relations back.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import lru_cache
from itertools import repeat
from pathlib import Path
from typing import Any, BinaryIO

from contextflow.core import jsonio
from contextflow.graph.model import NODE_TYPES
from contextflow.graph.stored import StoredGraph
from contextflow.graph.view import Node
from contextflow.imports.model import (
    EdgeRecord,
    Item,
    NodeRecord,
    SourceError,
    edge_type_for,
    parse_lines,
    tag_value,
    tags_of,
)

FORMAT = "server-memory"
PREFIX = FORMAT + ":"


def _header(name: str, entity_type: str) -> str:
    return f"{name} ({entity_type})" if entity_type else name


def entity_content(name: str, entity_type: str, observations: Iterable[str]) -> str:
    lines = [_header(name, entity_type)]
    lines += ["- " + text.replace("\n", "\n  ") for text in observations]
    return "\n".join(lines)


def observations_of(content: str, name: str, entity_type: str) -> list[str]:
    """The observations `entity_content` wrote (a node edited since: its content as one observation)."""
    lines = content.split("\n")
    if lines[0] != _header(name, entity_type):
        return [content]
    found: list[str] = []
    for line in lines[1:]:
        if line.startswith("  ") and found:
            found[-1] += "\n" + line[2:]
        else:
            found.append(line[2:] if line.startswith("- ") else line)
    return found


def _string(value: Any, what: str, path: Path, line: int, required: bool = True) -> str:
    if isinstance(value, str) and (value.strip() or not required):
        return value
    raise SourceError(path, f"{what} must be a non-empty string", line)


@lru_cache(maxsize=1024)
def _typed(entity_type: str) -> tuple[str, tuple[str, ...]]:
    """An entity type's node type and tags (a file repeats a few short types on every line: remembered)."""
    slug = tag_value(entity_type)
    return slug if slug in NODE_TYPES else "fact", tuple(tags_of(("imported", FORMAT), ("kind", entity_type)))


def items(label: str, handle: BinaryIO) -> Iterator[Item]:
    """The entities and relations of a memory.json, one line at a time."""
    path = Path(label)
    for line, item in parse_lines(handle, path):
        kind = item.get("type")
        if kind == "entity":
            name = _string(item.get("name"), '"name"', path, line)
            entity_type = item.get("entityType")
            entity_type = entity_type.strip() if isinstance(entity_type, str) else ""
            observations = item.get("observations", [])
            if not isinstance(observations, list) or not all(map(isinstance, observations, repeat(str))):
                raise SourceError(path, '"observations" must be a list of strings', line)
            node_type, tags = _typed(entity_type) if len(entity_type) <= 200 else _typed.__wrapped__(entity_type)
            metadata = {"name": name, "entityType": entity_type}
            yield NodeRecord(name, node_type, entity_content(name, entity_type, observations), list(tags), metadata)
        elif kind == "relation":
            source = _string(item.get("from"), '"from"', path, line)
            target = _string(item.get("to"), '"to"', path, line)
            relation = _string(item.get("relationType"), '"relationType"', path, line)
            # a user's own word: never contextflow's SUPERSEDES, which would hide the target from composed context
            edge_type = edge_type_for(relation)
            edge_type = "RELATES_TO" if edge_type == "SUPERSEDES" else edge_type
            yield EdgeRecord(source, target, edge_type, (relation,))
        else:
            raise SourceError(path, 'expected "type": "entity" or "relation" (a server-memory memory.json line)', line)


# -- export ----------------------------------------------------------------------------------


def _entity(state: StoredGraph, node: Node) -> dict[str, Any]:
    name, entity_type = node.metadata.get("name"), node.metadata.get("entityType")
    if node.origin.startswith(PREFIX) and isinstance(name, str) and isinstance(entity_type, str):
        observations = observations_of(node.content, name, entity_type)
        return {"name": name, "entityType": entity_type, "observations": observations}
    observations = [node.content]
    if node.summary:
        observations.append(f"summary: {node.summary}")
    tags = sorted(state.tags_of(node.id))
    if tags:
        observations.append(f"tags: {', '.join(tags)}")
    return {"name": node.id, "entityType": node.type, "observations": observations}


def export_lines(state: StoredGraph, ids: set[str]) -> tuple[bytes, int, int]:
    """The nodes `ids` and the edges between them as a memory.json, with the entity and relation counts."""
    nodes = sorted(state.many(ids), key=lambda node: node.created_key)  # (read together)
    names: dict[str, str] = {}
    taken: set[str] = set()
    lines: list[bytes] = []
    for node in nodes:
        entity = _entity(state, node)
        if entity["name"] in taken:  # two nodes named alike: the later one carries its id too
            entity["name"] = f"{entity['name']} [{node.id}]"
        taken.add(entity["name"])
        names[node.id] = entity["name"]
        lines.append(jsonio.dumps({"type": "entity", **entity}))
    relations = 0
    for edge in state.all_edges():
        if edge.source not in names or edge.target not in names:
            continue
        given = edge.metadata.get("relations")
        kinds = [str(name) for name in given] if isinstance(given, list) and given else [edge.type]
        for kind in kinds:
            relation = {"type": "relation", "from": names[edge.source], "to": names[edge.target], "relationType": kind}
            lines.append(jsonio.dumps(relation))
            relations += 1
    return b"\n".join(lines) + (b"\n" if lines else b""), len(nodes), relations
