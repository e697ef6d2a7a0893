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
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from contextflow.errors import InputError

APP = "contextflow"
LEGACY_FOLDER_FILE = ".mcp-shared-context.jsonl"
LEGACY_FILE_NAMES = (
    ".mcp-shared-context.jsonl",
    "shared-context.jsonl",
    "agent-context.jsonl",
    "contextflow-context.jsonl",
    "contextflow-shared-context.jsonl",
)
WRITER_PATTERN = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$")
_CONFIG_PATTERNS = (
    re.compile(r"""^["']MCP_SHARED_CONTEXT_FILE["']\s*:\s*["']([^"']+)["']""", re.I),
    re.compile(r"""^MCP_SHARED_CONTEXT_FILE\s*=\s*["']([^"']+)["']""", re.I),
    re.compile(r"""^MCP_SHARED_CONTEXT_FILE\s*=\s*([^\s#;]+)""", re.I),
)


@dataclass(frozen=True)
class Location:
    folder: Path
    rule: str
    detail: str = ""
    legacy_files: tuple[Path, ...] = field(default=())


def _path(value: str, base: Path | None = None) -> Path:
    expanded = Path(os.path.expanduser(value.strip()))
    if not expanded.is_absolute():
        expanded = (base or Path.cwd()) / expanded
    return Path(os.path.abspath(expanded))


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or os.path.expanduser("~"))


def default_store_folder() -> Path:
    return Path(platformdirs.user_data_dir(APP, appauthor=False)) / "store"


def _client_config_files(env: Mapping[str, str]) -> list[tuple[str, Path]]:
    home = _home(env)
    roots = [(home / ".codex", "codex"), (home / ".claude", "claude"), (home / ".gemini", "gemini")]
    if env.get("XDG_CONFIG_HOME"):
        xdg = Path(env["XDG_CONFIG_HOME"])
        roots += [(xdg / "codex", "codex"), (xdg / "claude", "claude"), (xdg / "gemini", "gemini")]
    names = ("config.toml", "config.json", "settings.json", "claude_desktop_config.json")
    return [(client, root / name) for root, client in roots for name in names]


def _from_client_configs(env: Mapping[str, str]) -> tuple[Path, Path] | None:
    for _client, config in _client_config_files(env):
        try:
            text = config.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for raw in text.splitlines():
            line = raw.strip()
            for pattern in _CONFIG_PATTERNS:
                match = pattern.match(line)
                if match:
                    return _path(match.group(1), config.parent), config
    return None


def _common_legacy_file(env: Mapping[str, str]) -> Path | None:
    home = _home(env)
    folders = [home, home / ".codex", home / ".claude", home / ".gemini"]
    folders += [home / ".config" / name for name in ("codex", "claude", "gemini")]
    for folder in folders:
        for name in LEGACY_FILE_NAMES:
            candidate = folder / name
            if candidate.is_file():
                return candidate
    return None


def locate_store(env: Mapping[str, str] | None = None) -> Location:
    env = os.environ if env is None else env
    if env.get("CONTEXTFLOW_STORE", "").strip():
        return Location(_path(env["CONTEXTFLOW_STORE"]), "CONTEXTFLOW_STORE")
    if env.get("MCP_SHARED_CONTEXT_FILE", "").strip():
        legacy = _path(env["MCP_SHARED_CONTEXT_FILE"])
        return Location(legacy.parent, "MCP_SHARED_CONTEXT_FILE", str(legacy), (legacy,))
    if env.get("MCP_SHARED_CONTEXT_FOLDER", "").strip():
        folder = _path(env["MCP_SHARED_CONTEXT_FOLDER"])
        return Location(folder, "MCP_SHARED_CONTEXT_FOLDER", "", (folder / LEGACY_FOLDER_FILE,))
    found = _from_client_configs(env)
    if found:
        legacy, config = found
        return Location(legacy.parent, "client-config", f"MCP_SHARED_CONTEXT_FILE in {config}", (legacy,))
    common = _common_legacy_file(env)
    if common:
        return Location(default_store_folder(), "legacy-file", f"read {common} as legacy", (common,))
    return Location(default_store_folder(), "default")


def state_root(env: Mapping[str, str] | None = None) -> Path:
    """Machine-local state (locks, caches, writer id); never inside the synced folder."""
    env = os.environ if env is None else env
    if env.get("CONTEXTFLOW_STATE", "").strip():
        return _path(env["CONTEXTFLOW_STATE"])
    return Path(platformdirs.user_state_dir(APP, appauthor=False))


def store_state_dir(folder: Path, env: Mapping[str, str] | None = None) -> Path:
    digest = hashlib.sha256(str(folder).encode()).hexdigest()[:16]
    path = state_root(env) / "stores" / digest
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def validate_writer(writer: str) -> str:
    if not WRITER_PATTERN.match(writer):
        raise InputError(
            f"writer id {writer!r} is not valid: use 1-64 letters, digits, '-', '_' or '.', "
            "not starting with '.' (for example 'laptop' or 'build-box-2')"
        )
    return writer


def writer_id(env: Mapping[str, str] | None = None) -> str:
    """`CONTEXTFLOW_WRITER`, else a stable id for this machine kept in the state folder."""
    env = os.environ if env is None else env
    if env.get("CONTEXTFLOW_WRITER", "").strip():
        return validate_writer(env["CONTEXTFLOW_WRITER"].strip())
    stored = state_root(env) / "writer-id"
    try:
        return validate_writer(stored.read_text(encoding="utf-8").strip())
    except (OSError, InputError):
        pass
    host = re.sub(r"[^A-Za-z0-9-]+", "-", socket.gethostname()).strip("-")[:40] or "machine"
    chosen = f"{host}-{secrets.token_hex(3)}"
    stored.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    stored.write_text(chosen + "\n", encoding="utf-8")
    return chosen
