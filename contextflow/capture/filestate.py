"""A file's state when a claim about it was captured, and whether it changed since.

`states(root, paths)`: each file's git blob id (what `git hash-object` prints, computed here
from its bytes, so a file outside git works the same) and the repository's HEAD commit, read from
`.git` without running git. `changes(root, recorded)`: the files whose content is no longer the
recorded one, and how many commits touched each since (one `git rev-list` per changed file, only
when HEAD moved). Only regular files inside the repository are read (no links out of it, no
FIFOs or devices), each up to MAX_FILE_BYTES.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

MAX_FILE_BYTES = 8 << 20
MAX_FILES = 40
MAX_GIT_CALLS = 5
GONE = "-"  # the blob of a file that does not exist (deleted, or never written)


def blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _inside(root: str, path: str) -> str | None:
    full = os.path.realpath(os.path.join(root, path))
    base = os.path.realpath(root)
    return full if full == base or full.startswith(base + os.sep) else None


def file_blob(root: str, path: str) -> str | None:
    """The blob id of `path` (relative to `root`), GONE when it does not exist, None when it cannot be
    read safely (outside the repository, not a regular file, too large)."""
    full = _inside(root, path)
    if full is None:
        return None
    try:
        info = os.stat(full)
    except FileNotFoundError:
        return GONE
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
        return None
    try:
        fd = os.open(full, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        return blob_id(handle.read(MAX_FILE_BYTES + 1))


def _git_dir(root: str) -> Path | None:
    dot = Path(root) / ".git"
    if dot.is_dir():
        return dot
    try:
        text = dot.read_text(encoding="utf-8", errors="replace")[:4096] if dot.is_file() else ""
    except OSError:
        return None
    if text.startswith("gitdir:"):
        found = Path(text[7:].strip())
        return found if found.is_absolute() else (Path(root) / found)
    return None


def head_commit(root: str) -> str | None:
    """HEAD's commit id, read from the repository's files (loose ref, packed-refs, worktrees)."""
    git = _git_dir(root)
    if git is None:
        return None
    try:
        head = (git / "HEAD").read_text(encoding="utf-8", errors="replace")[:4096].strip()
        if not head.startswith("ref:"):
            return head if len(head) == 40 else None
        ref = head[4:].strip()
        common = git
        if (git / "commondir").is_file():
            common = (git / (git / "commondir").read_text().strip()).resolve()
        for folder in (git, common):
            loose = folder / ref
            if loose.is_file():
                return loose.read_text(encoding="utf-8", errors="replace")[:64].strip() or None
        packed = common / "packed-refs"
        if packed.is_file():
            for line in packed.read_text(encoding="utf-8", errors="replace").splitlines():
                if line.endswith(" " + ref):
                    return line.split(" ", 1)[0]
    except OSError:
        return None
    return None


def states(root: str | None, paths: list[str]) -> dict[str, object]:
    """`{"commit": HEAD or "", "files": {path: blob}}` for the readable files among `paths`."""
    if not root:
        return {}
    files: dict[str, str] = {}
    for path in list(dict.fromkeys(paths))[:MAX_FILES]:
        if not isinstance(path, str) or os.path.isabs(path) or path.startswith(".."):
            continue
        blob = file_blob(root, path)
        if blob is not None:
            files[path] = blob
    if not files:
        return {}
    return {"commit": head_commit(root) or "", "files": files}


class Change:
    """A file a claim cites whose content is no longer the one captured (a plain class: a hook
    builds no NamedTuple or dataclass it can do without)."""

    __slots__ = ("commits", "deleted", "path")

    def __init__(self, path: str, commits: int | None, deleted: bool = False) -> None:
        self.path = path
        self.commits = commits  # commits that touched it since; None: unknown (no git, or uncommitted)
        self.deleted = deleted

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Change) and (self.path, self.commits, self.deleted) == (
            other.path,
            other.commits,
            other.deleted,
        )

    def __hash__(self) -> int:
        return hash((self.path, self.commits, self.deleted))

    def text(self) -> str:
        if self.deleted:
            return f"{self.path} was deleted since"
        if self.commits:
            return f"{self.path} changed since ({self.commits} commit{'s' if self.commits != 1 else ''} later)"
        return f"{self.path} changed since (not committed)"


def changes(root: str | None, recorded: dict[str, object], head: str | None = None) -> list[Change]:
    """The recorded files whose content differs now, each with the commits that touched it since."""
    files = recorded.get("files") if isinstance(recorded, dict) else None
    if not root or not isinstance(files, dict):
        return []
    commit = recorded.get("commit") if isinstance(recorded.get("commit"), str) else ""
    head = head if head is not None else (head_commit(root) or "")
    found: list[Change] = []
    calls = 0
    for path, blob in list(files.items())[:MAX_FILES]:
        if not isinstance(path, str) or not isinstance(blob, str):
            continue
        now = file_blob(root, path)
        if now is None or now == blob:
            continue
        count = None
        if commit and head and commit != head and calls < MAX_GIT_CALLS:
            calls += 1
            count = commits_since(root, str(commit), path)
        found.append(Change(path, count, deleted=now == GONE))
    return found


def commits_since(root: str, commit: str, path: str) -> int | None:
    if not all(c in "0123456789abcdef" for c in commit) or path.startswith("-"):
        return None
    import subprocess  # only when a file changed while HEAD moved: a session start rarely pays for it

    try:
        done = subprocess.run(
            ["git", "rev-list", "--count", f"{commit}..HEAD", "--", path],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=2,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return int(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip().isdigit() else None
