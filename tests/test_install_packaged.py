"""install for OpenCode, and install beside contextflow's own Claude Code plugin and Gemini CLI
extension: one set of hooks, one store, and doctor says which way is active."""

import json
from pathlib import Path

import pytest

from contextflow.adapters.cli import main
from contextflow.adapters.hooks import run
from contextflow.admin import packaged
from contextflow.admin.clients import install_client as install
from contextflow.admin.install_check import client_ways
from contextflow.admin.install_opencode import INSTALLED_LINE, installed_settings, plugin_template
from contextflow.core.errors import InputError

REPO = Path(__file__).resolve().parents[1]
CMD = ["/opt/contextflow/bin/contextflow"]
ENV = {"CONTEXTFLOW_STORE": "/data/store"}


@pytest.fixture
def home(tmp_path) -> Path:
    return tmp_path / "home"  # conftest points HOME here


def write(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


# -- OpenCode ---------------------------------------------------------------------------------


def test_opencode_gets_its_mcp_entry_and_the_plugin_with_the_same_store_settings(home):
    config = write(
        home / ".config" / "opencode" / "opencode.json", {"theme": "dark", "mcp": {"gh": {"type": "remote"}}}
    )
    changes = install("opencode", home=home, command=CMD, env={**ENV, "XDG_CONFIG_HOME": str(home / ".config")})
    data = json.loads(config.read_text())
    assert data["theme"] == "dark" and data["mcp"]["gh"] == {"type": "remote"}
    assert data["mcp"]["contextflow"] == {
        "type": "local",
        "command": [*CMD, "serve"],
        "enabled": True,
        "environment": ENV,
    }
    plugin = home / ".config" / "opencode" / "plugins" / "contextflow.js"
    assert [c.path for c in changes] == [config, plugin]
    assert installed_settings(plugin) == ENV
    text = plugin.read_text()
    filled = json.dumps({"command": CMD, "env": ENV})
    assert f"const INSTALLED = {filled}" in text
    assert text.replace(filled, "{}", 1) == plugin_template()  # only that line differs from the shipped plugin
    again = install("opencode", home=home, command=CMD, env={**ENV, "XDG_CONFIG_HOME": str(home / ".config")})
    assert not any(change.changed for change in again)


def test_the_shipped_plugin_is_the_repositorys_and_has_one_line_install_fills(tmp_path):
    template = plugin_template()
    assert template == (REPO / "opencode-plugin" / "contextflow.js").read_text()
    assert template.count(INSTALLED_LINE) == 1


def test_opencode_project_scope_writes_opencode_json_and_the_project_plugin(home, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    install("opencode", project=True, home=home, cwd=work, command=CMD, env=ENV)
    assert "contextflow" in json.loads((work / "opencode.json").read_text())["mcp"]
    assert (work / ".opencode" / "plugins" / "contextflow.js").is_file()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"mcp": {}, // a comment\n}', "is not valid JSON"),
        ('{"mcp": []}', "mcp is not a JSON object"),
        ("[1]", "does not hold a JSON object"),
    ],
)
def test_a_bad_opencode_json_stops_the_install_and_changes_nothing(home, text, message):
    config = write(home / ".config" / "opencode" / "opencode.json", text)
    with pytest.raises(InputError, match=message):
        install("opencode", home=home, command=CMD, env=ENV)
    assert config.read_text() == text
    assert not (home / ".config" / "opencode" / "plugins").exists()


def test_the_cli_names_opencode_and_refuses_an_unknown_client(home, capsys):
    assert main(["install", "opencode", "--dry-run"]) == 0
    assert "opencode.json" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exited:
        main(["install", "vscode"])
    assert exited.value.code == 2 and "'opencode'" in capsys.readouterr().err


# -- beside the plugin and the extension -----------------------------------------------------------


def enable_claude_plugin(home: Path, on: bool = True) -> None:
    path = home / ".claude" / "settings.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    data["enabledPlugins"] = {"contextflow@contextflow": on, "other@x": True}
    write(path, data)


def add_gemini_extension(home: Path) -> None:
    write(home / ".gemini" / "extensions" / "contextflow" / "gemini-extension.json", {"name": "contextflow"})


def test_install_after_the_claude_plugin_writes_none_of_its_own_entries(home, capsys):
    enable_claude_plugin(home)
    assert main(["install", "claude-code"]) == 0
    out = capsys.readouterr().out
    assert "plugin (contextflow@contextflow) is enabled" in out and "claude plugin disable" in out
    assert "hooks" not in json.loads((home / ".claude" / "settings.json").read_text())
    claude_json = home / ".claude.json"
    assert not claude_json.exists() or "contextflow" not in json.loads(claude_json.read_text()).get("mcpServers", {})


def test_install_then_the_plugin_then_install_again_leaves_one_set_of_hooks(home, capsys):
    install("claude-code", home=home, command=CMD, env=ENV)
    write(home / ".claude" / "settings.json", {**json.loads((home / ".claude" / "settings.json").read_text())})
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    settings["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "notify-send done"}]})
    write(home / ".claude" / "settings.json", settings)
    enable_claude_plugin(home)
    ways, problems = client_ways(home, None)
    assert any(w.startswith("claude-code: both the plugin contextflow@contextflow") for w in ways), ways
    assert any("has contextflow twice" in p for p in problems), problems
    install("claude-code", home=home, command=CMD, env=ENV)
    after = json.loads((home / ".claude" / "settings.json").read_text())
    assert after["hooks"] == {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}
    assert "contextflow" not in json.loads((home / ".claude.json").read_text())["mcpServers"]
    ways, problems = client_ways(home, None)
    assert ways == ["claude-code: plugin contextflow@contextflow (active)"] and problems == []


def test_a_disabled_plugin_leaves_install_to_write_its_entries(home):
    enable_claude_plugin(home, on=False)
    install("claude-code", home=home, command=CMD, env=ENV)
    assert "Stop" in json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    assert packaged.claude_plugin(home) is None


def test_install_gemini_beside_the_extension_takes_back_its_server_and_hooks(home):
    install("gemini", home=home, command=CMD, env=ENV)
    add_gemini_extension(home)
    assert client_ways(home, None)[1], "both ways at once is a problem"
    install("gemini", home=home, command=CMD, env=ENV)
    data = json.loads((home / ".gemini" / "settings.json").read_text())
    assert "contextflow" not in data.get("mcpServers", {}) and "hooks" not in data
    assert client_ways(home, None) == (["gemini: extension contextflow (active)"], [])


def test_a_gemini_extension_disabled_for_the_user_is_not_counted(home):
    add_gemini_extension(home)
    write(home / ".gemini" / "extensions" / "extension-enablement.json", {"contextflow": {"overrides": [f"!{home}/*"]}})
    assert packaged.gemini_extension(home) is None
    write(home / ".gemini" / "extensions" / "extension-enablement.json", {"contextflow": {"overrides": [f"{home}/*"]}})
    assert packaged.gemini_extension(home) is not None


def test_a_plugin_hook_stands_aside_while_installs_hooks_are_there(home, tmp_path):
    install("claude-code", home=home, command=CMD, env=ENV)
    env = {"HOME": str(home), "CONTEXTFLOW_STORE": str(tmp_path / "store"), "CONTEXTFLOW_STATE": str(tmp_path / "s")}
    plugin_env = {**env, "CONTEXTFLOW_VIA": "plugin", "CONTEXTFLOW_CLIENT": "claude-code"}
    payload = json.dumps({"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "SessionStart"}).encode()
    from contextflow.app import App

    App.open(env).close()
    main_env = {**env, "CONTEXTFLOW_CLIENT": "claude-code"}
    from contextflow.sessions import core as sessions

    app = App.open(env, cwd=tmp_path)  # the project of the folder the session starts in
    try:
        sessions.write_handoff(app, agent="codex", summary="Parser done", session_id="s0")
    finally:
        app.close()
    assert "Parser done" in run("session-start", payload, main_env)
    assert run("session-start", payload, plugin_env) == ""  # install's hooks run instead
    assert "run instead" in (tmp_path / "s" / "hooks.log").read_text()
    settings = home / ".claude" / "settings.json"
    write(settings, {"enabledPlugins": {"contextflow@contextflow": True}})  # install's hooks gone
    assert "Parser done" in run("session-start", payload, plugin_env)


def test_doctor_lists_how_each_client_has_contextflow(home, tmp_path, capsys):
    install("codex", home=home, command=CMD, env=ENV)
    enable_claude_plugin(home)
    main(["doctor"])
    out = capsys.readouterr().out
    assert "clients:" in out
    assert "  claude-code: plugin contextflow@contextflow (active)" in out
    assert "  codex: contextflow install (server in ~/.codex/config.toml" in out


def test_a_hand_placed_opencode_plugin_reads_the_clients_environment(tmp_path):
    plugin = write(tmp_path / "contextflow.js", plugin_template())
    assert installed_settings(plugin) == {}
    assert installed_settings(tmp_path / "missing.js") is None
    broken = write(tmp_path / "b.js", "const INSTALLED = {not json}\n")
    assert installed_settings(broken) == {}


def test_install_beside_the_plugin_keeps_the_store_it_chose_in_claude_codes_env(home, tmp_path):
    install("claude-code", home=home, command=CMD, env=ENV)
    enable_claude_plugin(home)
    install("claude-code", home=home, command=CMD, env={})  # the shell names no store: the entry's is kept
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert settings["env"] == ENV and "hooks" not in settings
    from contextflow.admin.install_check import configured_places

    places, _ = configured_places(home, None)
    assert [(p.where, p.store) for p in places if p.client == "claude-code"] == [
        ("plugin contextflow@contextflow", "/data/store")
    ]
