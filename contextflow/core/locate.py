"""Where the store is, who this writer is, and where machine-local state lives.

Store resolution, first match wins (`contextflow doctor` reports which one chose it). The rules
after the first follow ContextFlowMCP's order for finding its context file (`legacy.py`); that
file and its per-session files are a legacy source, read where they are and never written:

1. `CONTEXTFLOW_STORE`: the store folder (with `MCP_SHARED_CONTEXT_FILE` or `_FOLDER` also set,
   that ContextFlowMCP file is read too).
2. `MCP_SHARED_CONTEXT_FILE`: the file is legacy; its folder is the store.
3. `MCP_SHARED_CONTEXT_FOLDER`: the store folder (its `.mcp-shared-context.jsonl` is legacy).
4. `MCP_SHARED_CONTEXT_FILE` found in a Codex, Claude or Gemini config file: as rule 2.
5. An existing legacy file with a common name in a user config folder: read as legacy; the store
   is the default folder.
6. The default folder, `<platformdirs user data dir>/contextflow/store`; ContextFlowMCP's home
   default `~/.mcp-shared-context.jsonl` is read as legacy (once it exists).

A legacy file's folder is never made the store when it is the home folder or holds it (a file
in `~` is synced as itself, with its companions, not as the home folder): contextflow's own logs
then go to the default folder, and `Location.store_note` says so. The CLI's `--store` sets
CONTEXTFLOW_STORE and STORE_OPTION_MARKER alike, so `doctor` can name it.

The state folder is a trust boundary: owned by this user, writable by no one else (refused
otherwise; made 0700 when merely readable by others), never inside the synced store. Per-store
state is keyed on the store's real path: one writer lock however the store is reached.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from contextflow.core import hashing, legacy, regexes
from contextflow.core.errors import InputError
from contextflow.core.fsutil import atomic_write, read_regular
from contextflow.core.settings import STORE_OPTION_MARKER as STORE_OPTION_MARKER
from contextflow.core.settings import read

APP = "contextflow"
XDG_PLATFORMS = ("linux", "freebsd", "openbsd", "netbsd")  # where platformdirs follows the XDG rules
WRITER_PATTERN = regexes.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}")


class Location(NamedTuple):  # not a dataclass: hooks locate the store, and skip that import
    folder: Path  # contextflow's own store: the folder of its logs
    rule: str  # contextflow's name for the rule that chose it
    detail: str = ""
    legacy_files: tuple[Path, ...] = ()  # ContextFlowMCP context files read with it (and their .sessions/)
    source: str = "env"  # ContextFlowMCP's `contextFileSource` for the legacy file (or the store setting)
    discovery: tuple[tuple[str, str], ...] = ()  # ContextFlowMCP's `contextFileDiscovery` fields
    store_note: str = ""  # why the store is not the legacy file's folder


def _path(value: str, base: Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    return legacy.resolve(value, base, env)


def default_store_folder() -> Path:
    return user_folder("data") / "store"


def user_folder(kind: str) -> Path:
    """contextflow's folder of this user's `kind` ("data" or "state") as platformdirs names it. Under the XDG
    rules (Linux, the BSDs) it is worked out here, since importing platformdirs costs every hook of a user with
    no settings 7-10 ms: `$XDG_DATA_HOME` / `$XDG_STATE_HOME` when absolute, else `~/.local/share` /
    `~/.local/state`, `~` being an absolute HOME or else the user's home from the password database
    (tests/test_locate.py holds it equal to platformdirs)."""
    if not sys.platform.startswith(XDG_PLATFORMS) or "ANDROID_DATA" in os.environ:
        import platformdirs

        found = platformdirs.user_data_dir if kind == "data" else platformdirs.user_state_dir
        return Path(found(APP, appauthor=False))
    base = os.environ.get(f"XDG_{kind.upper()}_HOME", "")
    if not os.path.isabs(base):
        home = os.environ.get("HOME", "")
        if not os.path.isabs(home):
            import pwd

            home = pwd.getpwuid(os.getuid()).pw_dir
        base = (home.rstrip("/") + ("/.local/share" if kind == "data" else "/.local/state")) or "/"
    return Path(base) / APP


def _store_folder(value: str, setting: str, env: Mapping[str, str] | None = None) -> Path:
    folder = _path(value, env=env)
    if folder.exists() and not folder.is_dir():
        raise InputError(
            f"{setting}={value.strip()!r} is a file, but the store is a folder of logs: point {setting} at a "
            f"folder (for example {folder.parent / 'contextflow-store'}); to keep reading a ContextFlowMCP "
            "log file, set MCP_SHARED_CONTEXT_FILE to it instead"
        )
    return folder


def holds_home(folder: Path, env: Mapping[str, str]) -> bool:
    """True when `folder` is the home folder or one of its parents: never a store."""
    return Path(os.path.realpath(legacy.home(env))).is_relative_to(os.path.realpath(folder))


def store_beside(found: legacy.Found, env: Mapping[str, str]) -> tuple[Path, str]:
    """contextflow's store for a ContextFlowMCP file named explicitly: its folder, unless that folder
    is the home folder or holds it; then the default folder. (folder, the note doctor shows)."""
    folder = found.path.parent
    if not holds_home(folder, env):
        return folder, ""
    return default_store_folder(), (
        f"{found.path} is in {folder}, your home folder or a folder holding it, which is never a store "
        "(the file and its .sessions folder are synced as themselves): contextflow's own logs go to the "
        "default store; set CONTEXTFLOW_STORE to choose another"
    )


def _explicit(env: Mapping[str, str]) -> tuple[str, legacy.Found] | None:
    """The ContextFlowMCP file an environment variable names: (the variable, the file)."""
    settings = read(env)
    if settings.legacy_file:
        return "MCP_SHARED_CONTEXT_FILE", legacy.Found(_path(settings.legacy_file, env=env), "env")
    if settings.legacy_folder:
        folder = _store_folder(settings.legacy_folder, "MCP_SHARED_CONTEXT_FOLDER", env)
        where = (("folder", str(folder)), ("fileName", legacy.FOLDER_FILE))
        return "MCP_SHARED_CONTEXT_FOLDER", legacy.Found(folder / legacy.FOLDER_FILE, "env-folder", where)
    return None


def locate_store(env: Mapping[str, str] | None = None) -> Location:
    env = os.environ if env is None else env
    settings = read(env)
    named = _explicit(env)
    if not settings.store and settings.ctx_db:  # ctx's variable
        folder = _store_folder(settings.ctx_db, "CTX_DB", env)
        return (
            Location(folder, "CTX_DB")
            if named is None
            else Location(folder, "CTX_DB", f"also reads {named[1].path}", (named[1].path,), *named[1][1:])
        )
    if settings.store:
        value = settings.store
        rule = "--store" if settings.store_from_option == value else "CONTEXTFLOW_STORE"
        folder = _store_folder(value, rule, env)
        if named is None:
            return Location(folder, rule)
        _, found = named
        return Location(folder, rule, f"also reads {found.path}", (found.path,), *found[1:])
    if named is not None:
        rule, found = named
        detail = str(found.path) if rule == "MCP_SHARED_CONTEXT_FILE" else ""
    elif (found_in_config := legacy.from_client_configs(env)) is not None:
        rule, found = "client-config", found_in_config
        detail = f"MCP_SHARED_CONTEXT_FILE in {dict(found.discovery)['configFile']}"
    else:
        common = legacy.from_common_folders(env)
        rule, found = ("legacy-file", common) if common else ("default", legacy.home_default(env))
        detail = f"read {found.path} as legacy" if common else ""
        return Location(default_store_folder(), rule, detail, (found.path,), *found[1:])
    folder, note = store_beside(found, env)
    return Location(folder, rule, detail, (found.path,), *found[1:], note)


def current_uid() -> int | None:
    """This process's user id; None where the platform has none (ownership is not checked)."""
    return os.geteuid() if hasattr(os, "geteuid") else None


def state_root(env: Mapping[str, str] | None = None) -> Path:
    """Machine-local state (locks, caches, writer id); never inside the synced folder."""
    chosen = read(env).state
    if chosen:
        return _path(chosen)
    return user_folder("state")


def _setting(env: Mapping[str, str]) -> str:
    return "CONTEXTFLOW_STATE" if read(env).state else "the default state folder"


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
    if mode & 0o700 != 0o700:  # its owner, this user, cannot use it (damage): made usable again
        os.chmod(path, mode := mode | 0o700)
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
            "(locks, derived tables) must not be synced; point CONTEXTFLOW_STATE outside the store"
        )
    return private_folder(root, _setting(env))


def store_state_dir(folder: Path, env: Mapping[str, str] | None = None) -> Path:
    """This store's state folder, keyed on the store's real path (one lock however it is reached)."""
    env = os.environ if env is None else env
    root = checked_state_root(env, folder)
    digest = hashing.sha256(os.path.realpath(folder).encode()).hexdigest()[:16]
    for path in (root / "stores", root / "stores" / digest):
        with contextlib.suppress(FileNotFoundError):  # a plain file in a folder's place: removed, rebuilt
            if stat.S_ISREG(os.lstat(path).st_mode):  # (a link or any other kind is refused below)
                path.unlink()
        private_folder(path, _setting(env))
    return path


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
    named = read(env).writer
    if named:
        return validate_writer(named)
    stored = checked_state_root(env) / "writer-id"
    with contextlib.suppress(OSError, UnicodeDecodeError, InputError):
        return validate_writer(read_regular(stored).decode("utf-8").strip(), f"the writer id in {stored}")
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
