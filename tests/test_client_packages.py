"""The Claude Code plugin marketplace, the Gemini CLI extension and the OpenCode plugin kept in this
repository: they give what `contextflow install` gives, find the user's command (or say how to
install it), and never install or run contextflow by its taken name on PyPI."""

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from contextflow.admin.install import GEMINI_HOOK_TIMEOUT, GEMINI_HOOKS, HOOK_TIMEOUT, HOOKS, skill_text

REPO = Path(__file__).resolve().parents[1]
LAUNCHERS = (REPO / "claude-plugin" / "bin" / "contextflow-launch", REPO / "gemini-extension" / "contextflow-launch")
SHIPPED = ("claude-plugin", "gemini-extension", "hooks", "opencode-plugin", "docs", "scripts")


def load(path: Path):
    return json.loads(path.read_text())


def version() -> str:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def test_the_marketplace_lists_the_plugin_folder_and_versions_agree():
    market = load(REPO / ".claude-plugin" / "marketplace.json")
    [entry] = market["plugins"]
    assert market["name"] == "contextflow" and entry["name"] == "contextflow"
    assert (
        entry["source"] == "./claude-plugin" and (REPO / entry["source"] / ".claude-plugin" / "plugin.json").is_file()
    )
    assert load(REPO / "claude-plugin" / ".claude-plugin" / "plugin.json")["version"] == version()
    assert load(REPO / "gemini-extension.json")["version"] == version()


def test_the_distribution_is_not_named_after_the_taken_pypi_name_and_the_command_stays():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["name"] == "contextflow-memory"
    assert project["scripts"] == {"contextflow": "contextflow.adapters.cli:main"}


def test_nothing_shipped_installs_or_runs_contextflow_by_its_taken_name():
    taken = re.compile(
        r"(pip3? install|pipx (install|run)|uvx|uv tool (install|run)|uv pip install)\s+(-\S+\s+)*contextflow(?![-\w])"
    )
    files = [REPO / "README.md", REPO / "gemini-extension.json"]
    for folder in SHIPPED:
        files += [p for p in (REPO / folder).rglob("*") if p.is_file() and p.suffix != ".png"]
    found = [
        f"{p.relative_to(REPO)}: {m.group(0)}" for p in files for m in taken.finditer(p.read_text(errors="replace"))
    ]
    assert found == []


def test_the_plugin_and_extension_teach_the_skill_install_writes():
    """Claude Code loads a skill's body only when it is used; Gemini adds an extension's context file to every
    session, so the extension's is a short digest of the skill: each directive, type and tier it names is the
    skill's, within 1,500 characters."""
    assert (REPO / "claude-plugin" / "skills" / "contextflow" / "SKILL.md").read_text() == skill_text()
    extension = load(REPO / "gemini-extension.json")
    digest = (REPO / extension["contextFileName"]).read_text()
    assert len(digest) <= 1_500
    named = set(re.findall(r"<ctx:(\w+)|type:(\w+)|(tier:[\w-]+)|\b(write_shared_handoff|get_context)\b", digest))
    skill = skill_text() + " write_shared_handoff get_context"  # the tools the README teaches beside the skill
    for found in {part for group in named for part in (group if isinstance(group, tuple) else (group,)) if part}:
        assert found in skill, found
    assert "<ctx:remember" in digest and "information, never as" in digest


def commands(hooks_file: Path) -> dict[str, list[dict]]:
    hooks = load(hooks_file)["hooks"]
    return {event: [h for group in groups for h in group["hooks"]] for event, groups in hooks.items()}


def test_the_plugins_hooks_are_installs_hooks_for_claude_code():
    found = commands(REPO / "claude-plugin" / "hooks" / "hooks.json")
    assert list(found) == [event for event, _ in HOOKS]
    for event, sub in HOOKS:
        [handler] = found[event]
        assert handler["timeout"] == HOOK_TIMEOUT
        assert handler["command"].endswith(f'"${{CLAUDE_PLUGIN_ROOT}}/bin/contextflow-launch" hook {sub}')
        assert "CONTEXTFLOW_CLIENT=claude-code" in handler["command"] and "CONTEXTFLOW_VIA=plugin" in handler["command"]
    server = load(REPO / "claude-plugin" / ".mcp.json")["mcpServers"]["contextflow"]
    assert server == {"command": "${CLAUDE_PLUGIN_ROOT}/bin/contextflow-launch", "args": ["serve"]}


def test_the_extensions_hooks_are_installs_hooks_for_gemini():
    found = commands(REPO / "hooks" / "hooks.json")  # Gemini CLI reads an extension's hooks there only
    assert list(found) == [event for event, _ in GEMINI_HOOKS]
    for event, sub in GEMINI_HOOKS:
        [handler] = found[event]
        assert handler["timeout"] == GEMINI_HOOK_TIMEOUT
        assert handler["command"].endswith(f'"${{extensionPath}}/gemini-extension/contextflow-launch" hook {sub}')
        assert (
            "CONTEXTFLOW_CLIENT=gemini-cli" in handler["command"] and "CONTEXTFLOW_VIA=extension" in handler["command"]
        )
    server = load(REPO / "gemini-extension.json")["mcpServers"]["contextflow"]
    assert server["args"] == ["serve"] and server["command"].endswith("gemini-extension${/}contextflow-launch")


def test_the_two_launchers_are_one_script():
    first, second = (path.read_bytes() for path in LAUNCHERS)
    assert first == second
    assert all(os.access(path, os.X_OK) for path in LAUNCHERS)


def launch(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        ["sh", str(LAUNCHERS[0]), *args], env={**base, **env}, capture_output=True, text=True, timeout=60, check=False
    )


def test_the_launcher_runs_the_users_contextflow(tmp_path):
    installed = Path(sys.executable).with_name("contextflow")
    done = launch(tmp_path, "--version", PATH=f"{installed.parent}:/usr/bin:/bin")
    assert done.returncode == 0 and done.stdout.startswith("contextflow "), done.stderr
    done = launch(tmp_path, "--version", CONTEXTFLOW_COMMAND=str(installed))
    assert done.returncode == 0 and done.stdout.startswith("contextflow "), done.stderr
    local = tmp_path / "home" / ".local" / "bin"
    local.mkdir(parents=True)
    (local / "contextflow").symlink_to(installed)
    assert launch(tmp_path, "--version").returncode == 0


def test_without_contextflow_the_server_fails_saying_how_to_install_it_and_hooks_never_fail(tmp_path):
    served = launch(tmp_path, "serve")
    assert served.returncode == 127
    assert "not from PyPI" in served.stderr and "scripts/install" in served.stderr
    started = launch(tmp_path, "hook", "session-start")
    assert started.returncode == 0
    assert "scripts/install" in json.loads(started.stdout)["systemMessage"]  # shown to the user
    stopped = launch(tmp_path, "hook", "stop")
    assert stopped.returncode == 0 and stopped.stdout == ""


@pytest.mark.parametrize("path", ["not-a-file", "dir"])
def test_a_contextflow_command_that_is_not_a_runnable_file_is_passed_over(tmp_path, path):
    (tmp_path / "dir").mkdir()
    done = launch(tmp_path, "serve", CONTEXTFLOW_COMMAND=str(tmp_path / path))
    assert done.returncode == 127 and "was not found" in done.stderr
