"""ContextFlowMCP's files used where they are: its per-session layout read live with its context file,
a file in the home folder, its discovery order and names, its file size limit.

The files are written here line for line as ContextFlowMCP writes them (its server.mjs: one
`<file>.sessions/<base64url of the session id>.jsonl` per session, `no-session-id.jsonl` for entries
without one); tests/e2e/test_contextflowmcp_suite.py runs the real server beside contextflow.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from contextflow.adapters.cli import main
from contextflow.admin.diagnose import store_info
from contextflow.admin.install import store_settings
from contextflow.admin.install_check import DEFAULT, store_of
from contextflow.app import App
from contextflow.core import legacy
from contextflow.core.errors import InputError
from contextflow.core.locate import default_store_folder, locate_store
from contextflow.sessions.core import entry_filter, read_entries
from tests.conftest import connect, text_of
from tests.folding import view_of

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("shared_project")]  # `shared` data, read from the tmp folder
TS = "2026-01-05T10:00:00.000Z"


def entry(text: str, session: str | None, *, kind: str = "note", ts: str = TS, n: int = 1) -> dict[str, Any]:
    """A note or handoff as ContextFlowMCP writes it (its keys, in its order)."""
    found: dict[str, Any] = {"id": f"0000000{n}-aaaa-4bbb-8ccc-{text.encode().hex()[:12]:0>12}", "ts": ts}
    found.update({"kind": kind, "project": "shared", "agent": "codex"})
    if session is not None:
        found["session_id"] = session
    found["text" if kind == "note" else "summary"] = text
    return found


def session_file(root: Path, session: str | None) -> Path:
    key = base64.urlsafe_b64encode(session.encode()).decode().rstrip("=") if session else "no-session-id"
    return legacy.sessions_dir(root) / f"{key}.jsonl"


def append(path: Path, *entries: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.writelines(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n" for e in entries)


def texts(app: App) -> list[str]:
    return [e.data.get("text") or e.data.get("summary") for e in read_entries(app, entry_filter(app), 200)]


@pytest.fixture
def context_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """ContextFlowMCP's file named by MCP_SHARED_CONTEXT_FILE; contextflow's store is its folder."""
    root = tmp_path / "shared" / "agent-context.jsonl"
    root.parent.mkdir()
    monkeypatch.delenv("CONTEXTFLOW_STORE")
    monkeypatch.setenv("MCP_SHARED_CONTEXT_FILE", str(root))
    return root


# -- its per-session files, read live ----------------------------------------------------------


def test_per_session_files_are_read_with_the_context_file_as_one_history(context_file: Path) -> None:
    append(context_file, entry("from the single file", "old", n=1))
    append(session_file(context_file, "feat/é x"), entry("in a session file", "feat/é x", n=2))
    append(session_file(context_file, None), entry("no session", None, kind="handoff", n=3))
    app = App.open()
    try:
        app.store.append("note", {"text": "contextflow's own", "project": "shared", "agent": "claude"})
        assert sorted(texts(app)) == ["contextflow's own", "from the single file", "in a session file", "no session"]
    finally:
        app.close()
    assert not list(context_file.parent.glob("*.sessions/events.*")), "contextflow never writes ContextFlowMCP's files"


async def test_a_line_the_other_server_appends_is_seen_on_the_next_read(context_file: Path) -> None:
    app = App.open()
    try:
        async with connect(app) as client:
            await client.call_tool("append_shared_note", {"agent": "claude", "text": "mine", "session_id": "s"})
            append(session_file(context_file, "s"), entry("theirs, first", "s", n=1))
            assert "theirs, first" in await read(client, "s")
            folded = app.store.event_count
            append(session_file(context_file, "s"), entry("theirs, second", "s", n=2))
            append(session_file(context_file, "t"), entry("a new session file", "t", n=3))  # same second: a new file
            assert "theirs, second" in await read(client, "s") and "a new session file" in await read(client, "t")
            assert app.store.event_count == folded + 2  # read incrementally: only the new lines were folded
    finally:
        app.close()


def test_a_new_session_file_and_a_new_context_file_are_found_though_the_listing_is_cached(context_file: Path) -> None:
    append(session_file(context_file, "a"), entry("first", "a", n=1))
    app = App.open()
    try:
        app.store.append("note", {"text": "mine", "project": "shared"})
        an_hour_ago = os.stat(context_file.parent).st_mtime - 3600
        for folder in (context_file.parent, legacy.sessions_dir(context_file)):
            os.utime(folder, (an_hour_ago, an_hour_ago))  # old enough for the folder listing to be reused
        assert sorted(texts(app)) == ["first", "mine"]
        append(session_file(context_file, "b"), entry("in a new session file", "b", n=2))
        assert "in a new session file" in texts(app)
        os.utime(legacy.sessions_dir(context_file), (an_hour_ago, an_hour_ago))
        os.utime(context_file.parent, (an_hour_ago, an_hour_ago))
        texts(app)
        append(context_file, entry("in the context file, made later", "c", n=3))
        os.utime(context_file.parent, (an_hour_ago, an_hour_ago))  # only the file's appearance changed
        assert "in the context file, made later" in texts(app)
    finally:
        app.close()


async def read(client: Client, session: str) -> str:
    result = await client.call_tool("read_shared_context", {"session_id": session, "limit": 20})
    assert not result.is_error, text_of(result)
    return text_of(result)


def test_entries_copied_between_its_files_count_once_and_sort_the_same(
    context_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ContextFlowMCP migrates its single file into session files: the copies keep their ids."""
    first, second = entry("one", "s", n=1), entry("two", "s", n=2)  # the same millisecond
    append(context_file, first, second)
    app = App.open()
    try:
        from_single_file = texts(app)
        append(session_file(context_file, "s"), second, first)  # its migrated copy, in another order
        assert texts(app) == from_single_file
        assert app.store.event_count == 2 and app.store.duplicates == 2  # (the in-memory fold counts them)
    finally:
        app.close()
    copy_only = context_file.with_name("copy.jsonl")
    append(session_file(copy_only, "s"), second, first)
    monkeypatch.setenv("MCP_SHARED_CONTEXT_FILE", str(copy_only))
    other = App.open({**os.environ, "CONTEXTFLOW_STORE": str(context_file.parent / "other-store")})
    try:
        assert texts(other) == from_single_file  # the order comes from the entries, not their files or lines
    finally:
        other.close()


def test_a_symbolic_link_in_its_session_folder_is_not_followed(context_file: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.jsonl"
    append(elsewhere, entry("outside", "s"))
    legacy.sessions_dir(context_file).mkdir()
    (legacy.sessions_dir(context_file) / "link.jsonl").symlink_to(elsewhere)
    app = App.open()
    try:
        assert texts(app) == []
    finally:
        app.close()


# -- a file in the home folder -----------------------------------------------------------------


def test_a_context_file_in_the_home_folder_works_and_contextflow_writes_elsewhere(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = isolated_env / "home"
    for name in ("CONTEXTFLOW_STORE", "CONTEXTFLOW_STATE"):
        monkeypatch.delenv(name)  # the default state folder, ~/.local/state/contextflow, is inside ~
    monkeypatch.setenv("MCP_SHARED_CONTEXT_FILE", "~/.mcp-shared-context.jsonl")
    root = home / ".mcp-shared-context.jsonl"
    append(session_file(root, "s"), entry("written by ContextFlowMCP", "s"))
    assert main(["note", "written by contextflow", "--session", "s", "--agent", "me"]) == 0
    assert main(["read", "--session", "s", "--format", "json"]) == 0
    read_back = capsys.readouterr().out
    assert "written by ContextFlowMCP" in read_back and "written by contextflow" in read_back
    assert not list(home.glob("events.*")), "home is not the store"
    assert main(["doctor"]) == 0
    doctor = capsys.readouterr().out
    assert "store note:" in doctor and "home folder" in doctor and "default store" in doctor
    assert f"ContextFlowMCP: {root}" in doctor and "env;" in doctor
    location = locate_store()
    assert location.folder == home / ".local" / "share" / "contextflow" / "store"
    assert store_of({"MCP_SHARED_CONTEXT_FILE": str(root)}, home) == DEFAULT  # doctor's client check agrees


def test_a_context_file_elsewhere_still_makes_its_folder_the_store(context_file: Path) -> None:
    location = locate_store()
    assert (location.folder, location.store_note) == (context_file.parent, "")


def test_the_folder_setting_pointing_at_home_uses_the_default_store(isolated_env: Path) -> None:
    home = isolated_env / "home"
    location = locate_store({"HOME": str(home), "MCP_SHARED_CONTEXT_FOLDER": str(home)})
    assert location.legacy_files == (home / ".mcp-shared-context.jsonl",)
    assert location.folder == default_store_folder() and "home folder" in location.store_note


# -- discovery, in ContextFlowMCP's order --------------------------------------------------------


def discovered(home: Path, **env: str) -> tuple[Path, str, dict[str, str]]:
    location = locate_store({"HOME": str(home), **env})
    return location.legacy_files[0], location.source, dict(location.discovery)


def write(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_with_nothing_found_its_home_default_is_read_once_it_exists(tmp_path: Path) -> None:
    home = tmp_path / "h"
    assert discovered(home) == (home / ".mcp-shared-context.jsonl", "home-default", {})
    assert locate_store({"HOME": str(home)}).rule == "default"


def test_discovery_follows_its_order_each_step_winning_over_the_next(tmp_path: Path) -> None:
    home = tmp_path / "h"
    write(home / ".claude" / "shared-context.jsonl")  # an existing file with a common name
    found = discovered(home)
    assert found == (
        home / ".claude" / "shared-context.jsonl",
        "auto-discovered-file",
        {
            "directory": str(home / ".claude"),
            "fileName": "shared-context.jsonl",
        },
    )
    write(home / ".mcp-shared-context.jsonl")  # the home folder is looked in first
    assert discovered(home)[0] == home / ".mcp-shared-context.jsonl"
    gemini = write(
        home / ".gemini" / "settings.json", '{\n  "env": {\n    "MCP_SHARED_CONTEXT_FILE": "g.jsonl"\n  }\n}'
    )
    assert discovered(home)[:2] == (home / ".gemini" / "g.jsonl", "auto-discovered-config")
    codex = write(home / ".codex" / "config.toml", '[mcp_servers.x.env]\nMCP_SHARED_CONTEXT_FILE = "~/c.jsonl"\n')
    assert discovered(home) == (
        home / "c.jsonl",
        "auto-discovered-config",
        {"client": "codex", "configFile": str(codex)},
    )
    assert gemini.exists()
    folder = tmp_path / "f"
    assert discovered(home, MCP_SHARED_CONTEXT_FOLDER=str(folder)) == (
        folder / ".mcp-shared-context.jsonl",
        "env-folder",
        {"folder": str(folder), "fileName": ".mcp-shared-context.jsonl"},
    )
    both = {"MCP_SHARED_CONTEXT_FOLDER": str(folder), "MCP_SHARED_CONTEXT_FILE": str(tmp_path / "e.jsonl")}
    assert discovered(home, **both) == (tmp_path / "e.jsonl", "env", {})


def test_config_files_are_read_in_its_order_and_comment_lines_skipped(tmp_path: Path) -> None:
    home = tmp_path / "h"
    write(home / ".codex" / "config.toml", '# MCP_SHARED_CONTEXT_FILE = "~/wrong.jsonl"\n')
    write(home / ".claude" / "settings.json", '// MCP_SHARED_CONTEXT_FILE = "~/wrong.jsonl"\n')
    xdg = write(tmp_path / "xdg" / "codex" / "config.json", '{\n"MCP_SHARED_CONTEXT_FILE": "x.jsonl"\n}')
    appdata = write(tmp_path / "ad" / "Claude" / "settings.json", '{\n"MCP_SHARED_CONTEXT_FILE": "a.jsonl"\n}')
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "APPDATA": str(tmp_path / "ad")}
    assert discovered(home, **env)[0] == xdg.parent / "x.jsonl"  # XDG before APPDATA
    xdg.unlink()
    assert discovered(home, **env)[0] == appdata.parent / "a.jsonl"
    assert [p.name for _, p in legacy.config_candidates({"HOME": str(home)})][:3] == [
        "config.toml",
        "config.json",
        "config.json",
    ]


def test_contextflow_store_alone_reads_no_contextflowmcp_file_but_one_named_with_it(tmp_path: Path) -> None:
    home = tmp_path / "h"
    write(home / ".mcp-shared-context.jsonl")
    assert locate_store({"HOME": str(home), "CONTEXTFLOW_STORE": str(tmp_path / "s")}).legacy_files == ()
    named = locate_store(
        {"HOME": str(home), "CONTEXTFLOW_STORE": str(tmp_path / "s"), "MCP_SHARED_CONTEXT_FILE": str(tmp_path / "c")}
    )
    assert (named.folder, named.legacy_files, named.source) == (tmp_path / "s", (tmp_path / "c",), "env")


def test_install_names_a_discovered_contextflowmcp_file_so_the_server_reads_it_too(tmp_path: Path) -> None:
    home = tmp_path / "h"
    env = {"HOME": str(home)}
    assert store_settings(env) == {"CONTEXTFLOW_STORE": str(default_store_folder())}
    append(session_file(home / ".mcp-shared-context.jsonl", "s"), entry("x", "s"))  # its home default, in use
    settings = store_settings(env)
    assert settings["MCP_SHARED_CONTEXT_FILE"] == str(home / ".mcp-shared-context.jsonl")
    assert locate_store({**env, **settings}).legacy_files == (home / ".mcp-shared-context.jsonl",)


# -- the info resource ---------------------------------------------------------------------------


async def test_the_info_resource_names_its_file_and_source_in_its_words(context_file: Path) -> None:
    append(session_file(context_file, "s"), entry("x", "s"))
    (context_file.parent / "active-session.txt").write_text("s\n")
    app = App.open()
    try:
        async with connect(app) as client:
            result = await client.read_resource("shared-context://info")
        info = json.loads(result.contents[0].text)  # type: ignore[union-attr]
    finally:
        app.close()
    assert info["file"] == str(context_file)
    assert info["contextFileSource"] == "env" and info["chosen_by"] == "MCP_SHARED_CONTEXT_FILE"
    assert info["sessionDataDir"] == str(context_file) + ".sessions"
    assert info["sessionIndexFile"] is None  # ContextFlowMCP has not written its index; contextflow never does
    assert info["activeSessionId"] == "s" and info["activeSessionFile"] == str(
        context_file.parent / "active-session.txt"
    )
    assert info["defaultProject"] == "shared" and info["contextFolder"] == str(context_file.parent)
    assert info["lockFile"]
    assert info["contextFileDiscovery"]["store"] == str(context_file.parent)


@pytest.mark.parametrize(
    ("rule", "source"),
    [("client-config", "auto-discovered-config"), ("legacy-file", "auto-discovered-file"), ("default", "home-default")],
)
def test_each_discovery_rule_maps_to_its_context_file_source(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch, rule: str, source: str
) -> None:
    home = isolated_env / "home"
    monkeypatch.delenv("CONTEXTFLOW_STORE")
    if rule == "client-config":
        write(home / ".codex" / "config.toml", f'MCP_SHARED_CONTEXT_FILE = "{isolated_env / "c" / "ctx.jsonl"}"\n')
    elif rule == "legacy-file":
        write(home / ".codex" / "agent-context.jsonl")
    app = App.open()
    try:
        info = store_info(app)
    finally:
        app.close()
    assert (info["chosen_by"], info["contextFileSource"]) == (rule, source)


# -- its file size limit -------------------------------------------------------------------------


async def test_a_contextflowmcp_file_over_its_size_limit_is_refused_with_a_clear_error(
    context_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MCP_SHARED_CONTEXT_MAX_CONTEXT_FILE_BYTES", "300")
    big = session_file(context_file, "s")
    append(big, entry("small enough", "s"))
    app = App.open()
    try:
        async with connect(app) as client:
            assert "small enough" in await read(client, "s")
            append(big, entry("x" * 300, "s", n=2))
            result = await client.call_tool("read_shared_context", {"session_id": "s"})
            assert result.is_error
            message = text_of(result)
            assert "Context file exceeds configured max size (300 bytes)" in message and str(big) in message
            assert "MCP_SHARED_CONTEXT_MAX_CONTEXT_FILE_BYTES" in message
            write_result = await client.call_tool("append_shared_note", {"agent": "a", "text": "still writes"})
            assert not write_result.is_error
        assert str(big) in store_info(app)["oversized_legacy_files"]
    finally:
        app.close()
    assert main(["read", "--session", "s"]) == 4  # the store could not be read
    assert "exceeds configured max size" in capsys.readouterr().err
    assert main(["doctor"]) == 1  # a problem found, reported on stdout
    assert "is over MCP_SHARED_CONTEXT_MAX_CONTEXT_FILE_BYTES" in capsys.readouterr().out
    big.unlink()
    assert main(["read", "--session", "s"]) == 3  # readable again: session s has no entries left anywhere


def test_a_bad_size_limit_is_a_clear_setting_error(context_file: Path) -> None:
    with pytest.raises(InputError, match="MCP_SHARED_CONTEXT_MAX_CONTEXT_FILE_BYTES='lots' is not a positive"):
        App.open({**os.environ, "MCP_SHARED_CONTEXT_MAX_CONTEXT_FILE_BYTES": "lots"})


def test_the_size_limit_applies_to_its_files_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_SHARED_CONTEXT_MAX_CONTEXT_FILE_BYTES", "10")
    app = App.open()
    try:
        app.store.append("note", {"text": "x" * 100})
        assert len(view_of(app.store, "sessions").project_entries(None)) == 1  # contextflow's own logs: no limit
    finally:
        app.close()
