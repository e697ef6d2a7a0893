"""Where the store is, who this writer is, and where machine-local state lives.

Store resolution, first match wins (`contextflow doctor` reports which one chose it):

1. `CONTEXTFLOW_STORE`: the store folder.
2. `MCP_SHARED_CONTEXT_FILE`: its folder is the store; the file itself, when it exists,
   is a legacy ContextFlowMCP log that is read and never rewritten.
3. `MCP_SHARED_CONTEXT_FOLDER`: the store folder (its `.mcp-shared-context.jsonl` is legacy).
4. `MCP_SHARED_CONTEXT_FILE` found in a Codex, Claude or Gemini config file: as rule 2.
5. An existing legacy file with a common name in a user config folder: it is read as legacy
   and the store is the default folder.
6. The default folder: `<platformdirs user data dir>/contextflow/store`.

The CLI's `--store` sets CONTEXTFLOW_STORE and STORE_OPTION_MARKER alike, so `doctor` can name it.

The state folder is a trust boundary: owned by this user, writable by no one else (refused
otherwise; made 0700 when merely readable by others), never inside the synced store. Per-store
state is keyed on the store's real path: one writer lock however the store is reached.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from contextflow.core.errors import InputError
from contextflow.core.fsutil import atomic_write

APP = "contextflow"
LEGACY_FOLDER_FILE = ".mcp-shared-context.jsonl"
LEGACY_FILE_NAMES = (
    ".mcp-shared-context.jsonl",
    "shared-context.jsonl",
    "agent-context.jsonl",
    "contextflow-context.jsonl",
    "contextflow-shared-context.jsonl",
)
_CLIENTS = ("codex", "claude", "gemini")
_CLIENT_CONFIG_NAMES = ("config.toml", "config.json", "settings.json", "claude_desktop_config.json")
WRITER_PATTERN = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}")
STORE_OPTION_MARKER = "CONTEXTFLOW_STORE_FROM_OPTION"
_CONFIG_PATTERNS = (
    re.compile(r"""^["']MCP_SHARED_CONTEXT_FILE["']\s*:\s*["']([^"']+)["']""", re.I),
    re.compile(r"""^MCP_SHARED_CONTEXT_FILE\s*=\s*["']([^"']+)["']""", re.I),
    re.compile(r"""^MCP_SHARED_CONTEXT_FILE\s*=\s*([^\s#;]+)""", re.I),
)


class Location(NamedTuple):  # not a dataclass: hooks locate the store, and skip that import
    folder: Path
    rule: str
    detail: str = ""
    legacy_files: tuple[Path, ...] = ()


def _path(value: str, base: Path | None = None) -> Path:
    expanded = Path(os.path.expanduser(value.strip()))
    if not expanded.is_absolute():
        expanded = (base or Path.cwd()) / expanded
    return Path(os.path.abspath(expanded))


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or os.path.expanduser("~"))


def default_store_folder() -> Path:
    import platformdirs  # only when no setting names the folder: hooks with settings skip its import

    return Path(platformdirs.user_data_dir(APP, appauthor=False)) / "store"


def _from_client_configs(env: Mapping[str, str]) -> tuple[Path, Path] | None:
    """(legacy file, the client config file naming it) from the first config that sets MCP_SHARED_CONTEXT_FILE."""
    roots = [_home(env) / f".{client}" for client in _CLIENTS]
    if env.get("XDG_CONFIG_HOME"):
        roots += [Path(env["XDG_CONFIG_HOME"]) / client for client in _CLIENTS]
    for config in (root / name for root in roots for name in _CLIENT_CONFIG_NAMES):
        try:
            text = config.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for line in text.splitlines():
            for pattern in _CONFIG_PATTERNS:
                if match := pattern.match(line.strip()):
                    return _path(match.group(1), config.parent), config
    return None


def _common_legacy_file(env: Mapping[str, str]) -> Path | None:
    home = _home(env)
    folders = [home, *(home / f".{client}" for client in _CLIENTS), *(home / ".config" / client for client in _CLIENTS)]
    candidates = (folder / name for folder in folders for name in LEGACY_FILE_NAMES)
    return next((candidate for candidate in candidates if candidate.is_file()), None)


def _store_folder(value: str, setting: str) -> Path:
    folder = _path(value)
    if folder.exists() and not folder.is_dir():
        raise InputError(
            f"{setting}={value.strip()!r} is a file, but the store is a folder of logs: point {setting} at a "
            f"folder (for example {folder.parent / 'contextflow-store'}); to keep reading a ContextFlowMCP "
            "log file, set MCP_SHARED_CONTEXT_FILE to it instead"
        )
    return folder


def locate_store(env: Mapping[str, str] | None = None) -> Location:
    env = os.environ if env is None else env
    if env.get("CONTEXTFLOW_STORE", "").strip():
        value = env["CONTEXTFLOW_STORE"]
        rule = "--store" if env.get(STORE_OPTION_MARKER) == value else "CONTEXTFLOW_STORE"
        return Location(_store_folder(value, rule), rule)
    if env.get("MCP_SHARED_CONTEXT_FILE", "").strip():
        legacy = _path(env["MCP_SHARED_CONTEXT_FILE"])
        return Location(legacy.parent, "MCP_SHARED_CONTEXT_FILE", str(legacy), (legacy,))
    if env.get("MCP_SHARED_CONTEXT_FOLDER", "").strip():
        folder = _store_folder(env["MCP_SHARED_CONTEXT_FOLDER"], "MCP_SHARED_CONTEXT_FOLDER")
        return Location(folder, "MCP_SHARED_CONTEXT_FOLDER", "", (folder / LEGACY_FOLDER_FILE,))
    if found := _from_client_configs(env):
        legacy, config = found
        return Location(legacy.parent, "client-config", f"MCP_SHARED_CONTEXT_FILE in {config}", (legacy,))
    if common := _common_legacy_file(env):
        return Location(default_store_folder(), "legacy-file", f"read {common} as legacy", (common,))
    return Location(default_store_folder(), "default")


def current_uid() -> int | None:
    """This process's user id; None where the platform has none (ownership is not checked)."""
    return os.geteuid() if hasattr(os, "geteuid") else None


def state_root(env: Mapping[str, str] | None = None) -> Path:
    """Machine-local state (locks, caches, writer id); never inside the synced folder."""
    env = os.environ if env is None else env
    if env.get("CONTEXTFLOW_STATE", "").strip():
        return _path(env["CONTEXTFLOW_STATE"])
    import platformdirs

    return Path(platformdirs.user_state_dir(APP, appauthor=False))


def _setting(env: Mapping[str, str]) -> str:
    return "CONTEXTFLOW_STATE" if env.get("CONTEXTFLOW_STATE", "").strip() else "the default state folder"


def private_folder(path: Path, setting: str) -> Path:
    """Create `path` (0700) or check it: owned by this user, writable by no one else. A folder
    merely readable by others is made 0700. Anything else is a clear InputError."""
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = os.lstat(path)
    except OSError as exc:
        raise InputError(
            f"{setting} cannot be used: {path} cannot be a folder ({(exc.strerror or str(exc)).lower()}); "
            "point CONTEXTFLOW_STATE at a folder you own on this machine"
        ) from None
    if not stat.S_ISDIR(st.st_mode):
        raise InputError(
            f"{setting} cannot be used: {path} is not a folder (a symbolic link or a file); "
            "point CONTEXTFLOW_STATE at a folder you own on this machine"
        )
    uid = current_uid()
    if uid is None:
        return path  # no POSIX owners or modes to check
    if st.st_uid != uid:
        raise InputError(
            f"{setting} cannot be used: {path} is owned by another user (uid {st.st_uid}); "
            "use a folder you own (CONTEXTFLOW_STATE)"
        )
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o022:
        raise InputError(
            f"{setting} cannot be used: {path} is writable by other users (mode {mode:o}); "
            f"run `chmod 700 {path}` or point CONTEXTFLOW_STATE at a private folder"
        )
    if mode & 0o077:
        os.chmod(path, 0o700)
    return path


def checked_state_root(env: Mapping[str, str] | None = None, store: Path | None = None) -> Path:
    """The state root, created or checked as private; refused when it lies inside the store."""
    env = os.environ if env is None else env
    root = state_root(env)
    if store is not None and Path(os.path.realpath(root)).is_relative_to(os.path.realpath(store)):
        raise InputError(
            f"{_setting(env)} ({root}) is inside the synced store {store}: machine-local state "
            "(locks, snapshot) must not be synced; point CONTEXTFLOW_STATE outside the store"
        )
    return private_folder(root, _setting(env))


def store_state_dir(folder: Path, env: Mapping[str, str] | None = None) -> Path:
    """This store's state folder, keyed on the store's real path (one lock however it is reached)."""
    env = os.environ if env is None else env
    root = checked_state_root(env, folder)
    digest = hashlib.sha256(os.path.realpath(folder).encode()).hexdigest()[:16]
    private_folder(root / "stores", _setting(env))
    return private_folder(root / "stores" / digest, _setting(env))


def validate_writer(writer: str, setting: str = "CONTEXTFLOW_WRITER") -> str:
    """A writer id names a log file (`events.<writer>.jsonl`): no path characters, and nothing a
    sync tool's conflict copies use, so a log can never pass for another's conflict copy."""
    hint = "use 1-64 letters, digits, '-', '_' or '.', not starting with '.' (for example 'laptop' or 'build-box-2')"
    if not WRITER_PATTERN.fullmatch(writer) or ".." in writer:
        raise InputError(f"{setting}={writer!r} is not a valid writer id: {hint}")
    if "conflict" in writer.lower():
        raise InputError(
            f"{setting}={writer!r} looks like a sync-conflict copy's name, which would make its log "
            f"read as another writer's conflict copy: {hint}"
        )
    return writer


def writer_id(env: Mapping[str, str] | None = None) -> str:
    """`CONTEXTFLOW_WRITER`, else a stable id for this machine kept in the state folder."""
    env = os.environ if env is None else env
    if env.get("CONTEXTFLOW_WRITER", "").strip():
        return validate_writer(env["CONTEXTFLOW_WRITER"].strip())
    stored = checked_state_root(env) / "writer-id"
    with contextlib.suppress(OSError, UnicodeDecodeError, InputError):
        return validate_writer(stored.read_text(encoding="utf-8").strip(), f"the writer id in {stored}")
    import secrets  # a new machine only: hooks and commands that find the id pay nothing for these
    import socket

    host = re.sub(r"[^A-Za-z0-9-]+", "-", socket.gethostname()).strip("-")[:40] or "machine"
    host = host.replace("conflict", "c")
    chosen = f"{host}-{secrets.token_hex(3)}"
    try:
        atomic_write(stored, (chosen + "\n").encode())
    except OSError as exc:
        raise InputError(
            f"cannot save this machine's writer id in {stored}: {exc.strerror}; "
            "set CONTEXTFLOW_WRITER or point CONTEXTFLOW_STATE at a folder you can write"
        ) from None
    return chosen
