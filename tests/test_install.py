"""install: merges into real-looking client configs, keeps the user's settings, and is idempotent."""

import json
import tomllib
from pathlib import Path

import pytest

from contextflow.adapters.cli import main
from contextflow.admin.clients import install_client as install
from contextflow.admin.install import skill_text
from contextflow.core.errors import InputError

CMD = ["/opt/contextflow/bin/contextflow"]
ENV = {"CONTEXTFLOW_STORE": "/data/store"}
STORE = {"CONTEXTFLOW_STORE": "/data/store"}


def hook_cmd(sub: str, client: str = "claude-code") -> str:
    return f"CONTEXTFLOW_STORE=/data/store CONTEXTFLOW_CLIENT={client} {CMD[0]} hook {sub}"


def store_env(command: str) -> dict[str, str]:
    """A hook command's settings but the client's name (which only the hooks carry)."""
    return {k: v for k, v in command_env(command).items() if k != "CONTEXTFLOW_CLIENT"}


@pytest.fixture
def home(tmp_path) -> Path:
    return tmp_path / "home"  # conftest points HOME here


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_claude_code_gets_server_hooks_and_skill_and_keeps_everything_else(home):
    claude_json = write(
        home / ".claude.json",
        json.dumps(
            {
                "numStartups": 42,
                "theme": "dark",
                "projects": {"/work/app": {"allowedTools": ["Bash"]}},
                "mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": []}},
            }
        ),
    )
    settings = write(
        home / ".claude" / "settings.json",
        json.dumps(
            {
                "model": "opus",
                "permissions": {"allow": ["Bash(git status)"]},
                "hooks": {
                    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
                    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}],
                },
            }
        ),
    )
    changes = install("claude-code", command=CMD, env=ENV)
    assert [c.changed for c in changes] == [True, True, True]
    config = json.loads(claude_json.read_text())
    assert config["numStartups"] == 42 and config["projects"]["/work/app"] == {"allowedTools": ["Bash"]}
    assert config["mcpServers"]["github"]["command"] == "gh-mcp"
    assert config["mcpServers"]["contextflow"] == {"type": "stdio", "command": CMD[0], "args": ["serve"], "env": STORE}
    hooks = json.loads(settings.read_text())
    assert hooks["model"] == "opus" and hooks["permissions"] == {"allow": ["Bash(git status)"]}
    assert hooks["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == "guard.sh"
    stop_commands = [h["command"] for g in hooks["hooks"]["Stop"] for h in g["hooks"]]
    assert stop_commands == ["notify-send done", hook_cmd("stop")]
    assert hooks["hooks"]["SessionStart"][0]["hooks"][0]["command"] == hook_cmd("session-start")
    assert hooks["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"] == hook_cmd("prompt-submit")
    skill = (home / ".claude" / "skills" / "contextflow" / "SKILL.md").read_text()
    assert skill == skill_text() and skill.startswith("---\nname: contextflow\n")


def test_installing_twice_changes_nothing(home):
    write(home / ".claude.json", '{"numStartups": 1}')
    install("claude-code", command=CMD, env=ENV)
    files = {p: p.read_text() for p in home.rglob("*") if p.is_file()}
    again = install("claude-code", command=CMD, env=ENV)
    assert not any(c.changed for c in again)
    assert {p: p.read_text() for p in home.rglob("*") if p.is_file()} == files


def test_a_moved_executable_updates_our_hooks_in_place_instead_of_adding_more(home):
    install("claude-code", command=["/old/bin/contextflow"], env=ENV)
    install("claude-code", command=CMD, env=ENV)
    hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    assert [h["command"] for g in hooks["Stop"] for h in g["hooks"]] == [hook_cmd("stop")]
    assert json.loads((home / ".claude.json").read_text())["mcpServers"]["contextflow"]["command"] == CMD[0]


def test_dry_run_shows_the_diff_and_writes_nothing(home):
    original = write(home / ".gemini" / "settings.json", '{"theme": "Dracula"}\n').read_text()
    changes = install("gemini", dry_run=True, command=CMD, env=ENV)
    assert changes[0].changed and '+  "mcpServers": {' in changes[0].diff()
    assert (home / ".gemini" / "settings.json").read_text() == original


def test_project_scope_writes_into_the_current_folder(home, tmp_path, monkeypatch):
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    install("claude-code", project=True, command=CMD, env=ENV)
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["contextflow"]["args"] == ["serve"]
    assert (project / ".claude" / "settings.json").is_file()
    assert (project / ".claude" / "skills" / "contextflow" / "SKILL.md").is_file()
    assert not (home / ".claude.json").exists()


CODEX = """# my codex settings
model = "o3"  # the good one

[mcp_servers.github]
command = "gh-mcp"

[mcp_servers.contextflow]
command = "/old/contextflow"
startup_timeout_sec = 20  # keep me

[mcp_servers.contextflow.env]
CONTEXTFLOW_STORE = "/data/store"

[projects."/work/app"]
trust_level = "trusted"
"""


def test_codex_toml_is_edited_in_place_keeping_comments_and_other_keys(home):
    config = write(home / ".codex" / "config.toml", CODEX)
    install("codex", command=CMD, env=ENV)
    text = config.read_text()
    data = tomllib.loads(text)
    assert data["mcp_servers"]["contextflow"] == {
        "command": CMD[0],
        "args": ["serve"],
        "startup_timeout_sec": 60,  # the user's 20 was shorter than a loaded machine's first start
        "required": True,  # Codex's first tool_search finds contextflow's tools
        "env": {"CONTEXTFLOW_STORE": "/data/store"},
    }
    assert data["model"] == "o3" and data["projects"]["/work/app"]["trust_level"] == "trusted"
    assert "# my codex settings" in text and "# keep me" in text and "/old/contextflow" not in text
    assert not install("codex", command=CMD, env=ENV)[0].changed


def test_codex_gets_a_new_table_when_it_has_none(home):
    config = write(home / ".codex" / "config.toml", 'model = "o3"')
    install("codex", command=[*CMD, "--store", "/x y"], env=ENV)
    data = tomllib.loads(config.read_text())
    assert data["model"] == "o3"
    entry = data["mcp_servers"]["contextflow"]
    assert entry == {
        "command": CMD[0],
        "args": ["--store", "/x y", "serve"],
        "required": True,
        "startup_timeout_sec": 60,  # Codex's default 10 s is too short on a loaded machine
        "env": STORE,
    }


def test_cursor_and_gemini_keep_their_other_servers(home):
    write(home / ".cursor" / "mcp.json", '{"mcpServers": {"db": {"command": "db-mcp", "env": {"X": "1"}}}}')
    install("cursor", command=CMD, env=ENV)
    servers = json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"]
    assert servers["db"] == {"command": "db-mcp", "env": {"X": "1"}}
    assert servers["contextflow"] == {"command": CMD[0], "args": ["serve"], "env": STORE}
    install("gemini", command=CMD, env=ENV)
    gemini = json.loads((home / ".gemini" / "settings.json").read_text())
    assert gemini["mcpServers"]["contextflow"]["args"] == ["serve"]


def test_an_existing_entry_keeps_the_users_env(home):
    write(
        home / ".gemini" / "settings.json",
        json.dumps(
            {"mcpServers": {"contextflow": {"command": "old", "args": [], "env": {"CONTEXTFLOW_TOOLS": "all"}}}}
        ),
    )
    install("gemini", command=CMD, env=ENV)
    entry = json.loads((home / ".gemini" / "settings.json").read_text())["mcpServers"]["contextflow"]
    assert entry == {"command": CMD[0], "args": ["serve"], "env": {"CONTEXTFLOW_TOOLS": "all", **STORE}}


@pytest.mark.parametrize(
    ("client", "path", "text", "message"),
    [
        ("claude-code", ".claude.json", '{"numStartups": 1,', "is not valid JSON"),
        ("claude-code", ".claude/settings.json", '{"hooks": []}', "hooks is not a JSON object"),
        ("claude-code", ".claude/settings.json", '{"hooks": {"Stop": {}}}', "hooks.Stop is not a list"),
        ("gemini", ".gemini/settings.json", "[1]", "does not hold a JSON object"),
        ("codex", ".codex/config.toml", "model = ", "is not valid TOML"),
    ],
)
def test_a_broken_config_stops_the_install_and_nothing_is_changed(home, client, path, text, message):
    write(home / path, text)
    with pytest.raises(InputError, match=message):
        install(client, command=CMD, env=ENV)
    assert (home / path).read_text() == text
    assert sorted(p.relative_to(home).as_posix() for p in home.rglob("*") if p.is_file()) == [path]


def test_the_cli_shows_diffs_then_reports_nothing_to_do(home, capsys):
    assert main(["install", "cursor"]) == 0
    out = capsys.readouterr().out
    assert "created  " in out and '+      "args": [' in out and "Restart cursor" in out
    assert main(["install", "cursor", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["changes"][0]["changed"] is False


def test_the_cli_reports_a_broken_config_on_stderr(home, capsys):
    write(home / ".cursor" / "mcp.json", "{oops")
    assert main(["install", "cursor", "--dry-run"]) == 2
    assert "is not valid JSON" in capsys.readouterr().err


# -- one store for every client ------------------------------------------------------------

import os  # noqa: E402
import shlex  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

from contextflow.admin.install_check import client_store_findings, command_env  # noqa: E402

SETTINGS_ENV = {"CONTEXTFLOW_STORE": "rel/store", "CONTEXTFLOW_STATE": "/var/cf-state", "CONTEXTFLOW_WRITER": "laptop"}


def hook_commands(data):
    return {event: h["command"] for event, groups in data.get("hooks", {}).items() for g in groups for h in g["hooks"]}


@pytest.mark.parametrize("client", ["claude-code", "codex", "gemini", "cursor"])
def test_every_client_gets_the_same_store_settings_in_its_server_entry_and_every_hook(
    home, tmp_path, monkeypatch, client
):
    monkeypatch.chdir(tmp_path)
    install(client, command=CMD, env=SETTINGS_ENV)
    wanted = {**SETTINGS_ENV, "CONTEXTFLOW_STORE": str(tmp_path / "rel" / "store")}
    server = {
        "claude-code": lambda: json.loads((home / ".claude.json").read_text())["mcpServers"]["contextflow"],
        "codex": lambda: tomllib.loads((home / ".codex" / "config.toml").read_text())["mcp_servers"]["contextflow"],
        "gemini": lambda: json.loads((home / ".gemini" / "settings.json").read_text())["mcpServers"]["contextflow"],
        "cursor": lambda: json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"]["contextflow"],
    }[client]()
    assert server["env"] == wanted
    hook_file = {
        "claude-code": home / ".claude" / "settings.json",
        "codex": home / ".codex" / "hooks.json",
        "gemini": home / ".gemini" / "settings.json",
        "cursor": None,
    }[client]
    if hook_file is None:
        return
    commands = hook_commands(json.loads(hook_file.read_text()))
    expected_events = {"gemini": {"SessionStart", "BeforeAgent", "AfterAgent", "SessionEnd"}}.get(
        client, {"SessionStart", "UserPromptSubmit", "Stop", "SessionEnd", "PreCompact"}
    )
    assert set(commands) == expected_events
    assert all(store_env(command) == wanted for command in commands.values())


def test_gemini_hook_timeouts_are_in_milliseconds(home):
    install("gemini", command=CMD, env=ENV)
    data = json.loads((home / ".gemini" / "settings.json").read_text())
    assert {h["timeout"] for groups in data["hooks"].values() for g in groups for h in g["hooks"]} == {30_000}


def test_reinstalling_with_another_store_updates_the_codex_env_table_in_place(home):
    config = write(
        home / ".codex" / "config.toml",
        CODEX.replace(
            'CONTEXTFLOW_STORE = "/data/store"', 'CONTEXTFLOW_STORE = "/data/store"  # mine\nCONTEXTFLOW_TOOLS = "all"'
        ),
    )
    install("codex", command=CMD, env={"CONTEXTFLOW_STORE": "/new/store"})
    data = tomllib.loads(config.read_text())
    assert data["mcp_servers"]["contextflow"]["env"] == {"CONTEXTFLOW_STORE": "/new/store", "CONTEXTFLOW_TOOLS": "all"}
    assert data["projects"]["/work/app"]["trust_level"] == "trusted" and "# keep me" in config.read_text()
    assert not any(c.changed for c in install("codex", command=CMD, env={"CONTEXTFLOW_STORE": "/new/store"}))


def test_a_stop_hook_command_as_installed_writes_to_the_servers_store(home, tmp_path):
    store = tmp_path / "shared-store"
    store.mkdir()
    command = [sys.executable, "-m", "contextflow"]
    install(
        "claude-code", command=command, env={"CONTEXTFLOW_STORE": str(store), "CONTEXTFLOW_STATE": str(tmp_path / "st")}
    )
    stop = hook_commands(json.loads((home / ".claude" / "settings.json").read_text()))["Stop"]
    clean = {"HOME": str(home), "PATH": os.environ.get("PATH", "")}  # as a client starts it: no CONTEXTFLOW_*
    payload = {"session_id": "s", "last_assistant_message": '<ctx:remember type="fact">one store</ctx:remember>'}
    done = subprocess.run(
        ["sh", "-c", stop],
        input=json.dumps(payload),
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert list(store.glob("events.*.jsonl")) and "one store" in next(store.glob("events.*.jsonl")).read_text()
    assert shlex.split(stop)[0] == f"CONTEXTFLOW_STORE={store}"


def test_doctor_finds_clients_that_disagree_on_the_store(home, tmp_path, capsys):
    install("claude-code", command=CMD, env={"CONTEXTFLOW_STORE": "/data/a"})
    assert client_store_findings(home, tmp_path) == []
    install("codex", command=CMD, env={"CONTEXTFLOW_STORE": "/data/b"})
    found = client_store_findings(home, tmp_path)
    assert len(found) == 1 and "disagree on the store" in found[0]
    assert "codex server in ~/.codex/config.toml: /data/b" in found[0] and "/data/a" in found[0]
    assert max(map(len, found[0].splitlines())) < 160  # a line per store, not one long line
    assert main(["doctor"]) == 1 and "disagree on the store" in capsys.readouterr().out  # exit 1: problems found


def test_doctor_finds_a_server_and_its_hooks_on_different_stores(home, tmp_path):
    install("claude-code", command=CMD, env={"CONTEXTFLOW_STORE": "/data/a"})
    config = json.loads((home / ".claude.json").read_text())
    del config["mcpServers"]["contextflow"]["env"]  # as `claude mcp add` without -e leaves it
    (home / ".claude.json").write_text(json.dumps(config))
    found = client_store_findings(home, tmp_path)
    assert found and "server in ~/.claude.json: (the default store)" in found[0]
    assert "Stop hook in ~/.claude/settings.json: /data/a" in found[0]


def test_an_unreadable_client_config_is_reported_not_fatal(home, tmp_path):
    write(home / ".cursor" / "mcp.json", "{broken")
    found = client_store_findings(home, tmp_path)
    assert len(found) == 1 and "cannot read ~/.cursor/mcp.json" in found[0]


def test_an_inline_codex_env_table_is_rewritten_keeping_the_users_keys(home):
    config = write(
        home / ".codex" / "config.toml",
        '[mcp_servers.contextflow]\ncommand = "contextflow"\n'
        'args = ["serve"]\n'
        'env = { CONTEXTFLOW_STORE = "~/Sync/contextflow", MCP_SHARED_CONTEXT_PROJECT = "p" }\n',
    )
    settings = {"CONTEXTFLOW_STORE": "/new/store", "CONTEXTFLOW_WRITER": "laptop"}
    install("codex", command=CMD, env=settings)
    data = tomllib.loads(config.read_text())
    assert data["mcp_servers"]["contextflow"]["env"] == {
        "MCP_SHARED_CONTEXT_PROJECT": "p",
        "CONTEXTFLOW_STORE": "/new/store",
        "CONTEXTFLOW_WRITER": "laptop",
    }
    assert not install("codex", command=CMD, env=settings)[0].changed


ADDED_BY_HAND = {  # as `claude mcp add -e ...` / `codex mcp add --env ...` leave the server entry
    "claude-code": (
        ".claude.json",
        json.dumps(
            {
                "mcpServers": {
                    "contextflow": {
                        "type": "stdio",
                        "command": "contextflow",
                        "args": ["serve"],
                        "env": {
                            "CONTEXTFLOW_STORE": "/data/synced",
                            "CONTEXTFLOW_WRITER": "laptop",
                            "MCP_SHARED_CONTEXT_PROJECT": "p",
                        },
                    }
                }
            }
        ),
    ),
    "codex": (
        ".codex/config.toml",
        '[mcp_servers.contextflow]\ncommand = "contextflow"\nargs = ["serve"]\n\n'
        '[mcp_servers.contextflow.env]\nCONTEXTFLOW_STORE = "/data/synced"\nCONTEXTFLOW_WRITER = "laptop"\n'
        'MCP_SHARED_CONTEXT_PROJECT = "p"\n',
    ),
}
HOOK_FILES = {"claude-code": ".claude/settings.json", "codex": ".codex/hooks.json"}


def server_env(home: Path, client: str) -> dict[str, str]:
    path, _text = ADDED_BY_HAND[client]
    text = (home / path).read_text()
    data = json.loads(text)["mcpServers"] if client == "claude-code" else tomllib.loads(text)["mcp_servers"]
    return dict(data["contextflow"]["env"])


@pytest.mark.parametrize("client", ["claude-code", "codex"])
def test_install_with_no_store_in_the_shell_keeps_the_store_the_server_entry_already_names(home, client):
    path, text = ADDED_BY_HAND[client]
    write(home / path, text)
    install(client, command=CMD, env={})
    assert server_env(home, client) == {
        "CONTEXTFLOW_STORE": "/data/synced",
        "CONTEXTFLOW_WRITER": "laptop",
        "MCP_SHARED_CONTEXT_PROJECT": "p",
    }
    commands = hook_commands(json.loads((home / HOOK_FILES[client]).read_text()))
    assert commands and all(
        store_env(c) == {"CONTEXTFLOW_STORE": "/data/synced", "CONTEXTFLOW_WRITER": "laptop"} for c in commands.values()
    )


@pytest.mark.parametrize("client", ["claude-code", "codex"])
def test_a_store_named_in_the_shell_replaces_the_one_the_server_entry_names(home, client):
    path, text = ADDED_BY_HAND[client]
    write(home / path, text)
    install(client, command=CMD, env={"CONTEXTFLOW_STORE": "/data/new"})
    assert server_env(home, client) == {"CONTEXTFLOW_STORE": "/data/new", "MCP_SHARED_CONTEXT_PROJECT": "p"}
    commands = hook_commands(json.loads((home / HOOK_FILES[client]).read_text()))
    assert all(store_env(c) == {"CONTEXTFLOW_STORE": "/data/new"} for c in commands.values())


@pytest.mark.parametrize("text", ['mcp_servers = "x"\n', "[mcp_servers]\ncontextflow = 3\n"])
def test_a_codex_server_table_that_is_not_a_table_is_refused_and_left_alone(home, text):
    config = write(home / ".codex" / "config.toml", text)
    with pytest.raises(InputError, match=r"mcp_servers\.contextflow is not a table"):
        install("codex", command=CMD, env=ENV)
    assert config.read_text() == text


def test_a_codex_env_that_is_not_a_table_is_replaced_by_the_store_settings(home):
    config = write(home / ".codex" / "config.toml", '[mcp_servers.contextflow]\ncommand = "c"\nenv = "junk"\n')
    install("codex", command=CMD, env=ENV)
    assert tomllib.loads(config.read_text())["mcp_servers"]["contextflow"]["env"] == STORE


def test_a_codex_entry_with_values_over_several_lines_is_updated(home):
    config = write(home / ".codex" / "config.toml", '[mcp_servers.contextflow]\ncommand = "c"\nargs = [\n  "old",\n]\n')
    install("codex", command=CMD, env=ENV)
    assert tomllib.loads(config.read_text())["mcp_servers"]["contextflow"]["args"] == ["serve"]
    assert not install("codex", command=CMD, env=ENV)[0].changed


def test_a_client_naming_the_default_store_and_one_naming_none_agree(home, tmp_path, capsys):
    """`install opencode` writes the store it resolved; a client configured without CONTEXTFLOW_STORE uses the
    same default folder: one memory, no "split" warning, no doctor problem."""
    from contextflow.admin.install_check import install_warnings
    from contextflow.core.locate import default_store_folder

    install("claude-code", command=CMD, env={})
    config = json.loads((home / ".claude.json").read_text())
    del config["mcpServers"]["contextflow"]["env"]  # as `claude mcp add` without -e (or a plugin) leaves it
    (home / ".claude.json").write_text(json.dumps(config))
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    for groups in settings["hooks"].values():
        for group in groups:
            for hook in group["hooks"]:
                hook["command"] = " ".join(w for w in shlex.split(hook["command"]) if "=" not in w)
    (home / ".claude" / "settings.json").write_text(json.dumps(settings))
    install("codex", command=CMD, env={"CONTEXTFLOW_STORE": str(default_store_folder())})
    assert client_store_findings(home, tmp_path) == []
    assert install_warnings("codex", home, tmp_path) == []
    install("codex", command=CMD, env={"CONTEXTFLOW_STORE": "/data/elsewhere"})
    assert install_warnings("codex", home, tmp_path) and client_store_findings(home, tmp_path)


def test_a_longer_codex_startup_timeout_the_user_set_is_kept(home):
    config = write(home / ".codex" / "config.toml", "[mcp_servers.contextflow]\nstartup_timeout_sec = 120\n")
    install("codex", command=CMD, env=ENV)
    assert tomllib.loads(config.read_text())["mcp_servers"]["contextflow"]["startup_timeout_sec"] == 120
