"""Which format a path holds, judged from its content (`--from` names one instead).

A folder: `.beads/issues.jsonl` in it is beads; Claude Code transcripts (`sessionId` lines) or Codex
rollouts (`rollout-*.jsonl`, a `session_meta` first line) are those; Markdown notes are basic-memory.
A file: its first line as JSON tells JSON Lines apart (`"type": "entity"|"relation"` is server-memory,
an issue with `id`, `title` and `status` is beads, a transcript line is Claude Code or Codex); a whole
JSON document is contextflow's own export (`"format": "contextflow-graph"`) or claude-mem's
(`"observations"` with `"exportedAt"`); front matter or a `.md` name is a basic-memory note.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from contextflow.core.errors import InputError
from contextflow.graph.transfer import FORMAT as CONTEXTFLOW_FORMAT
from contextflow.imports import basicmemory, claudemem, transcripts
from contextflow.imports.model import SourceError

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


def detect_bytes(label: str, raw: bytes) -> str:
    text = raw.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text:
        raise InputError(f"{label} is empty: there is nothing to import")
    if text.startswith(b"---") or label.endswith(".md"):
        return "basic-memory"
    first = text.split(b"\n", 1)[0]
    try:
        line = orjson.loads(first)
    except orjson.JSONDecodeError:
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
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if line is None and text[:1] in (b"{", b"["):  # meant as JSON, and it is not
            raise SourceError(label, f"not valid JSON ({exc.msg})", exc.lineno) from None
        doc = None
    if isinstance(doc, dict) and doc.get("format") == CONTEXTFLOW_FORMAT:
        return "contextflow"
    if claudemem.looks_like(doc):
        return "claude-mem"
    raise InputError(f"cannot tell what {label} holds; expected {EXPECTED}")
