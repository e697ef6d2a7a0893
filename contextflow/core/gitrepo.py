"""Reading a repository without trusting it: its `.git` files, its refs and the files a claim cites.

Contract (everything here is untrusted input, and a hook calls it on every prompt):
- Only regular files are read, each opened `O_NONBLOCK|O_NOFOLLOW` one path component at a time
  from a folder of the repository (the working folder, its git folder, the common git folder a
  linked worktree names), so no symbolic link is followed, no FIFO or device blocks, and no
  `..` leaves the folder. Each read is bounded in bytes: `packed-refs` is scanned in chunks up to
  MAX_PACKED_BYTES, every other file up to its own cap.
- A ref is read only under `refs/` with a name git itself accepts (no `..`, NUL, control character,
  `\\`, `:` or component starting with `.`); a commit id is 40 or 64 lower-case hex or nothing.
- git runs only here (`run_git`), and only when a caller asks for history: a repository's root
  commit (once per repository per machine, cached by `core/project.py`) and the commits that touched
  a changed file (`capture/filestate.py`, at session start, when HEAD moved). Each run is the `git`
  found at an absolute `PATH` entry, with no system or global configuration, no pager, no prompts,
  `core.fsmonitor` off, `GIT_OPTIONAL_LOCKS=0`, no replace objects, stdin closed, a timeout and
  bounded output; and only after HEAD was read here as a commit id (a `.git` whose HEAD is not one
  never starts git).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from contextflow.core import regexes

MAX_DEPTH = 128  # folders walked up from the working folder
MAX_SMALL_BYTES = 4_096  # HEAD, commondir, a `gitdir:` file, a loose ref
MAX_CONFIG_BYTES = 256 * 1024
PACKED_CHUNK = 64 * 1024
MAX_PACKED_BYTES = 8 << 20  # packed-refs past this are not read (the ref is then unknown)
MAX_REF_CHARS = 1_000
MAX_SYMREF_DEPTH = 5
GIT_TIMEOUT = 3.0
MAX_GIT_OUTPUT = 64 * 1024
_COMMIT = regexes.compile(r"(?:[0-9a-f]{40}|[0-9a-f]{64})")
_BAD_REF = regexes.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|/\.|//|\.lock(?:/|$)|/$|\.$")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CONFINED = os.open in os.supports_dir_fd and bool(_NOFOLLOW)


def is_commit_id(text: object) -> bool:
    """Whether `text` is a commit id (40 or 64 lower-case hex characters)."""
    return isinstance(text, str) and _COMMIT.fullmatch(text) is not None


def valid_ref(name: object) -> bool:
    """Whether `name` is a ref this module reads: under `refs/`, and a name git accepts."""
    return (
        isinstance(name, str)
        and name.startswith("refs/")
        and len(name) <= MAX_REF_CHARS
        and _BAD_REF.search(name) is None
        and not name.endswith("/")
    )


def _parts(relative: str) -> list[str] | None:
    if not relative or "\0" in relative or os.path.isabs(relative) or "\\" in relative:
        return None
    parts = relative.split("/")
    return None if any(part in ("", ".", "..") for part in parts) else parts


def open_in(base: str, relative: str) -> int | None:
    """A descriptor of the regular file `relative` (`/`-separated) inside the folder `base`, opened
    without following any link below `base` and without blocking; None for anything else."""
    parts = _parts(relative)
    if parts is None:
        return None
    flags = os.O_RDONLY | _NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        if _CONFINED:
            folder = os.open(base, flags | _DIRECTORY)
            try:
                for part in parts[:-1]:
                    inner = os.open(part, flags | _DIRECTORY | _NOFOLLOW, dir_fd=folder)
                    os.close(folder)
                    folder = inner
                fd = os.open(parts[-1], flags | _NOFOLLOW, dir_fd=folder)
            finally:
                os.close(folder)
        else:  # no dir_fd (Windows): no link anywhere below `base`, checked before the open
            full = os.path.join(base, *parts)
            real_base = os.path.realpath(base)
            if os.path.realpath(full) != os.path.join(real_base, *parts):
                return None
            fd = os.open(full, flags | _NOFOLLOW)
    except (OSError, ValueError):
        return None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def read_in(base: str, relative: str, limit: int) -> bytes | None:
    """Up to `limit` bytes of the regular file `relative` inside `base` (see `open_in`), else None."""
    fd = open_in(base, relative)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as handle:
        try:
            return handle.read(limit)
        except OSError:
            return None


def _text(data: bytes | None) -> str | None:
    return data.decode("utf-8", "replace") if data is not None else None


def _folder(path: str) -> str | None:
    """`path` resolved, when it is a folder (a `gitdir:` or `commondir` target), else None."""
    if not path or "\0" in path or len(path) > MAX_SMALL_BYTES:
        return None
    try:
        resolved = os.path.realpath(path)
        return resolved if stat.S_ISDIR(os.stat(resolved).st_mode) else None
    except (OSError, ValueError):
        return None


class Repo:
    """A repository found from a working folder: `root` (the folder holding `.git`), `git_dir` (its git
    folder, None when `.git` cannot be read as one) and `common_dir` (where refs, packed-refs, config and
    objects live: a linked worktree's main git folder, else `git_dir`)."""

    __slots__ = ("common_dir", "git_dir", "root")

    def __init__(self, root: str, git_dir: str | None, common_dir: str | None) -> None:
        self.root, self.git_dir, self.common_dir = root, git_dir, common_dir

    def main_root(self) -> str:
        """The main working folder of the repository (a linked worktree's is its main checkout's)."""
        common = self.common_dir
        if common and self.git_dir and common != self.git_dir and os.path.basename(common) == ".git":
            return os.path.dirname(common)
        return self.root


def repository_root(start: str | os.PathLike[str]) -> str | None:
    """The nearest folder at or above `start` holding a `.git` folder or regular file (not followed
    when it is a link, never opened when it is anything else)."""
    try:
        folder = Path(os.path.abspath(start))
    except (OSError, ValueError):
        return None
    for depth, current in enumerate((folder, *folder.parents)):
        if depth >= MAX_DEPTH:
            return None
        try:
            mode = os.lstat(current / ".git").st_mode
        except FileNotFoundError:
            continue
        except (OSError, ValueError):
            return None
        return str(current) if stat.S_ISDIR(mode) or stat.S_ISREG(mode) else None
    return None


def open_repo(start: str | os.PathLike[str]) -> Repo | None:
    """The repository holding `start`, its git folders found without trusting `.git`, or None."""
    root = repository_root(start)
    if root is None:
        return None
    dot = os.path.join(root, ".git")
    git_dir: str | None = None
    if os.path.isdir(dot) and not os.path.islink(dot):
        git_dir = _folder(dot)
    else:
        first = (_text(read_in(root, ".git", MAX_SMALL_BYTES)) or "").splitlines()[:1]
        if first and first[0].startswith("gitdir:"):
            target = first[0][len("gitdir:") :].strip()
            git_dir = _folder(target if os.path.isabs(target) else os.path.join(root, target))
    common_dir = git_dir
    if git_dir is not None:
        named = (_text(read_in(git_dir, "commondir", MAX_SMALL_BYTES)) or "").strip()
        if named:
            common_dir = _folder(named if os.path.isabs(named) else os.path.join(git_dir, named))
    return Repo(root, git_dir, common_dir if common_dir else None)


def config_text(repo: Repo) -> str:
    """The repository's `config` (a linked worktree's is its common folder's), up to MAX_CONFIG_BYTES."""
    if repo.common_dir is None:
        return ""
    return _text(read_in(repo.common_dir, "config", MAX_CONFIG_BYTES)) or ""


def _packed(common_dir: str, ref: str) -> str | None:
    """The commit `ref` names in `packed-refs`, scanned in chunks up to MAX_PACKED_BYTES."""
    fd = open_in(common_dir, "packed-refs")
    if fd is None:
        return None
    wanted = b" " + ref.encode() + b"\n"
    with os.fdopen(fd, "rb") as handle:
        carry, read = b"", 0
        while read < MAX_PACKED_BYTES:
            try:
                chunk = handle.read(min(PACKED_CHUNK, MAX_PACKED_BYTES - read))
            except OSError:
                return None
            if not chunk:
                chunk = b"\n"  # the last line may lack its newline
                read = MAX_PACKED_BYTES
            else:
                read += len(chunk)
            buffer = carry + chunk
            at = buffer.find(wanted)
            while at >= 0:
                start = buffer.rfind(b"\n", 0, at) + 1
                found = buffer[start:at].decode("ascii", "replace")
                if is_commit_id(found):
                    return found
                at = buffer.find(wanted, at + 1)
            cut = buffer.rfind(b"\n")
            carry = buffer[cut + 1 :] if cut >= 0 else buffer
            if len(carry) > MAX_REF_CHARS + 80:  # a line no ref can be: not kept whole
                carry = b""
    return None


def resolve_ref(repo: Repo, ref: str) -> str | None:
    """The commit a ref names (loose in the git folder or the common one, else packed), or None."""
    for _ in range(MAX_SYMREF_DEPTH):
        if not valid_ref(ref):
            return None
        text = None
        for folder in dict.fromkeys(f for f in (repo.git_dir, repo.common_dir) if f):
            text = _text(read_in(folder, ref, MAX_SMALL_BYTES))
            if text is not None:
                break
        if text is None:
            return _packed(repo.common_dir, ref) if repo.common_dir else None
        value = text.strip()
        if value.startswith("ref:"):
            ref = value[4:].strip()
            continue
        return value if is_commit_id(value) else None
    return None


def head(repo: Repo | None) -> tuple[str | None, str | None]:
    """(branch, commit) of HEAD: the branch name (`main`, None when detached or unreadable) and its
    commit id (None when there is none yet, or it cannot be read within the rules above)."""
    if repo is None or repo.git_dir is None:
        return None, None
    text = (_text(read_in(repo.git_dir, "HEAD", MAX_SMALL_BYTES)) or "").strip()
    if not text.startswith("ref:"):
        return None, text if is_commit_id(text) else None
    ref = text[4:].strip()
    if not valid_ref(ref):
        return None, None
    branch = ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else None
    return branch, resolve_ref(repo, ref)


def git_executable(path: str | None = None) -> str | None:
    """The `git` program at the first absolute `PATH` entry holding one (a relative entry such as `.`
    is never searched), or None."""
    entries = (os.environ.get("PATH", "") if path is None else path).split(os.pathsep)
    names = ("git.exe", "git") if os.name == "nt" else ("git",)
    for entry in entries:
        if not entry or not os.path.isabs(entry):
            continue
        for name in names:
            candidate = os.path.join(entry, name)
            try:
                if stat.S_ISREG(os.stat(candidate).st_mode) and os.access(candidate, os.X_OK):
                    return candidate
            except (OSError, ValueError):
                continue
    return None


def git_env(git_dir: str) -> dict[str, str]:
    """The environment git runs in: this repository only, no user or system configuration, no pager,
    no prompt, no optional locks."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "SYSTEMROOT", "TMPDIR", "TEMP", "TMP")}
    return {
        **keep,
        "GIT_DIR": git_dir,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "HOME": os.devnull,
        "XDG_CONFIG_HOME": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "",
        "SSH_ASKPASS": "",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_ATTR_NOSYSTEM": "1",
        "LC_ALL": "C",
    }


def run_git(repo: Repo, *args: str, timeout: float = GIT_TIMEOUT) -> str | None:
    """git's standard output for `args` in `repo` (hardened as the module says), or None when git is
    not found, fails, runs past `timeout` or prints more than MAX_GIT_OUTPUT bytes. Runs only when
    HEAD reads as a commit id here."""
    if repo.git_dir is None or head(repo)[1] is None:
        return None
    program = git_executable()
    if program is None:
        return None
    import subprocess  # only a caller asking for history pays for it

    command = [program, "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false", "--no-replace-objects"]
    try:
        done = subprocess.run(
            [*command, *args],
            cwd=repo.git_dir,
            env=git_env(repo.git_dir),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    if done.returncode != 0 or len(done.stdout) > MAX_GIT_OUTPUT:
        return None
    return done.stdout.decode("utf-8", "replace")


def root_commit(repo: Repo) -> str | None:
    """The repository's root commit (the smallest id when its history has several), by one hardened
    `git rev-list`; None when HEAD has no commit yet or git cannot tell."""
    commit = head(repo)[1]
    if commit is None:
        return None
    out = run_git(repo, "rev-list", "--max-parents=0", "--max-count=16", commit)
    roots = [line for line in (out or "").split() if is_commit_id(line)]
    return min(roots) if roots else None


def commits_touching(repo: Repo, since: str, path: str) -> int | None:
    """How many commits from `since` to HEAD touched `path` (one hardened `git rev-list --count`)."""
    now = head(repo)[1]
    if not is_commit_id(since) or now is None or _parts(path) is None:
        return None
    out = (run_git(repo, "rev-list", "--count", f"{since}..{now}", "--", path, timeout=2.0) or "").strip()
    return int(out) if out.isdigit() else None
