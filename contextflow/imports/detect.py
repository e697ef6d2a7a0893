"""Which format a path holds, judged from its content (`--from` names one instead).

A folder: `.beads/issues.jsonl` in it is beads; Claude Code transcripts (`sessionId` lines) or Codex
rollouts (`rollout-*.jsonl`, a `session_meta` first line) are those; Markdown notes are basic-memory.
A file: its first line as JSON tells JSON Lines apart (`"type": "entity"|"relation"` is server-memory,
an issue with `id`, `title` and `status` is beads, a transcript line is Claude Code or Codex); a whole
JSON document is contextflow's own export (`"format": "contextflow-graph"`) or claude-mem's
(`"observations"` with `"exportedAt"`); front matter or a `.md` name is a basic-memory note.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from contextflow.core import jsonio
from contextflow.core.errors import InputError
from contextflow.graph.transfer import FORMAT as CONTEXTFLOW_FORMAT
from contextflow.imports import basicmemory, claudemem, files, jsondoc, transcripts
from contextflow.imports.model import MAX_SOURCE_LINE, SourceError

FORMATS = ("contextflow", "server-memory", "beads", "basic-memory", "claude-mem", "claude-code", "codex")
EXPECTED = (
    "contextflow's own export, a server-memory memory.json, beads' .beads/issues.jsonl, a basic-memory folder "
    "of notes, a claude-mem export, or Claude Code transcripts or Codex rollouts (a file or a folder of them; "
    "--from names the format)"
)


def detect_folder(path: Path) -> str:
    if (path / ".beads" / "issues.jsonl").is_file() or (path.name == ".beads" and (path / "issues.jsonl").is_file()):
        return "beads"
    if fmt := transcripts.detect_folder(path):
        return fmt
    if any(basicmemory.note_files(path)):
        return "basic-memory"
    raise InputError(f"{path} holds nothing contextflow can import; expected {EXPECTED}")


def detect_file(path: Path) -> str:
    """The format of a file, from its first line (read up to a bound) or, for a whole JSON document, its
    top-level members read a piece at a time: a large file is never read whole to be recognised."""
    with files.opened(path) as handle:
        head = handle.readline(MAX_SOURCE_LINE)
        while head and not head.strip() and head.endswith(b"\n"):  # blank lines before the first
            head = handle.readline(MAX_SOURCE_LINE)
        whole = not handle.read(1)
    if whole:
        return detect_bytes(str(path), head)
    return _detect(str(path), head, lambda: _document(str(path), path))


def first_line_format(label: str, head: bytes) -> str | None:
    """The format `head`, a file's first line, tells on its own (JSON Lines formats), or None."""
    try:
        return _detect(label, head, lambda: None)
    except InputError:
        return None


def detect_bytes(label: str, raw: bytes) -> str:
    return _detect(label, raw, lambda: _whole_document(raw))


def _document(label: str, path: Path) -> str | None:
    """contextflow's export or claude-mem's, told by the document's top-level members (read as needed)."""
    markers = observations = False
    with files.opened(path) as handle:
        for event, key, value in jsondoc.members(handle, label):
            if event == "value" and key == "format" and value == CONTEXTFLOW_FORMAT:
                return "contextflow"
            markers = markers or (key in ("exportedAt", "totalObservations", "summaries") and event != "item")
            observations = observations or (key == "observations" and event == "array")
            if markers and observations:
                return "claude-mem"
    return None


def _whole_document(raw: bytes) -> str | None:
    try:
        doc = jsonio.loads(raw)
    except jsonio.DecodeError as exc:
        raise SourceError("", f"not valid JSON ({exc.msg})", exc.lineno) from None
    if isinstance(doc, dict) and doc.get("format") == CONTEXTFLOW_FORMAT:
        return "contextflow"
    return "claude-mem" if claudemem.looks_like(doc) else None


def _detect(label: str, raw: bytes, document: Callable[[], str | None]) -> str:
    """The format, from the first line of `raw`, else from the whole `document`."""
    text = raw.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text:
        raise InputError(f"{label} is empty: there is nothing to import")
    if text.startswith(b"---") or label.endswith(".md"):
        return "basic-memory"
    first = text.split(b"\n", 1)[0]
    try:
        line = jsonio.loads(first)
    except jsonio.DecodeError:
        line = None
    if isinstance(line, dict):
        if line.get("type") in ("entity", "relation"):
            return "server-memory"
        if fmt := transcripts.looks_like(line):
            return fmt
        if isinstance(line.get("id"), str) and "title" in line and ("status" in line or "issue_type" in line):
            return "beads"
        if line.get("_type") in ("issue", "memory"):  # `bd export --include-memories` marks its records
            return "beads"
    found = None
    if text[:1] == b"{" or line is None:
        try:
            found = document()
        except SourceError as exc:
            if line is None and text[:1] in (b"{", b"["):  # meant as JSON, and it is not
                raise SourceError(label, exc.problem, exc.line) from None
    if found:
        return found
    raise InputError(f"cannot tell what {label} holds; expected {EXPECTED}")
