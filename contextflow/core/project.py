"""Projects: which project an event belongs to, the default project name, and the project a
working folder belongs to (`project_for`).

The project follows the repository, by the first rule that applies (each rule's name is what
`doctor` and `start-preview` say chose it):
- RULE_REMOTE: the git remote of the folder's repository (`origin`, else the first remote) that
  names a host, normalised to `owner/repo` (GitLab's nested groups keep their whole path) and
  compared without case, so every clone on every machine names the same project. A local-path
  remote (`/srv/git/app.git`, `file://`) names only a folder on one machine: it counts as no remote.
- RULE_ROOT_COMMIT: a repository without such a remote is `repo@<first 12 hex of its root
  commit>`: two unrelated repositories never share a root commit and every clone of one does,
  whatever its folder is called (so no folder name is part of it). The root commit is found once
  per repository per machine (one hardened `git rev-list`, `core/gitrepo.py`) and cached in the
  state folder (`repos/`, derived state, safe to delete).
- RULE_REPO_PATH: a repository with no commit yet is its absolute path on this machine.
- RULE_PATH: a plain folder (no repository) is its own project: its absolute path on this machine.
- RULE_DEFAULT: no folder given at all (`shared`). `MCP_SHARED_CONTEXT_PROJECT` and a `project`
  argument win over all of it (RULE_ENV, `settings_for`).

Stores written before these rules named a repository without a remote after its folder (and a plain
folder `shared`): `former_project` says that name, and `recorded_in` tells whether an event of it was
recorded in this repository (`capture/filestate.py` records each turn's repository root), so such
events are still found by their repository (`former_events`).

Everything read is untrusted (`core/gitrepo.py`): a file too large, a name holding a control
character or an unreadable path falls back to the next rule.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from contextflow.core import gitrepo, hashing, regexes
from contextflow.core.errors import InputError
from contextflow.core.gitrepo import MAX_CONFIG_BYTES as MAX_CONFIG_BYTES
from contextflow.core.settings import Settings, clean_name, read

if TYPE_CHECKING:
    from contextflow.core.events import Event

DEFAULT_PROJECT = "shared"

# the rule that chose a project, as `doctor` and the info resource say it
RULE_ENV = "env:MCP_SHARED_CONTEXT_PROJECT"
RULE_REMOTE = "git remote"
RULE_ROOT_COMMIT = "git root commit (no remote)"
RULE_REPO_PATH = "repository path (no commit yet)"
RULE_PATH = "folder path (no repository)"
RULE_DEFAULT = "default"

ROOT_HEX = 12  # hex digits of the root commit in a project name
ROOT_PREFIX = "repo@"  # a repository without a remote: repo@<root commit>
UNKNOWN = "unknown-at"  # the cache's answer when git could not tell, with the HEAD it was asked at
_SECTION = regexes.compile(r'^\s*\[\s*remote\s+"((?:[^"\\]|\\.)*)"\s*\]')
_ANY_SECTION = regexes.compile(r"^\s*\[")
_URL = regexes.compile(r"^\s*url\s*=\s*(.*?)\s*$", re.I)
_SCP = regexes.compile(r"^(?:[^@/\s]+@)?[^/:\s]+:(?!//)(.+)$")  # git@host:owner/repo.git


def project_of(event: Event) -> str:
    """The event's `project` field, trimmed, else the default project."""
    value = event.data.get("project")
    return value.strip() if isinstance(value, str) and value.strip() else DEFAULT_PROJECT


def normalise_remote(url: str) -> str | None:
    """A remote URL as `owner/repo` (every path segment, lower case, without `.git`), or None.

    https://github.com/Owner/Repo.git       -> owner/repo
    git@github.com:owner/repo.git           -> owner/repo
    ssh://git@host:22/group/sub/repo.git/   -> group/sub/repo
    /srv/git/repo.git, file:///srv/repo     -> None (a local path names no repository on another machine)
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
    return None if local else clean_name("/".join(parts).lower())


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


def local_remote_name(url: str) -> str | None:
    """The last folder of a local-path remote (`/srv/git/app.git` -> `app`), else None."""
    text = url.strip()
    local = text.lower().startswith("file://") or text.startswith(("/", ".", "~")) or re.match(r"^[A-Za-z]:[\\/]", text)
    if not local or len(text) > 2_000:
        return None
    parts = [part for part in re.split(r"[\\/]", text) if part not in ("", ".", "..")]
    name = parts[-1][:-4] if parts and parts[-1].lower().endswith(".git") else (parts[-1] if parts else "")
    return clean_name(name) if name else None


def path_project(path: str) -> str:
    """A folder's absolute path as a project name (a path too long or strange to be one: its last
    folder and a hash of the path)."""
    named = clean_name(path)
    if named:
        return named
    tail = clean_name(os.path.basename(path)[:100]) or "folder"
    return f"{tail}@{hashing.sha256(path.encode('utf-8', 'surrogateescape')).hexdigest()[:ROOT_HEX]}"


def _cache_file(common_dir: str, env: Mapping[str, str] | None) -> tuple[str, str] | None:
    """(folder, name) of the cached root commit of the repository whose common git folder is `common_dir`."""
    from contextflow.core import locate

    try:
        root = locate.checked_state_root(env)
        folder = locate.private_folder(root / "repos", "the state folder")
    except (InputError, OSError):
        return None
    key = hashing.sha256(common_dir.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return str(folder), key


def cached_root_commit(repo: gitrepo.Repo, env: Mapping[str, str] | None = None) -> str | None:
    """The repository's root commit: from the state folder's cache, else found (`gitrepo.root_commit`)
    and cached (0600). None while it has no commit, or when git cannot tell (not found, failed, a
    history too long to walk within its timeout): that answer is cached too, for the HEAD it was
    asked at, so a hook pays for a failed run once per HEAD, not on every prompt."""
    if repo.common_dir is None:
        return None
    head = gitrepo.head(repo)[1]
    if head is None:
        return None  # no commit yet: nothing to find, nothing to cache
    where = _cache_file(repo.common_dir, env)
    if where is not None:
        cached = gitrepo.read_in(where[0], where[1], 200)
        text = cached.decode("ascii", "replace").strip() if cached is not None else ""
        if gitrepo.is_commit_id(text):
            return text
        if text == f"{UNKNOWN} {head}":
            return None
    found = gitrepo.root_commit(repo)
    if where is not None:
        _write_private(os.path.join(*where), found or f"{UNKNOWN} {head}")
    return found


def _write_private(path: str, text: str) -> None:
    temp = f"{path}.{os.getpid()}.tmp"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(text + "\n")
        os.replace(temp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temp)


def _start(cwd: str | os.PathLike[str] | None) -> str | None:
    try:
        return os.path.abspath(cwd if cwd is not None else os.getcwd())
    except (OSError, ValueError):
        return None


def project_for(cwd: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(project, rule) for the working folder `cwd` (default: the process's, os.getcwd()); `env`
    locates the state folder holding the root-commit cache (default: os.environ)."""
    start = _start(cwd)
    if start is None or "\0" in start:
        return DEFAULT_PROJECT, RULE_DEFAULT
    repo = gitrepo.open_repo(start)
    if repo is None:
        return path_project(start), RULE_PATH
    url = remote_url(gitrepo.config_text(repo)) if repo.common_dir else None
    name = normalise_remote(url) if url else None
    if name:
        return name, RULE_REMOTE
    main = repo.main_root()
    root = cached_root_commit(repo, env)
    if root is None:
        return path_project(main), RULE_REPO_PATH
    return f"{ROOT_PREFIX}{root[:ROOT_HEX]}", RULE_ROOT_COMMIT


def settings_for(
    state_dir: Path,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    legacy_active_file: Path | None = None,
) -> Settings:
    """The settings of `env`, checked, and completed with what needs the store. `cwd` is the working
    folder whose repository names the default project (the adapters pass it: the server's and the
    CLI's own folder, a hook's payload `cwd`); without it, and without MCP_SHARED_CONTEXT_PROJECT,
    the project is `shared`. `legacy_active_file`: ContextFlowMCP's active-session file when its
    context file is in use (it then holds the active session, as for ContextFlowMCP and its picker)."""
    settings = read(env)
    settings.refuse()
    if settings.named_project:
        project, rule = settings.named_project, RULE_ENV
    else:
        project, rule = project_for(cwd, env) if cwd is not None else (DEFAULT_PROJECT, RULE_DEFAULT)
    named = settings.active_session_path
    active_file = Path(os.path.expanduser(named)).absolute() if named else None
    fallback = legacy_active_file or state_dir / "active-session.txt"
    return settings._replace(default_project=project, project_rule=rule, active_session_file=active_file or fallback)


def repository_root(start: os.PathLike[str] | str) -> str | None:
    """The nearest folder at or above `start` that holds a `.git` folder or file (`gitrepo.repository_root`)."""
    return gitrepo.repository_root(start)


def former_project(cwd: str | os.PathLike[str] | None) -> str | None:
    """The name the rules before root commits gave this folder's project when these rules give it
    another: a repository without a host remote was named after its main folder. None otherwise
    (a remote's name did not change; a plain folder was `shared`, which stays every repository's)."""
    start = _start(cwd)
    repo = gitrepo.open_repo(start) if start and "\0" not in start else None
    if repo is None:
        return None
    url = remote_url(gitrepo.config_text(repo)) if repo.common_dir else None
    if url and normalise_remote(url):
        return None
    return (local_remote_name(url) if url else None) or clean_name(os.path.basename(repo.main_root()))


def recorded_in(data: Mapping[str, object], root: str) -> bool:
    """Whether an event's payload was recorded in the repository at `root`: a captured turn's state
    names its repository root (`filestate.states`, since root commits name projects), or the payload
    names its working folder (`cwd`, `root`); for turns captured before, the client's transcript path
    says it: Claude Code keeps a session's transcript in a folder named after its working folder
    (every character but letters and digits a `-`), Gemini CLI under the SHA-256 of its project root."""
    turn = data.get("turn")
    state = turn.get("state") if isinstance(turn, Mapping) else None
    places = [state.get("root") if isinstance(state, Mapping) else None, data.get("cwd"), data.get("root")]
    base = root.rstrip(os.sep) or os.sep
    if any(isinstance(p, str) and (p == base or p.startswith(base.rstrip(os.sep) + os.sep)) for p in places):
        return True
    transcript = data.get("transcript")
    if not isinstance(transcript, str) or len(transcript) > 4_096:
        return False
    folders = transcript.replace("\\", "/").split("/")
    encoded = re.sub(r"[^A-Za-z0-9]", "-", base)
    digest = hashing.sha256(base.encode("utf-8", "surrogateescape")).hexdigest()
    for index, folder in enumerate(folders[:-1]):
        parent = folders[index - 1] if index else ""
        if parent == "projects" and (folder == encoded or folder.startswith(encoded + "-")):
            return True  # ~/.claude/projects/<working folder>/<session>.jsonl
        if parent == "tmp" and folder == digest:
            return True  # ~/.gemini/tmp/<sha256 of the project root>/chats/...
    return False
