"""ContextFlowMCP's files, read where they are: how it finds its file, and the files it writes beside it.

ContextFlowMCP (the Node server whose API contextflow keeps) names one context file `<file>`. Since
its per-session layout it writes each session to `<file>.sessions/<base64url of the session
id>.jsonl` (`no-session-id.jsonl` for entries without one) and keeps `<file>.sessions-index.json`
and a lock file `<file>.lock` beside it; `<file>` itself is what older versions wrote, migrated by
it into session files once. contextflow reads `<file>` and every `<file>.sessions/*.jsonl` as one
legacy source, incrementally like its own logs, and never writes any of them. The synced unit of
such a file is the file and these companions, never the folder it sits in.

Its file is found in ContextFlowMCP's order (its `contextFileSource` names): `env`
(MCP_SHARED_CONTEXT_FILE), `env-folder` (MCP_SHARED_CONTEXT_FOLDER), `auto-discovered-config`
(MCP_SHARED_CONTEXT_FILE in a Codex, Claude or Gemini config file), `auto-discovered-file` (an
existing file with a common name in a user config folder), `home-default` (~/.mcp-shared-context.jsonl,
read once it exists). Kept free of heavy imports: hooks locate the store on every prompt.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from contextflow.core import regexes

FOLDER_FILE = ".mcp-shared-context.jsonl"
FILE_NAMES = (
    ".mcp-shared-context.jsonl",
    "shared-context.jsonl",
    "agent-context.jsonl",
    "contextflow-context.jsonl",
    "contextflow-shared-context.jsonl",
)
SESSIONS_SUFFIX = ".sessions"
INDEX_SUFFIX = ".sessions-index.json"
MAX_FILE_SETTING = "MCP_SHARED_CONTEXT_MAX_CONTEXT_FILE_BYTES"
_CONFIG_FILES = (  # (client, folder under a root, file), in ContextFlowMCP's order
    *(("codex", "codex", name) for name in ("config.toml", "config.json")),
    *(("claude", "claude", name) for name in ("config.json", "settings.json", "claude_desktop_config.json")),
    *(("gemini", "gemini", name) for name in ("config.json", "settings.json")),
)
_CONFIG_PATTERNS = (
    regexes.compile(r"""^["']MCP_SHARED_CONTEXT_FILE["']\s*:\s*["']([^"']+)["']""", re.I),
    regexes.compile(r"""^MCP_SHARED_CONTEXT_FILE\b\s*=\s*["']([^"']+)["']""", re.I),
    regexes.compile(r"""^MCP_SHARED_CONTEXT_FILE\b\s*=\s*([^\s#;]+)""", re.I),
)


class Found(NamedTuple):
    """A ContextFlowMCP file, the `contextFileSource` that found it, and its `contextFileDiscovery` fields."""

    path: Path
    source: str
    discovery: tuple[tuple[str, str], ...] = ()


def resolve(value: str, base: Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """A path as ContextFlowMCP reads one: a leading `~` is the home folder (of `env`), a relative path
    is relative to `base` (else the current folder)."""
    value = value.strip()
    if value == "~" or value.startswith(("~/", "~\\")):
        expanded = home(os.environ if env is None else env) / value[2:]
    else:
        expanded = Path(os.path.expanduser(value))  # `~user/...` too, as the shell would
    if not expanded.is_absolute():
        expanded = (base or Path.cwd()) / expanded
    return Path(os.path.abspath(expanded))


def home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or os.path.expanduser("~"))


def _roots(env: Mapping[str, str]) -> list[tuple[Path, str]]:
    """Where clients keep their config folders besides the home folder, in ContextFlowMCP's order:
    (root, which variable named it). Under APPDATA and LOCALAPPDATA the client folders are capitalised."""
    return [(Path(env[name]), name) for name in ("XDG_CONFIG_HOME", "APPDATA", "LOCALAPPDATA") if env.get(name)]


def _client_folder(root: Path, variable: str, client: str) -> Path:
    return root / (client if variable == "XDG_CONFIG_HOME" else client.capitalize())


def config_candidates(env: Mapping[str, str]) -> list[tuple[str, Path]]:
    """(client, config file) in the order ContextFlowMCP reads them, each path once."""
    candidates = [(client, home(env) / f".{folder}" / name) for client, folder, name in _CONFIG_FILES]
    for root, variable in _roots(env):
        for client, folder, name in _CONFIG_FILES:
            if not (variable == "LOCALAPPDATA" and name == "claude_desktop_config.json"):  # it does not look there
                candidates.append((client, _client_folder(root, variable, folder) / name))
    unique: dict[Path, str] = {}
    for client, path in candidates:
        unique.setdefault(Path(os.path.abspath(path)), client)
    return [(client, path) for path, client in unique.items()]


def path_in_config(text: str) -> str | None:
    """The first MCP_SHARED_CONTEXT_FILE value a config file sets (comment lines skipped)."""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "//", ";")):
            continue
        for pattern in _CONFIG_PATTERNS:
            if (match := pattern.match(line)) and match.group(1).strip():
                return match.group(1).strip()
    return None


def from_client_configs(env: Mapping[str, str]) -> Found | None:
    for client, config in config_candidates(env):
        try:
            text = config.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if value := path_in_config(text):
            found = resolve(value, config.parent, env)
            return Found(found, "auto-discovered-config", (("client", client), ("configFile", str(config))))
    return None


def common_folders(env: Mapping[str, str]) -> list[Path]:
    """The folders ContextFlowMCP looks in for an existing context file, in its order."""
    base = home(env)
    folders = [base, *(base / f".{c}" for c in ("codex", "claude", "gemini"))]
    folders += [base / ".config" / c for c in ("codex", "claude", "gemini")]
    for root, variable in _roots(env):
        folders += [_client_folder(root, variable, c) for c in ("codex", "claude", "gemini")]
    return list(dict.fromkeys(Path(os.path.abspath(folder)) for folder in folders))


def from_common_folders(env: Mapping[str, str]) -> Found | None:
    for folder in common_folders(env):
        for name in FILE_NAMES:
            if (folder / name).is_file():
                return Found(folder / name, "auto-discovered-file", (("directory", str(folder)), ("fileName", name)))
    return None


def home_default(env: Mapping[str, str]) -> Found:
    return Found(Path(os.path.abspath(home(env) / FOLDER_FILE)), "home-default")


def sessions_dir(root: Path) -> Path:
    """The folder of per-session files ContextFlowMCP keeps for context file `root`."""
    return root.with_name(root.name + SESSIONS_SUFFIX)


ACTIVE_SESSION_NAME = "active-session.txt"


def in_use(found: Path, source: str) -> bool:
    """Whether ContextFlowMCP's file is in use: named by a variable, or found and present
    (the file or its `.sessions` folder)."""
    return source in ("env", "env-folder") or found.is_file() or sessions_dir(found).is_dir()


def active_session_file(roots: tuple[Path, ...], source: str) -> Path | None:
    """ContextFlowMCP's active-session file (`active-session.txt` beside its context file, where its
    server and `pick-session.mjs` keep the chosen session) when its file is in use, else None."""
    if roots and in_use(roots[0], source):
        return roots[0].parent / ACTIVE_SESSION_NAME
    return None


def index_file(root: Path) -> Path:
    """ContextFlowMCP's sessions index for `root` (its own cache; contextflow never reads it)."""
    return root.with_name(root.name + INDEX_SUFFIX)


def files(roots: tuple[Path, ...]) -> list[Path]:
    """Every file of these legacy sources that exists: each context file, then its session files
    (sorted; symbolic links are not followed, as ContextFlowMCP does not list them)."""
    found: list[Path] = []
    for root in roots:
        if root.is_file():
            found.append(root)
        try:
            with os.scandir(sessions_dir(root)) as entries:
                found += sorted(
                    Path(e.path) for e in entries if e.name.endswith(".jsonl") and e.is_file(follow_symlinks=False)
                )
        except OSError:
            continue  # none yet (or unreadable: nothing to list, as for ContextFlowMCP)
    return found


def is_legacy(path: Path, roots: tuple[Path, ...]) -> bool:
    return any(path == root or path.parent == sessions_dir(root) for root in roots)


def listing_stamp(folder: Path, roots: tuple[Path, ...]) -> tuple[tuple[int | None, ...], int | None]:
    """What a listing of the store `folder` and these sources depends on (the folder's mtime; whether
    each context file exists; each session folder's mtime, None while absent), and the newest of
    those mtimes: None when the store folder is missing (a listing is then never reused)."""
    stamp: list[int | None] = []
    mtimes: list[int] = []
    for where in (folder, *map(sessions_dir, roots)):
        try:
            mtimes.append(os.stat(where).st_mtime_ns)
            stamp.append(mtimes[-1])
        except OSError:
            stamp.append(None)
    stamp += [1 if root.is_file() else None for root in roots]
    return tuple(stamp), max(mtimes) if stamp[0] is not None else None


def oversize(path: Path, roots: tuple[Path, ...], limit: int) -> int:
    """The size of `path` when it is one of these sources' files and larger than `limit`, else 0."""
    try:
        size = os.stat(path).st_size if is_legacy(path, roots) else 0
    except OSError:
        return 0
    return size if size > limit else 0


def oversized_message(path: Path, size: int, limit: int) -> str:
    return (
        f"Context file exceeds configured max size ({limit} bytes): {path} is a ContextFlowMCP file of {size} "
        f"bytes, so contextflow does not read it (as ContextFlowMCP would not); raise {MAX_FILE_SETTING} or "
        "move old entries out of it"
    )
