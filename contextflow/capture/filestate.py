"""Where a claim was made and the state of the files it cites, then and now.

`states(root, paths, machine)`: recorded in each captured turn (`turn.state`): each cited file's git
blob id (what `git hash-object` prints, computed here from its bytes, so a file outside git works the
same), the repository's HEAD commit and branch, its root folder on that machine, and the machine
(writer id) that captured it. `changes(root, recorded, here=...)`: the files whose content here is no
longer the recorded one, each said truly: changed since (and how many commits touched it when HEAD
moved: one hardened `git rev-list` per file, at most MAX_GIT_CALLS), deleted since, written on another
machine and never here, or different in this checkout than in the other checkout it was written in.
`where_notes(recorded, here)`: the claim made on another branch, machine or checkout, said as such.
`qualify(recorded, here)`: both, the notes a claim (a decision, a check's outcome, passing ones too)
is shown with at session start; empty when it still holds as captured.

Everything is read through `core/gitrepo.py`: only regular files inside the repository, no link
followed, no FIFO or device opened, each bounded; a path that is absolute, leaves the repository or
holds a NUL is skipped, whatever machine recorded it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from contextflow.core import gitrepo, hashing

MAX_FILE_BYTES = 8 << 20
MAX_FILES = 40
MAX_GIT_CALLS = 5
MAX_PATH_CHARS = 1_000
GONE = "-"  # the blob of a file that does not exist (deleted, or never written)


def blob_id(data: bytes) -> str:
    return hashing.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _path_ok(path: object) -> bool:
    return (
        isinstance(path, str)
        and 0 < len(path) <= MAX_PATH_CHARS
        and "\0" not in path
        and not os.path.isabs(path)
        and not path.startswith("-")
        and ".." not in path.replace("\\", "/").split("/")
    )


def file_blob(root: str, path: str) -> str | None:
    """The blob id of `path` (relative to `root`), GONE when it does not exist, None when it cannot be
    read safely (outside the repository, through a link, not a regular file, too large, a bad name)."""
    if not _path_ok(path):
        return None
    fd = gitrepo.open_in(root, path.replace(os.sep, "/"))
    if fd is None:
        try:
            os.lstat(os.path.join(root, path))
        except FileNotFoundError:
            return GONE
        except (OSError, ValueError):
            return None
        return None
    with os.fdopen(fd, "rb") as handle:
        try:
            if os.fstat(handle.fileno()).st_size > MAX_FILE_BYTES:
                return None
            data = handle.read(MAX_FILE_BYTES + 1)
        except OSError:
            return None
    return blob_id(data) if len(data) <= MAX_FILE_BYTES else None


class Here:
    """Where a session starts: its repository root, branch, HEAD commit and this machine's writer id."""

    __slots__ = ("branch", "commit", "machine", "repo", "root")

    def __init__(self, root: str | None, machine: str = "") -> None:
        self.root, self.machine = root, machine
        self.repo = gitrepo.open_repo(root) if root else None
        self.branch, self.commit = gitrepo.head(self.repo)


def states(root: str | None, paths: list[str], machine: str = "") -> dict[str, object]:
    """`{"commit": HEAD or "", "branch": its branch or "", "root": root, "machine": machine,
    "files": {path: blob}}` for the readable files among `paths` (empty when none is)."""
    if not root:
        return {}
    files: dict[str, str] = {}
    for path in list(dict.fromkeys(p for p in paths if isinstance(p, str)))[:MAX_FILES]:
        blob = file_blob(root, path)
        if blob is not None:
            files[path] = blob
    if not files:
        return {}
    branch, commit = gitrepo.head(gitrepo.open_repo(root))
    return {"commit": commit or "", "branch": branch or "", "root": root, "machine": machine, "files": files}


# what a changed file is said to be
CHANGED, DELETED, ELSEWHERE, OTHER_CHECKOUT = "changed", "deleted", "elsewhere", "other checkout"


class Change:
    """A file a claim cites whose content here is not the one captured (a plain class: a hook builds
    no NamedTuple or dataclass it can do without). `kind`: CHANGED, DELETED, ELSEWHERE (written on
    another machine, checkout or branch and not here) or OTHER_CHECKOUT (written on another machine or in another
    checkout, different here: not a change made here)."""

    __slots__ = ("commits", "kind", "path", "where")

    def __init__(self, path: str, commits: int | None, deleted: bool = False, kind: str = "", where: str = "") -> None:
        self.path = path
        self.commits = commits  # commits that touched it since; None: unknown (no git, or uncommitted)
        self.kind = kind or (DELETED if deleted else CHANGED)
        self.where = where  # `on machine B`, `in the checkout /path`, `on branch x` (ELSEWHERE, OTHER_CHECKOUT)

    @property
    def deleted(self) -> bool:
        return self.kind == DELETED

    def _key(self) -> tuple[str, int | None, str, str]:
        return (self.path, self.commits, self.kind, self.where)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Change) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Change{self._key()!r}"

    def text(self) -> str:
        if self.kind == ELSEWHERE:
            return f"{self.path} is {self.where}, not here"
        if self.kind == OTHER_CHECKOUT:
            return f"{self.path} differs here from its copy {self.where} (not a change made here)"
        if self.kind == DELETED:
            return f"{self.path} was deleted since"
        if self.commits:
            return f"{self.path} changed since ({self.commits} commit{'s' if self.commits != 1 else ''} later)"
        return f"{self.path} changed since (not committed)"


def _text(recorded: Mapping[str, object], name: str) -> str:
    value = recorded.get(name)
    return value if isinstance(value, str) and len(value) <= MAX_PATH_CHARS and "\0" not in value else ""


def changes(
    root: str | None, recorded: Mapping[str, object], head: str | None = None, here: Here | None = None
) -> list[Change]:
    """The recorded files whose content here differs from the recorded one, each said truly (see
    Change); `here` (default: read from `root`, machine unknown) is where the session starts."""
    files = recorded.get("files") if isinstance(recorded, Mapping) else None
    if not root or not isinstance(files, Mapping):
        return []
    here = here if here is not None and here.root == root else Here(root, here.machine if here else "")
    commit = _text(recorded, "commit")
    now_head = head if head is not None else (here.commit or "")
    machine, where = _text(recorded, "machine"), _text(recorded, "root")
    if machine and here.machine and machine != here.machine:
        elsewhere = f"on machine {machine}"
    elif where and where != root:
        elsewhere = f"in the checkout {where}"
    else:
        elsewhere = ""  # captured here (or recorded before machines and roots were)
    branch = _text(recorded, "branch")
    other_branch = branch if branch and here.branch and branch != here.branch else ""
    found: list[Change] = []
    calls = 0
    for path, blob in list(files.items())[:MAX_FILES]:
        if not _path_ok(path) or not isinstance(blob, str):
            continue
        now = file_blob(root, path)
        if now is None or now == blob:
            continue
        if now == GONE and (elsewhere or other_branch):
            found.append(Change(path, None, kind=ELSEWHERE, where=elsewhere or f"on branch {other_branch}"))
            continue
        count = None
        moved = gitrepo.is_commit_id(commit) and now_head and commit != now_head
        if moved and calls < MAX_GIT_CALLS and here.repo is not None:
            calls += 1
            count = gitrepo.commits_touching(here.repo, commit, path)
        if elsewhere and not count:
            found.append(Change(path, None, kind=OTHER_CHECKOUT, where=elsewhere))
            continue
        found.append(Change(path, count, deleted=now == GONE))
    return found


def where_notes(recorded: Mapping[str, object], here: Here) -> list[str]:
    """Where a claim was made, when that is not here: another branch, machine or checkout."""
    if not isinstance(recorded, Mapping):
        return []
    notes: list[str] = []
    branch, machine, where = _text(recorded, "branch"), _text(recorded, "machine"), _text(recorded, "root")
    if branch and here.branch and branch != here.branch:
        notes.append(f"on {branch}; you are on {here.branch}")
    elif branch and here.repo is not None and not here.branch:
        notes.append(f"on {branch}; you are on a detached HEAD")
    if machine and here.machine and machine != here.machine:
        notes.append(f"on machine {machine}")
    elif where and here.root and where != here.root:
        notes.append(f"in another checkout ({where})")
    return notes


def qualify(recorded: Mapping[str, object], here: Here) -> list[str]:
    """The notes a claim captured with `recorded` (a turn's `state`) is shown with at a session start
    `here`: where it was made when not here (`where_notes`), then each cited file that is not as it was
    (`changes`). Empty: the claim stands as captured. For decisions and checks' outcomes alike: a
    passing check whose files changed since is no longer known to pass."""
    if not isinstance(recorded, Mapping) or not recorded:
        return []
    return [*where_notes(recorded, here), *(change.text() for change in changes(here.root, recorded, here=here))]
