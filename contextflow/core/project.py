"""Projects: which project an event belongs to, the default project name, and the project a
working folder belongs to (`project_for`).

The project follows the repository: the git remote of the folder's repository (`origin`, else
the first remote), normalised to `owner/repo` (GitLab's nested groups keep their whole path,
`group/sub/repo`) and compared without case, so every clone on every machine names the same
project; else the repository root folder's name; else `shared`. `MCP_SHARED_CONTEXT_PROJECT`
and a `project` argument win over all of it (`Settings.from_env`).

Nothing here runs `git`: a hook runs on every prompt, and a process costs more than reading
`.git/config`. Everything read is untrusted: a file too large, a name holding a control
character or an unreadable path falls back to the next rule.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from contextflow.core.errors import InputError

if TYPE_CHECKING:
    from contextflow.core.events import Event

DEFAULT_PROJECT = "shared"

# the rule that chose a project, as `doctor` and the info resource say it
RULE_ENV = "env:MCP_SHARED_CONTEXT_PROJECT"
RULE_REMOTE = "git remote"
RULE_FOLDER = "repository folder"
RULE_DEFAULT = "default"

MAX_PROJECT_CHARS = 200
MAX_CONFIG_BYTES = 256 * 1024  # a git config larger than this is not read past this point
MAX_DEPTH = 128  # folders walked up from the working folder
_SECTION = re.compile(r'^\s*\[\s*remote\s+"((?:[^"\\]|\\.)*)"\s*\]')
_ANY_SECTION = re.compile(r"^\s*\[")
_URL = re.compile(r"^\s*url\s*=\s*(.*?)\s*$", re.I)
_SCP = re.compile(r"^(?:[^@/\s]+@)?[^/:\s]+:(?!//)(.+)$")  # git@host:owner/repo.git


def project_of(event: Event) -> str:
    """The event's `project` field, trimmed, else the default project."""
    value = event.data.get("project")
    return value.strip() if isinstance(value, str) and value.strip() else DEFAULT_PROJECT


def clean_name(value: str) -> str | None:
    """`value` as a project name when it is one (checks.name: no control or format character,
    at most MAX_PROJECT_CHARS), else None."""
    from contextflow.core import checks

    try:
        return checks.name(value, "project", MAX_PROJECT_CHARS)
    except InputError:
        return None


def normalise_remote(url: str) -> str | None:
    """A remote URL as `owner/repo` (every path segment, lower case, without `.git`), or None.

    https://github.com/Owner/Repo.git       -> owner/repo
    git@github.com:owner/repo.git           -> owner/repo
    ssh://git@host:22/group/sub/repo.git/   -> group/sub/repo
    /srv/git/repo.git, file:///srv/repo     -> repo (a local path names only its folder)
    """
    text = url.strip()
    if not text or len(text) > 2_000:
        return None
    local = False
    if "://" in text:
        scheme, _, rest = text.partition("://")
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", scheme):
            return None
        local = scheme.lower() == "file"
        path = rest if local else rest.partition("/")[2]  # the host (with any user:password@) goes
    elif text.startswith(("/", ".", "~")) or re.match(r"^[A-Za-z]:[\\/]", text):
        local, path = True, text
    else:
        match = _SCP.match(text)
        if match is None:
            return None
        path = match.group(1)
    path = re.split(r"[?#]", path, maxsplit=1)[0].replace("\\", "/")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if parts and parts[-1].lower().endswith(".git"):
        parts[-1] = parts[-1][:-4]
    parts = [part for part in parts if part]
    if parts and parts[0].startswith("~"):  # ssh://host/~user/repo: the user's folder on that host
        parts[0] = parts[0][1:] or ""
        parts = [part for part in parts if part]
    if not parts or ".." in parts:
        return None
    chosen = parts[-1:] if local else parts
    return clean_name("/".join(chosen).lower())


def _read_bounded(path: Path, limit: int) -> str:
    with open(path, "rb") as handle:
        return handle.read(limit).decode("utf-8", "replace")


def remote_url(config_text: str) -> str | None:
    """The URL of remote `origin` in a git config's text, else of the first remote with one."""
    urls: dict[str, str] = {}
    current: str | None = None
    for line in config_text.splitlines():
        section = _SECTION.match(line)
        if section:
            current = section.group(1)
            continue
        if _ANY_SECTION.match(line):
            current = None
            continue
        found = _URL.match(line)
        if found and current is not None and current not in urls:
            urls[current] = found.group(1).strip().strip('"')
    if "origin" in urls:
        return urls["origin"]
    return next(iter(urls.values()), None)


def _git_dir(dot_git: Path) -> Path | None:
    """The git folder a `.git` names: itself, or the `gitdir:` a worktree or submodule's file points at."""
    if dot_git.is_dir():
        return dot_git
    first = _read_bounded(dot_git, 4_096).splitlines()[:1]
    if not first or not first[0].startswith("gitdir:"):
        return None
    target = Path(first[0][len("gitdir:") :].strip())
    return target if target.is_absolute() else dot_git.parent / target


def _config_of(git_dir: Path) -> Path:
    """A linked worktree keeps its remotes in the main repository's config (`commondir`)."""
    try:
        common = _read_bounded(git_dir / "commondir", 4_096).strip()
    except OSError:
        return git_dir / "config"
    base = Path(common)
    return (base if base.is_absolute() else git_dir / base) / "config"


def _main_folder(git_dir: Path) -> Path | None:
    """The main working folder of a linked worktree's repository (`commondir` is its `.git`)."""
    try:
        common = Path(_read_bounded(git_dir / "commondir", 4_096).strip())
    except OSError:
        return None
    common = common if common.is_absolute() else git_dir / common
    resolved = Path(os.path.normpath(common))
    return resolved.parent if resolved.name == ".git" else None


def repository_root(start: Path) -> Path | None:
    """The nearest folder at or above `start` that holds a `.git` folder or file."""
    for depth, folder in enumerate((start, *start.parents)):
        if depth >= MAX_DEPTH:
            return None
        try:
            if (folder / ".git").exists():
                return folder
        except OSError:
            return None
    return None


def project_for(cwd: str | os.PathLike[str] | None = None) -> tuple[str, str]:
    """(project, rule) for the working folder `cwd` (default: the process's, os.getcwd())."""
    try:
        start = Path(os.path.abspath(cwd if cwd is not None else os.getcwd()))
    except (OSError, ValueError):
        return DEFAULT_PROJECT, RULE_DEFAULT
    root = repository_root(start)
    if root is None:
        return DEFAULT_PROJECT, RULE_DEFAULT
    git_dir: Path | None = None
    try:
        git_dir = _git_dir(root / ".git")
        url = remote_url(_read_bounded(_config_of(git_dir), MAX_CONFIG_BYTES)) if git_dir else None
    except (OSError, ValueError):
        url = None
    name = normalise_remote(url) if url else None
    if name:
        return name, RULE_REMOTE
    main = _main_folder(git_dir) if git_dir else None  # a linked worktree is its repository's
    folder_name = (main or root).name
    folder = clean_name(folder_name) if folder_name else None
    if folder:
        return folder, RULE_FOLDER
    return DEFAULT_PROJECT, RULE_DEFAULT
