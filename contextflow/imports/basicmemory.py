"""A basic-memory folder: Markdown notes with front matter, linked by `[[Title]]`.

    ---
    title: Coffee Brewing Methods
    type: note
    tags: [coffee, brewing]
    permalink: coffee-brewing-methods
    ---
    # Coffee Brewing Methods
    - [method] Pour over gives more clarity #brewing
    - relates_to [[Coffee Bean Origins]]

Each `.md` file under the folder (hidden folders left out) becomes a node keyed on its `permalink`
(else its path in the folder): content the note's body (its title as a heading when the body has
none), type the front matter `type` when that is a node type, else `fact`; tags `imported:basic-memory`,
`kind:<type>` and `label:<tag>`; metadata `title`, `permalink`, `path` and the note's other plain
front matter fields. A relation line `- relation_type [[Target]]` becomes an edge of the type its
name means (`depends_on`, `requires` -> DEPENDS_ON, ...) and any other `[[link]]` in prose a
RELATES_TO edge named `links_to`; a target is found by title, permalink or path, and links to notes
outside the folder are counted and left out. Front matter is parsed by `frontmatter.py` (no YAML
library, no code).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from contextflow.core import regexes
from contextflow.core.markdown import mask_code
from contextflow.graph.model import NODE_TYPES
from contextflow.imports import files
from contextflow.imports.frontmatter import FrontMatterError, split
from contextflow.imports.model import (
    EdgeRecord,
    NodeRecord,
    Records,
    SourceError,
    edge_type_for,
    fitted,
    tag_value,
    tags_of,
)

FORMAT = "basic-memory"
STANDARD = ("title", "type", "tags", "permalink")
_LINK = regexes.compile(r"\[\[([^\[\]\n]+?)\]\]")
_RELATION = regexes.compile(
    r"^[ \t]*[-*][ \t]+([A-Za-z_][\w-]*(?:[ \t]+[A-Za-z_][\w-]*)*)[ \t]+\[\[([^\[\]\n]+?)\]\]", re.M
)
_META_KEY = regexes.compile(r"^[A-Za-z0-9_.-]{1,64}$")
MAX_CUSTOM = 40


def note_files(root: Path) -> tuple[list[Path], list[SourceError]]:
    """The notes under `root` (hidden folders left out), and those refused (links out of it, special files)."""
    if not root.is_dir():
        return [root], []
    return files.walk(root, "*.md", hidden=False)


def _slug(text: str) -> str:
    return re.sub(r"[\s_]+", "-", text.strip().lower())


class Note:
    def __init__(self, path: Path, root: Path) -> None:
        self.path = path
        try:
            text = files.read(path).decode("utf-8-sig")
        except UnicodeDecodeError:
            raise SourceError(path, "not UTF-8 text") from None
        try:
            self.meta, self.body, _ = split(text.replace("\r\n", "\n"))
        except FrontMatterError as exc:
            raise SourceError(path, f"front matter: {exc}", exc.line) from None
        base = root if root.is_dir() else root.parent
        self.rel = path.relative_to(base).with_suffix("").as_posix()
        title = self.meta.get("title")
        self.title = str(title).strip() if title not in (None, "") else path.stem
        permalink = self.meta.get("permalink")
        self.key = str(permalink).strip() if permalink not in (None, "") else _slug(self.rel)
        kind = self.meta.get("type")
        self.kind = tag_value(kind) if kind not in (None, "") else "note"

    def names(self) -> list[str]:
        """What a `[[link]]` to this note may say."""
        return [n.lower() for n in (self.title, self.key, self.rel, self.path.stem, _slug(self.title))]

    def record(self) -> NodeRecord:
        body = self.body.strip()
        if not re.match(r"#\s", body):
            body = f"# {self.title}\n\n{body}".strip()
        raw_tags = self.meta.get("tags")
        listed = raw_tags if isinstance(raw_tags, list) else str(raw_tags or "").split(",")
        pairs = [("imported", "basic-memory"), ("kind", self.kind)]
        tags = tags_of(*pairs, *(("label", tag) for tag in listed if tag is not None))
        metadata: dict[str, Any] = {"title": self.title, "path": self.rel}
        if self.meta.get("permalink"):
            metadata["permalink"] = self.key
        custom = [
            (key, value)
            for key, value in self.meta.items()
            if key not in STANDARD and _META_KEY.match(key) and _plain(value)
        ]
        metadata.update(custom[:MAX_CUSTOM])
        node_type = self.kind if self.kind in NODE_TYPES else "fact"
        return NodeRecord(self.key, node_type, body, tags[:50], fitted(metadata))

    def links(self) -> list[tuple[str, str]]:
        """(relation name, target as written) for each relation line and each other [[link]] in prose."""
        prose = mask_code(self.body)
        found: list[tuple[str, str]] = []
        spans: set[int] = set()
        for match in _RELATION.finditer(prose):
            found.append((" ".join(match.group(1).split()), match.group(2)))
            spans.add(match.start(2))
        for match in _LINK.finditer(prose):
            if match.start(1) not in spans:
                found.append(("links_to", match.group(1)))
        return [(name, target.split("|", 1)[0].split("#", 1)[0].strip()) for name, target in found]


def _plain(value: Any) -> bool:
    scalars = (str, int, bool)
    return isinstance(value, scalars) or (isinstance(value, list) and all(isinstance(v, scalars) for v in value))


def read_folder(root: Path) -> list[tuple[str, Records | SourceError]]:
    """One entry per note file: its node and the edges it starts, or why it cannot be imported."""
    notes: list[Note] = []
    found, refused = note_files(root)
    results: dict[Path, SourceError] = {Path(error.file): error for error in refused}
    for path in found:
        try:
            notes.append(Note(path, root))
        except SourceError as exc:
            results[path] = exc
    index: dict[str, str] = {}
    for note in notes:
        for name in note.names():
            index.setdefault(name, note.key)
    out: list[tuple[str, Records | SourceError]] = [(str(path), error) for path, error in results.items()]
    for note in notes:
        records = Records(nodes=[note.record()])
        for relation, target in note.links():
            key = index.get(target.lower()) or index.get(_slug(target))
            if key is None:
                records.skipped["link to a note not in the folder"] += 1
                continue
            records.edges.append(EdgeRecord(note.key, key, edge_type_for(relation), (relation,)))
        out.append((str(note.path), records))
    return out
