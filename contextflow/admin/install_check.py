"""Do the configured clients agree on the store? (`contextflow doctor`)

Reads each client's config files (user scope under HOME, project scope under the current
folder), finds every place that starts contextflow (MCP server entries and hook commands)
and the store each one selects through its environment. Places that select different
stores are a problem: the server writes one store and the hooks (or another client)
another. Config files are read only; an unreadable one is reported, never fatal.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextflow.admin import packaged
from contextflow.admin.install import SERVER_NAME, STORE_VARIABLES, load_config

DEFAULT = "(the default store)"


@dataclass(frozen=True)
class Place:
    """One place that starts contextflow, and the store its settings select."""

    client: str
    where: str  # e.g. "server in ~/.claude.json" or "Stop hook in ~/.claude/settings.json"
    store: str


def store_of(env: Mapping[str, Any], home: Path | None = None) -> str:
    """The store folder an environment selects (as an absolute path), or DEFAULT. A ContextFlowMCP
    file's folder is the store unless it is the home folder or holds it (`locate.store_beside`)."""
    from contextflow.core.locate import holds_home

    for key in STORE_VARIABLES:
        value = env.get(key)
        if isinstance(value, str) and value.strip():
            path = os.path.abspath(os.path.expanduser(value.strip()))
            folder = os.path.dirname(path) if key == "MCP_SHARED_CONTEXT_FILE" else path
            if key != "CONTEXTFLOW_STORE" and holds_home(Path(folder), {"HOME": str(home or Path.home())}):
                return DEFAULT
            return folder
    return DEFAULT


def folder_of(store: str) -> str:
    """A store as `store_of` says it, as the folder it is: DEFAULT is the default store's folder, so a client
    naming that folder and one naming none agree (they write the same logs)."""
    from contextflow.core.locate import default_store_folder

    return str(default_store_folder()) if store == DEFAULT else os.path.realpath(store)


def command_env(command: str) -> dict[str, str]:
    """The `NAME=value` assignments (optionally after `env`) in front of a shell command."""
    try:
        words = shlex.split(command)
    except ValueError:
        return {}
    if words[:1] == ["env"]:
        words = words[1:]
    found: dict[str, str] = {}
    for word in words:
        name, equals, value = word.partition("=")
        if not equals or not name.isidentifier():
            break
        found[name] = value
    return found


def _shown(path: Path, home: Path) -> str:
    try:
        return "~/" + path.relative_to(home).as_posix()
    except ValueError:
        return str(path)


def _hooks(data: Any) -> Iterator[tuple[str, str]]:
    hooks = data.get("hooks") if isinstance(data, dict) else None
    for event, groups in hooks.items() if isinstance(hooks, dict) else ():
        for group in groups if isinstance(groups, list) else ():
            handlers = group.get("hooks") if isinstance(group, dict) and "hooks" in group else [group]
            for handler in handlers if isinstance(handlers, list) else ():
                command = handler.get("command") if isinstance(handler, dict) else None
                if isinstance(command, str) and "contextflow" in command and " hook " in command:
                    yield event, command


def _opencode_places(home: Path, cwd: Path | None) -> list[tuple[Path, Path]]:
    """(opencode.json, plugin file) per scope: user (XDG_CONFIG_HOME or ~/.config), then project."""
    from contextflow.admin.install_opencode import paths

    scopes = [paths(home, home, False, os.environ)]
    if cwd is not None and cwd.resolve() != home.resolve():
        scopes.append(paths(home, cwd, True, os.environ))
    return scopes


def _opencode(home: Path, cwd: Path | None) -> tuple[list[Place], list[str]]:
    """OpenCode's server entry (`mcp.contextflow.environment`) and plugin (its INSTALLED line)."""
    from contextflow.admin.install_opencode import installed_settings

    places: list[Place] = []
    problems: list[str] = []
    for config, plugin in _opencode_places(home, cwd):
        try:
            data = load_config(config)
            entry = data.get("mcp", {}).get(SERVER_NAME) if isinstance(data, dict) else None
            if isinstance(entry, dict):
                env = entry.get("environment")
                store = store_of(env if isinstance(env, dict) else {}, home)
                places.append(Place("opencode", f"server in {_shown(config, home)}", store))
        except FileNotFoundError:
            pass
        except (OSError, UnicodeDecodeError, ValueError, AttributeError) as exc:
            problems.append(f"cannot read {_shown(config, home)} to check its contextflow settings: {exc}")
        settings = installed_settings(plugin)
        if settings is not None:
            places.append(Place("opencode", f"plugin {_shown(plugin, home)}", store_of(settings, home)))
    return places, problems


def _files(home: Path, cwd: Path | None) -> list[tuple[str, Path, str]]:
    """(client, config file, key of its MCP server table), user scope first; the key is "" for
    hook-only files."""
    scopes = [(home, ".claude.json")]
    if cwd is not None and cwd.resolve() != home.resolve():
        scopes.append((cwd, ".mcp.json"))
    return [
        (client, root / name, key)
        for root, claude_server in scopes
        for client, name, key in (
            ("claude-code", claude_server, "mcpServers"),
            ("claude-code", ".claude/settings.json", ""),
            ("codex", ".codex/config.toml", "mcp_servers"),
            ("codex", ".codex/hooks.json", ""),
            ("gemini", ".gemini/settings.json", "mcpServers"),
            ("cursor", ".cursor/mcp.json", "mcpServers"),
            ("cursor", ".cursor/hooks.json", ""),
        )
    ]


def configured_places(home: Path, cwd: Path | None = None) -> tuple[list[Place], list[str]]:
    """Every place that starts contextflow, and a problem line per config file that cannot be read."""
    places: list[Place] = []
    problems: list[str] = []
    for client, path, server_key in _files(home, cwd):
        shown = _shown(path, home)
        try:
            data = load_config(path)
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            problems.append(f"cannot read {shown} to check its contextflow settings: {exc}")
            continue
        servers = data.get(server_key) if server_key and isinstance(data, dict) else None
        entry = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
        if isinstance(entry, dict):
            env = entry.get("env")
            places.append(Place(client, f"server in {shown}", store_of(env if isinstance(env, dict) else {}, home)))
        for event, command in _hooks(data):
            places.append(Place(client, f"{event} hook in {shown}", store_of(command_env(command), home)))
    found, unread = _opencode(home, cwd)
    places += found
    problems += unread
    for client in ("claude-code", "gemini"):
        way = packaged.find(client, home, cwd)
        if way is not None:  # its server and hooks read the store settings of the client's environment
            env = {**os.environ, **(packaged.claude_env(home, cwd) if client == "claude-code" else {})}
            places.append(Place(client, f"{way.kind} {way.name}", store_of(env, home)))
    return places, problems


def client_ways(home: Path, cwd: Path | None) -> tuple[list[str], list[str]]:
    """For doctor: a line per client saying how contextflow is installed in it and which way is
    active, and a problem per client where both ways are (two servers, and hooks that stand aside)."""
    places, _ = configured_places(home, cwd)
    lines: list[str] = []
    problems: list[str] = []
    for client in sorted({place.client for place in places}):
        way = packaged.find(client, home, cwd)
        own = [p.where for p in places if p.client == client and (way is None or not p.where.startswith(way.kind))]
        if way is None:
            lines.append(f"{client}: contextflow install ({'; '.join(own)})")
        elif not own:
            lines.append(f"{client}: {way.kind} {way.name} (active)")
        else:
            hooks = [where for where in own if " hook in " in where]
            active = "the hooks `contextflow install` wrote" if hooks else f"the {way.kind}'s hooks"
            lines.append(
                f"{client}: both the {way.kind} {way.name} and contextflow install ({'; '.join(own)}); active: {active}"
            )
            problems.append(
                f"{client} has contextflow twice, as the {way.kind} {way.name} and by `contextflow install` "
                f"({'; '.join(own)}): two servers start and the {way.kind}'s hooks stand aside. Run "
                f"`contextflow install {client}` again to leave it to the {way.kind}, or remove the {way.kind}"
            )
    return lines, problems


def client_store_findings(home: Path | None = None, cwd: Path | None = None) -> list[str]:
    """Problems for `doctor`: configured clients (or a client's server and hooks) that select
    different stores, and config files that could not be read."""
    home = home or Path(os.environ.get("HOME") or Path.home())
    cwd = cwd if cwd is not None else Path.cwd()
    places, problems = configured_places(home, cwd)
    problems += client_ways(home, cwd)[1]
    stores = sorted({folder_of(place.store) for place in places})
    if len(stores) > 1:
        listed = "".join(f"\n      {p.client} {p.where}: {p.store}" for p in places)  # a line each
        problems.append(
            f"the configured clients disagree on the store:{listed}\n    Set CONTEXTFLOW_STORE to the one you "
            "want and run `contextflow install CLIENT` again for each client, so the servers and hooks share it"
        )
    return problems


def install_warnings(client: str, home: Path | None = None, cwd: Path | None = None) -> list[str]:
    """After `install CLIENT`: a line per other configured client whose store differs from the
    one CLIENT now uses (the memory would be split over two stores)."""
    home = home or Path(os.environ.get("HOME") or Path.home())
    places, _ = configured_places(home, cwd if cwd is not None else Path.cwd())
    mine = sorted({folder_of(place.store) for place in places if place.client == client})
    others: dict[str, set[str]] = {}
    for place in places:
        if place.client != client and folder_of(place.store) not in mine:
            others.setdefault(place.client, set()).add(place.store)
    return [
        f"{client} now uses the store {', '.join(mine)}, but {other} uses {', '.join(sorted(stores))}: "
        f"the memory is split. Run `CONTEXTFLOW_STORE=<the one you want> contextflow install {other}` "
        f"(and the same for {client}) so they share one store; `contextflow doctor` checks"
        for other, stores in sorted(others.items())
    ]
