"""`contextflow install opencode`: the MCP entry in `opencode.json` and contextflow's plugin file.

    scope    config (the `mcp.contextflow` entry)          plugin
    user     $XDG_CONFIG_HOME/opencode/opencode.json       $XDG_CONFIG_HOME/opencode/plugins/contextflow.js
             (~/.config/opencode when unset)
    project  ./opencode.json                               ./.opencode/plugins/contextflow.js

The plugin is `opencode-plugin/contextflow.js` of the repository (shipped in the wheel as
`contextflow/clients/opencode/contextflow.js`) with its `INSTALLED` line filled in: the command
that runs contextflow and the store settings, the same ones the MCP entry's `environment` gets.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from contextflow.core.errors import InputError

PLUGIN_NAME = "contextflow.js"
OWNED = (
    "CONTEXTFLOW_STORE",
    "MCP_SHARED_CONTEXT_FILE",
    "MCP_SHARED_CONTEXT_FOLDER",
    "CONTEXTFLOW_STATE",
    "CONTEXTFLOW_WRITER",
)
INSTALLED_LINE = "const INSTALLED = {}"
PACKAGED = "clients/opencode/contextflow.js"  # where the wheel carries the plugin


def config_root(home: Path, env: Mapping[str, str]) -> Path:
    """OpenCode's user config folder: `$XDG_CONFIG_HOME/opencode`, else `~/.config/opencode`."""
    base = env.get("XDG_CONFIG_HOME", "").strip()
    return (Path(base) if os.path.isabs(base) else home / ".config") / "opencode"


def paths(home: Path, root: Path, project: bool, env: Mapping[str, str]) -> tuple[Path, Path]:
    """(opencode.json, the plugin file) for this scope."""
    if project:
        return root / "opencode.json", root / ".opencode" / "plugins" / PLUGIN_NAME
    folder = config_root(home, env)
    return folder / "opencode.json", folder / "plugins" / PLUGIN_NAME


def plugin_template() -> str:
    """The plugin's source: from the installed package, else from this checkout's `opencode-plugin/`."""
    packaged = resources.files("contextflow").joinpath(PACKAGED)
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    checkout = Path(__file__).resolve().parents[2] / "opencode-plugin" / PLUGIN_NAME
    try:
        return checkout.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(
            f"the OpenCode plugin is missing from this installation ({checkout}: {exc.strerror})"
        ) from None


def plugin_text(command: list[str], settings: Mapping[str, str]) -> str:
    """The plugin with the command and store settings it runs contextflow with."""
    template = plugin_template()
    if template.count(INSTALLED_LINE) != 1:
        raise InputError(f"the OpenCode plugin template does not hold one `{INSTALLED_LINE}` line")
    installed = json.dumps({"command": command, "env": dict(settings)}, ensure_ascii=False)
    return template.replace(INSTALLED_LINE, f"const INSTALLED = {installed}")


def installed_settings(plugin: Path) -> dict[str, str] | None:
    """The store settings in an installed plugin's INSTALLED line, or None when there is no
    plugin (a plugin placed by hand, with an empty INSTALLED, reads the client's environment)."""
    try:
        text = plugin.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    for line in text.splitlines():
        if line.startswith("const INSTALLED = "):
            value = line.removeprefix("const INSTALLED = ").split(" // ", 1)[0]
            try:
                installed = json.loads(value)
            except ValueError:
                return {}
            env = installed.get("env") if isinstance(installed, dict) else None
            return {k: v for k, v in env.items() if isinstance(v, str)} if isinstance(env, dict) else {}
    return None


def existing_environment(path: Path) -> Any:
    """The `environment` of the contextflow entry in opencode.json, or None."""
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))["mcp"]["contextflow"]
        return entry.get("environment")
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
        return None


def mcp_mutator(path: Path, command: list[str], settings: Mapping[str, str]) -> Any:
    """Set `mcp.contextflow` (a local server: command and arguments as one list, `environment`)."""

    def mutate(data: dict[str, Any]) -> None:
        servers = data.setdefault("mcp", {})
        if not isinstance(servers, dict):
            raise InputError(f"{path}: mcp is not a JSON object; fix it and run install again. Nothing was changed")
        entry = servers.get("contextflow")
        entry = dict(entry) if isinstance(entry, dict) else {}
        owned = OWNED
        current = entry.get("environment")
        kept = {k: v for k, v in current.items() if k not in owned} if isinstance(current, dict) else {}
        entry.update({"type": "local", "command": [*command, "serve"], "enabled": True})
        environment = {**kept, **settings}
        if environment:
            entry["environment"] = environment
        else:
            entry.pop("environment", None)
        servers["contextflow"] = entry

    return mutate


def plan(home: Path, root: Path, project: bool, command: list[str], env: Mapping[str, str]) -> list[Any]:
    """The two changes: the MCP entry in opencode.json and the plugin file."""
    from contextflow.admin.install import Change, _read, merge_json, store_settings

    config, plugin = paths(home, root, project, env)
    settings = store_settings(env, existing_environment(config))
    return [
        merge_json(config, mcp_mutator(config, command, settings)),
        Change(plugin, _read(plugin), plugin_text(command, settings)),
    ]
