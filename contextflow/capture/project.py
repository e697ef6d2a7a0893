"""The project a captured session belongs to: its repository.

`project_for(cwd)`: the git remote `origin` (else the first remote) of the repository holding
`cwd`, normalised to `owner/repo`; else the repository root's folder name; else `shared`.
Read from `.git/config` directly: no `git` process in a hook.
"""

from __future__ import annotations

import os
import re

from contextflow.core.project import DEFAULT_PROJECT

_REMOTE = re.compile(r'^\s*\[remote\s+"([^"]+)"\]\s*$')
_URL = re.compile(r"^\s*url\s*=\s*(\S+)\s*$")


def repo_root(cwd: str) -> str | None:
    """The nearest folder at or above `cwd` that holds `.git` (a folder or a worktree file)."""
    folder = os.path.abspath(cwd)
    while True:
        if os.path.exists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _git_config(root: str) -> str | None:
    git = os.path.join(root, ".git")
    if os.path.isfile(git):  # a worktree or submodule: `gitdir: <path>`
        try:
            with open(git, encoding="utf-8") as handle:
                target = handle.read().strip().removeprefix("gitdir:").strip()
        except OSError:
            return None
        git = os.path.join(root, target)
        common = os.path.join(git, "commondir")
        if os.path.isfile(common):
            with open(common, encoding="utf-8") as handle:
                git = os.path.join(git, handle.read().strip())
    path = os.path.join(git, "config")
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def normalise_remote(url: str) -> str | None:
    """`owner/repo` of a remote URL (https, ssh, scp-like), without `.git`; None when unclear."""
    url = url.strip().rstrip("/").removesuffix(".git")
    match = re.match(r"^(?:[a-z+]+://)?(?:[^@/]+@)?[^/:]+[:/](.+)$", url)
    if not match:
        return None
    parts = [part for part in match.group(1).split("/") if part]
    return "/".join(parts[-2:]).lower() if len(parts) >= 2 else None


def project_for(cwd: str | None) -> str:
    root = repo_root(cwd) if cwd else None
    if root is None:
        return DEFAULT_PROJECT
    urls: dict[str, str] = {}
    remote = None
    for line in (_git_config(root) or "").splitlines():
        if found := _REMOTE.match(line):
            remote = found.group(1)
        elif remote and (found := _URL.match(line)):
            urls.setdefault(remote, found.group(1))
        elif line.lstrip().startswith("["):
            remote = None
    url = urls.get("origin") or next(iter(urls.values()), None)
    normalised = normalise_remote(url) if url else None
    return normalised or os.path.basename(root) or DEFAULT_PROJECT
