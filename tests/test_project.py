"""The project follows the repository: remote normalisation, the walk up to the git root,
hostile git files, the env override, and the adapters (CLI, hooks) that pass the working folder."""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path

import pytest

from contextflow.adapters.cli import main
from contextflow.app import App
from contextflow.core.project import (
    MAX_CONFIG_BYTES,
    RULE_ENV,
    RULE_PATH,
    RULE_REMOTE,
    RULE_REPO_PATH,
    RULE_ROOT_COMMIT,
    former_project,
    normalise_remote,
    project_for,
    recorded_in,
    remote_url,
    settings_for,
)
from contextflow.graph import writes


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://github.com/acme/shop.git", "acme/shop"),
        ("https://github.com/acme/shop", "acme/shop"),
        ("https://github.com/acme/shop/", "acme/shop"),
        ("https://github.com/acme/shop.git/", "acme/shop"),
        ("HTTPS://GitHub.COM/Acme/Shop.git", "acme/shop"),
        ("https://user:s3cret-token@github.com/acme/shop.git", "acme/shop"),
        ("http://github.com:8080/acme/shop", "acme/shop"),
        ("git@github.com:acme/shop.git", "acme/shop"),
        ("git@github.com:acme/shop", "acme/shop"),
        ("github.com:acme/shop.git", "acme/shop"),
        ("ssh://git@github.com/acme/shop.git", "acme/shop"),
        ("ssh://git@github.com:22/acme/shop.git/", "acme/shop"),
        ("git://github.com/acme/shop.git", "acme/shop"),
        ("https://gitlab.com/group/sub/deeper/repo.git", "group/sub/deeper/repo"),
        ("git@gitlab.example.org:group/sub/repo.git", "group/sub/repo"),
        ("ssh://host/~alice/repo.git", "alice/repo"),
        ("https://github.com/acme/shop.git?x=1#frag", "acme/shop"),
        ("/srv/git/shop.git", None),  # a local path names no repository another machine has
        ("file:///srv/git/shop.git", None),
        ("../shop", None),
        ("", None),
        ("not a url", None),
        ("https://github.com/", None),
        ("https://github.com/acme/\x07shop", None),
        ("https://github.com/acme/../shop", None),
        ("ht tp://x/y", None),
    ],
)
def test_remote_urls_normalise_to_owner_repo(url, expected):
    assert normalise_remote(url) == expected


def test_origin_wins_else_the_first_remote():
    config = (
        '[core]\n\tbare = false\n[remote "upstream"]\n\turl = git@github.com:up/shop.git\n'
        '[remote "origin"]\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n\turl = https://github.com/me/shop.git\n'
    )
    assert remote_url(config) == "https://github.com/me/shop.git"
    assert remote_url(config.replace('"origin"', '"fork"')) == "git@github.com:up/shop.git"
    assert remote_url('[remote "origin"]\n[branch "main"]\n\turl = nope\n') is None


def make_repo(root: Path, config: str | bytes | None = None) -> Path:
    (root / ".git").mkdir(parents=True)
    if config is not None:
        target = root / ".git" / "config"
        target.write_bytes(config.encode() if isinstance(config, str) else config)
    return root


ORIGIN = '[remote "origin"]\n\turl = git@github.com:Acme/Shop.git\n'


def test_a_subfolder_of_a_repository_takes_the_repositorys_remote(tmp_path):
    make_repo(tmp_path / "shop", ORIGIN)
    deep = tmp_path / "shop" / "src" / "pkg"
    deep.mkdir(parents=True)
    assert project_for(deep) == ("acme/shop", RULE_REMOTE)
    assert project_for(tmp_path / "shop") == ("acme/shop", RULE_REMOTE)


def test_the_current_folder_is_the_default(tmp_path, monkeypatch):
    make_repo(tmp_path / "shop", ORIGIN)
    monkeypatch.chdir(tmp_path / "shop")
    monkeypatch.setenv("PWD", "/somewhere/else")  # os.getcwd(), never $PWD
    assert project_for() == ("acme/shop", RULE_REMOTE)


def test_a_repository_without_a_remote_or_commit_is_its_path(tmp_path):
    make_repo(tmp_path / "My Tool", "[core]\n\tbare = false\n")
    assert project_for(tmp_path / "My Tool") == (str(tmp_path / "My Tool"), RULE_REPO_PATH)
    make_repo(tmp_path / "bare-less")  # no config at all
    assert project_for(tmp_path / "bare-less" / "src") == (str(tmp_path / "bare-less"), RULE_REPO_PATH)


def test_a_plain_folder_is_its_own_project(tmp_path):
    (tmp_path / "plain").mkdir()
    assert project_for(tmp_path / "plain") == (str(tmp_path / "plain"), RULE_PATH)
    assert project_for(tmp_path / "does" / "not" / "exist") == (str(tmp_path / "does" / "not" / "exist"), RULE_PATH)


def test_a_worktree_or_submodule_git_file_is_followed_to_its_config(tmp_path):
    main_repo = make_repo(tmp_path / "main", ORIGIN)
    worktree_git = main_repo / ".git" / "worktrees" / "feature"
    worktree_git.mkdir(parents=True)
    (worktree_git / "commondir").write_text("../..\n")
    feature = tmp_path / "feature"
    feature.mkdir()
    (feature / ".git").write_text(f"gitdir: {worktree_git}\n")
    assert project_for(feature) == ("acme/shop", RULE_REMOTE)
    (main_repo / ".git" / "config").write_text("[core]\n")
    assert project_for(feature) == (str(main_repo), RULE_REPO_PATH)  # a linked worktree is its repository's
    sub_git = main_repo / ".git" / "modules" / "lib"
    sub_git.mkdir(parents=True)
    (sub_git / "config").write_text('[remote "origin"]\n\turl = https://gitlab.com/g/sub/lib.git\n')
    lib = main_repo / "lib"
    lib.mkdir()
    (lib / ".git").write_text("gitdir: ../.git/modules/lib\n")
    assert project_for(lib) == ("g/sub/lib", RULE_REMOTE)


@pytest.mark.parametrize(
    "config",
    [
        '[remote "origin"]\n\turl = https://github.com/acme/sh\x1bop.git\n',  # a control character
        '[remote "origin"]\n\turl = https://github.com/' + "a" * 5000 + "/shop.git\n",  # too long
        b'[remote "origin"]\n\turl = \xff\xfe\x00\x01\n',  # not text
        "\n" * MAX_CONFIG_BYTES + '[remote "origin"]\n\turl = git@github.com:acme/shop.git\n',  # past the limit
        '[remote "origin"\n\turl = git@github.com:acme/shop.git\n',  # a broken section
    ],
)
def test_a_hostile_config_falls_back_to_the_next_rule(tmp_path, config):
    make_repo(tmp_path / "repo", config)
    assert project_for(tmp_path / "repo") == (str(tmp_path / "repo"), RULE_REPO_PATH)


def test_a_hostile_git_file_or_folder_name_falls_back_cleanly(tmp_path):
    odd = tmp_path / "odd\x07name"
    odd.mkdir()
    (odd / ".git").write_text("gitdir: /nowhere/at/all\n")
    name, rule = project_for(odd)  # no remote, and the folder's path is no project name: its hash names it
    assert rule == RULE_REPO_PATH and name.startswith("folder@") and "\x07" not in name
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / ".git").write_bytes(b"\x00" * 10_000)
    assert project_for(tmp_path / "junk") == (str(tmp_path / "junk"), RULE_REPO_PATH)


def test_no_git_process_is_started(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("project_for must not run git")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    make_repo(tmp_path / "shop", ORIGIN)
    assert project_for(tmp_path / "shop")[0] == "acme/shop"


def test_the_environment_wins_over_the_repository(tmp_path):
    make_repo(tmp_path / "shop", ORIGIN)
    env = {"MCP_SHARED_CONTEXT_PROJECT": "  mine  "}
    settings = settings_for(tmp_path / "state", env, tmp_path / "shop")
    assert (settings.default_project, settings.project_rule) == ("mine", RULE_ENV)
    settings = settings_for(tmp_path / "state", {}, tmp_path / "shop")
    assert (settings.default_project, settings.project_rule) == ("acme/shop", RULE_REMOTE)
    assert settings_for(tmp_path / "state", {}).default_project == "shared"  # no folder given: shared


def test_the_cli_takes_the_project_from_the_current_folder_and_doctor_says_why(tmp_path, monkeypatch, capsys):
    make_repo(tmp_path / "shop", ORIGIN)
    (tmp_path / "shop" / "src").mkdir()
    monkeypatch.chdir(tmp_path / "shop" / "src")
    assert main(["note", "from the shop", "--session", "s1", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["project"] == "acme/shop"
    assert main(["note", "named", "--session", "s1", "--project", "other", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["project"] == "other"  # an argument still wins
    code = main(["doctor"])
    out = capsys.readouterr().out
    assert "project:      acme/shop (chosen by git remote)" in out
    assert code in (0, 1)
    main(["doctor", "--format", "json"])
    info = json.loads(capsys.readouterr().out)
    assert (info["default_project"], info["project_chosen_by"]) == ("acme/shop", "git remote")


# -- hooks: the payload's cwd ---------------------------------------------------------------


def run_hook(capsys, monkeypatch, name: str, body: dict[str, object]) -> str:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(body).encode())))
    assert main(["hook", name]) == 0
    return capsys.readouterr().out


def start_context(capsys, monkeypatch, cwd: Path) -> str:
    out = run_hook(capsys, monkeypatch, "session-start", {"session_id": "x", "cwd": str(cwd), "source": "startup"})
    return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out.strip() else ""


def remember(capsys, monkeypatch, cwd: Path, text: str, **extra: object) -> None:
    body = {"session_id": "s", "cwd": str(cwd), "hook_event_name": "Stop", "last_assistant_message": text, **extra}
    run_hook(capsys, monkeypatch, "stop", body)


def test_a_note_in_repository_a_stays_there_while_shared_and_pinned_knowledge_reach_both(
    app, tmp_path, capsys, monkeypatch
):
    repo_a = make_repo(tmp_path / "a", '[remote "origin"]\n\turl = git@github.com:acme/a.git\n')
    repo_b = make_repo(tmp_path / "b", '[remote "origin"]\n\turl = git@github.com:acme/b.git\n')
    writes.add_node(app, type="fact", content="Deploys need a VPN", tags=["tier:pinned"])  # shared, pinned
    writes.add_node(app, type="fact", content="Old shared reference", tags=["tier:reference"])  # a store from before
    remember(
        capsys,
        monkeypatch,
        repo_a,
        '<ctx:remember type="decision" tags="tier:reference">A uses Postgres</ctx:remember>',
    )
    remember(capsys, monkeypatch, repo_a, '<ctx:remember type="fact" tags="tier:pinned">A is pinned</ctx:remember>')
    app.close()
    in_a, in_b = start_context(capsys, monkeypatch, repo_a / "src"), start_context(capsys, monkeypatch, repo_b)
    assert "A uses Postgres" in in_a and "A uses Postgres" not in in_b
    for context in (in_a, in_b):
        assert "Deploys need a VPN" in context and "Old shared reference" in context and "A is pinned" in context
    reopened = App.open()
    try:
        graph = writes.graph(reopened)
        tags = {graph.nodes[i].content: graph.tags_of(i) for i in graph.live}
    finally:
        reopened.close()
    assert "project:acme/a" in tags["A uses Postgres"] and not any(
        t.startswith("project:") for t in tags["Deploys need a VPN"]
    )


# -- the fixes found in the live loop -------------------------------------------------------


def agents() -> dict[str, str]:
    opened = App.open()
    try:
        state = writes.graph(opened)
        return {state.nodes[i].content: state.nodes[i].agent for i in state.live}
    finally:
        opened.close()


def test_a_directive_is_attributed_to_the_client_that_wrote_it(tmp_path, capsys, monkeypatch):
    gemini = {"session_id": "g", "cwd": str(tmp_path), "hook_event_name": "AfterAgent", "prompt": "go"}
    run_hook(
        capsys, monkeypatch, "stop", {**gemini, "prompt_response": '<ctx:remember type="fact">g fact</ctx:remember>'}
    )
    monkeypatch.setenv("CONTEXTFLOW_CLIENT", "codex")  # what `install codex` puts in each hook command
    remember(capsys, monkeypatch, tmp_path, '<ctx:remember type="fact">x fact</ctx:remember>')
    monkeypatch.delenv("CONTEXTFLOW_CLIENT")
    monkeypatch.setenv("CLAUDECODE", "1")
    remember(capsys, monkeypatch, tmp_path, '<ctx:remember type="fact">c fact</ctx:remember>')
    assert agents() == {"g fact": "gemini-cli", "x fact": "codex", "c fact": "claude-code"}


def test_install_puts_the_client_in_every_hook_command(tmp_path):
    from contextflow.admin.clients import install_client as install
    from contextflow.admin.install_check import command_env

    home = tmp_path / "home"
    for client, path in (("codex", ".codex/hooks.json"), ("gemini", ".gemini/settings.json")):
        install(client, home=home, command=["/bin/contextflow"], env={"CONTEXTFLOW_STORE": "/s"})
        hooks = json.loads((home / path).read_text())["hooks"]
        commands = [h["command"] for groups in hooks.values() for g in groups for h in g["hooks"]]
        wanted = {"codex": "codex", "gemini": "gemini-cli"}[client]
        assert commands and all(command_env(c)["CONTEXTFLOW_CLIENT"] == wanted for c in commands)


@pytest.mark.parametrize("variant", ["Staging is eu-west-1", "staging  is\nEU-west-1.", "Staging is eu-west-1!  "])
def test_a_remember_differing_in_case_space_or_final_punctuation_is_one_node(app, variant):
    first = writes.add_node(app, type="fact", content="Staging is eu-west-1", tags=["tier:reference"])
    again = writes.add_node(app, type="fact", content=variant, tags=["tier:reference"])
    assert again.id == first.id and len(writes.graph(app).live) == 1
    assert writes.graph(app).nodes[first.id].content == "Staging is eu-west-1"  # the stored text is the first one's
    other = writes.add_node(app, type="fact", content="Staging is eu-west-2", tags=["tier:reference"])
    assert other.id != first.id


def test_an_untagged_fact_is_shown_at_session_start_after_pinned(app, tmp_path, capsys, monkeypatch):
    remember(capsys, monkeypatch, tmp_path, '<ctx:remember type="fact">Untagged but worth knowing</ctx:remember>')
    writes.add_node(app, type="fact", content="Pinned rule", tags=["tier:pinned"])
    app.close()
    context = start_context(capsys, monkeypatch, tmp_path)
    assert "Pinned rule" in context and "Untagged but worth knowing" in context
    assert context.index("Pinned rule") < context.index("Untagged but worth knowing")


def test_install_warns_when_another_client_uses_a_different_store(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CONTEXTFLOW_STORE", str(tmp_path / "synced"))
    assert main(["install", "claude-code"]) == 0
    assert "warning" not in capsys.readouterr().err
    monkeypatch.setenv("CONTEXTFLOW_STORE", str(tmp_path / "local"))
    assert main(["install", "gemini"]) == 0
    err = capsys.readouterr().err
    assert "warning: gemini now uses the store" in err and str(tmp_path / "synced") in err and "claude-code" in err
    assert main(["doctor"]) == 1  # problems found: the clients disagree
    out = capsys.readouterr().out
    assert "disagree on the store" in out
    monkeypatch.setenv("CONTEXTFLOW_STORE", str(tmp_path / "synced"))
    main(["install", "gemini"])
    assert "warning" not in capsys.readouterr().err


# -- identity that cannot collide: root commits, paths, the cache --------------------------------

GIT_ENV = {
    "PATH": os.environ.get("PATH", ""),
    "HOME": os.devnull,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=folder, env=GIT_ENV, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def committed(folder: Path, text: str) -> Path:
    """A repository in `folder` with one commit of its own (user set in the repository only)."""
    folder.mkdir(parents=True)
    git(folder, "init", "-q", "-b", "main")
    git(folder, "config", "user.name", "t")
    git(folder, "config", "user.email", "t@example.invalid")
    (folder / "README.md").write_text(text)
    git(folder, "add", "-A")
    git(folder, "commit", "-qm", text)
    return folder


def test_two_repositories_without_a_remote_in_folders_named_alike_are_two_projects(tmp_path):
    one, two = committed(tmp_path / "x" / "app", "one"), committed(tmp_path / "y" / "app", "two")
    (name_one, rule_one), (name_two, rule_two) = project_for(one), project_for(two)
    assert rule_one == rule_two == RULE_ROOT_COMMIT and name_one != name_two
    root = git(one, "rev-list", "--max-parents=0", "HEAD")
    assert name_one == f"repo@{root[:12]}"


def test_every_clone_of_a_repository_is_one_project(tmp_path):
    origin = committed(tmp_path / "app", "one")
    git(tmp_path, "clone", "-q", str(origin), str(tmp_path / "elsewhere" / "app-copy"))
    git(tmp_path, "clone", "-q", str(tmp_path / "elsewhere" / "app-copy"), str(tmp_path / "third"))
    names = {project_for(folder) for folder in (origin, tmp_path / "elsewhere" / "app-copy", tmp_path / "third")}
    assert len(names) == 1 and next(iter(names))[1] == RULE_ROOT_COMMIT  # a local-path remote is no remote


def test_two_plain_folders_named_alike_are_two_projects(tmp_path):
    (tmp_path / "a" / "notes").mkdir(parents=True)
    (tmp_path / "b" / "notes").mkdir(parents=True)
    assert project_for(tmp_path / "a" / "notes") != project_for(tmp_path / "b" / "notes")
    assert project_for(tmp_path / "a" / "notes")[1] == RULE_PATH


def test_a_repository_with_no_commit_is_its_path_until_its_first_commit(tmp_path):
    folder = tmp_path / "fresh"
    folder.mkdir()
    git(folder, "init", "-q")
    assert project_for(folder) == (str(folder), RULE_REPO_PATH)
    git(folder, "config", "user.name", "t")
    git(folder, "config", "user.email", "t@example.invalid")
    git(folder, "commit", "-q", "--allow-empty", "-m", "first")
    assert project_for(folder)[1] == RULE_ROOT_COMMIT


def test_the_root_commit_is_found_once_per_repository_and_machine(tmp_path, monkeypatch):
    from contextflow.core import gitrepo

    repo = committed(tmp_path / "app", "one")
    (repo / "sub").mkdir()
    first = project_for(repo / "sub")
    cached = list((tmp_path / "state" / "repos").iterdir())
    assert len(cached) == 1 and oct(cached[0].stat().st_mode & 0o777) == "0o600"

    def refuse(*args, **kwargs):
        raise AssertionError("the root commit is cached: git must not run again")

    monkeypatch.setattr(gitrepo, "run_git", refuse)
    assert project_for(repo) == first
    cached[0].unlink()  # derived state: deleting it costs one git run, never the answer
    monkeypatch.undo()
    monkeypatch.setenv("CONTEXTFLOW_STATE", str(tmp_path / "state"))
    assert project_for(repo) == first


def test_without_git_a_repository_without_a_remote_is_its_path_and_git_is_sought_again_at_the_next_head(
    tmp_path, monkeypatch
):
    from contextflow.core import gitrepo

    repo = committed(tmp_path / "app", "one")
    path = os.environ["PATH"]
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    assert project_for(repo) == (str(repo), RULE_REPO_PATH)
    runs: list[tuple[str, ...]] = []
    monkeypatch.setattr(gitrepo, "run_git", lambda repo, *args, **kw: runs.append(args))
    assert project_for(repo) == (str(repo), RULE_REPO_PATH) and runs == []  # the failure is cached for this HEAD
    monkeypatch.undo()
    monkeypatch.setenv("CONTEXTFLOW_STATE", str(tmp_path / "state"))
    (repo / "b.txt").write_text("b")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "two")
    monkeypatch.setenv("PATH", path)
    assert project_for(repo)[1] == RULE_ROOT_COMMIT  # a new HEAD: git is asked again


def test_doctor_and_start_preview_say_which_rule_chose_the_project(tmp_path, monkeypatch, capsys):
    repo = committed(tmp_path / "app", "one")
    monkeypatch.chdir(repo)
    main(["doctor", "--format", "json"])
    info = json.loads(capsys.readouterr().out)
    assert info["project_chosen_by"] == RULE_ROOT_COMMIT and info["default_project"].startswith("repo@")
    main(["start-preview"])
    assert f"(chosen by {RULE_ROOT_COMMIT})" in capsys.readouterr().out


def test_events_of_the_former_folder_name_are_told_apart_by_where_they_were_recorded(tmp_path):
    """Before root commits, both repositories named `app` were project `app`: what each recorded (a turn's
    root, a Claude Code transcript's folder) tells which repository an old event belongs to."""
    one, two = committed(tmp_path / "x" / "app", "one"), committed(tmp_path / "y" / "app", "two")
    assert former_project(one) == former_project(two) == "app"
    assert former_project(tmp_path) is None  # a plain folder was `shared`: no former name of its own
    claude_one = f"/home/u/.claude/projects/{str(one).replace('/', '-').replace('_', '-')}/s1.jsonl"
    old_turn = {"project": "app", "session_id": "s1", "transcript": claude_one, "turn": {"files": {}}}
    assert recorded_in(old_turn, str(one)) and not recorded_in(old_turn, str(two))
    new_turn = {"project": "app", "turn": {"state": {"root": str(two), "files": {}}}}
    assert recorded_in(new_turn, str(two)) and not recorded_in(new_turn, str(one))
    assert not recorded_in({"project": "app", "turn": {}}, str(one))  # recorded nowhere: not claimed
