"""Shared fixtures: every test gets its own store, state folder and HOME under tmp_path."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from contextflow.adapters.server.app import ContextflowServer
from contextflow.app import App

ENV_KEYS = (
    "CONTEXTFLOW_STORE",
    "CONTEXTFLOW_STATE",
    "CONTEXTFLOW_WRITER",
    "CONTEXTFLOW_TOOLS",
    "CONTEXTFLOW_FSYNC",
    "CONTEXTFLOW_CLIENT",
    "MCP_SHARED_CONTEXT_FILE",
    "MCP_SHARED_CONTEXT_FOLDER",
    "MCP_SHARED_CONTEXT_PROJECT",
    "MCP_SHARED_CONTEXT_ACTIVE_SESSION",
    "MCP_SHARED_CONTEXT_ACTIVE_SESSION_FILE",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point HOME, the store, machine-local state and the working folder at tmp_path; never the real home."""
    for key in ENV_KEYS:
        monkeypatch.delenv(key, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("CONTEXTFLOW_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("CONTEXTFLOW_STATE", str(tmp_path / "state"))
    monkeypatch.setenv("CONTEXTFLOW_WRITER", "writer-a")
    monkeypatch.chdir(tmp_path)  # the project follows the working folder's repository: not this checkout's
    yield tmp_path


@pytest.fixture
def shared_project(monkeypatch: pytest.MonkeyPatch) -> None:
    """For tests that store into project `shared` (lines planted without a project, an App opened with no
    folder) and read it back through a command or hook run in the plain folder tmp_path, whose own
    project is its path: name `shared` explicitly, as a user keeping one project everywhere does."""
    monkeypatch.setenv("MCP_SHARED_CONTEXT_PROJECT", "shared")


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def app() -> Iterator[App]:
    opened = App.open()
    yield opened
    opened.close()


@pytest.fixture
def app_with_tools(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], App]]:
    """Opens Apps whose MCP server offers these tool groups (`CONTEXTFLOW_TOOLS`); closes them after."""
    opened: list[App] = []

    def open_with(groups: str) -> App:
        monkeypatch.setenv("CONTEXTFLOW_TOOLS", groups)
        opened.append(App.open())
        return opened[-1]

    yield open_with
    for app in opened:
        app.close()


def open_app(writer: str, **env: str) -> App:
    """Another writer (machine) on the same store folder."""
    return App.open({**os.environ, "CONTEXTFLOW_WRITER": writer, **env})


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def connect(app: App) -> AsyncIterator[Client]:
    """An in-memory MCP client (legacy handshake) connected to a server over `app`."""
    async with Client(ContextflowServer(app).server, mode="legacy") as connected:
        yield connected


@pytest.fixture
async def client(app: App) -> AsyncIterator[Client]:
    async with connect(app) as connected:
        yield connected


async def call_with_data(client: Client, name: str, arguments: dict[str, Any]) -> Any:
    """A tool result with its structured data: a read carries that only with format=json, so a
    read is called twice, and its text (the delimited rendering) comes from the plain call."""
    result = await client.call_tool(name, arguments)
    if result.structured_content is None and not result.is_error:
        data = await client.call_tool(name, {**arguments, "format": "json"})
        result = result.model_copy(update={"structured_content": data.structured_content})
    return result


def text_of(result: Any) -> str:
    """The text of a tool result's first content block."""
    return str(result.content[0].text)


def git_checkout(work: Path, origin: str) -> Path:
    """A git repository at `work` whose remote origin is `origin` (no git command reaches the network)."""
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True, timeout=30)
    subprocess.run(["git", "-C", str(work), "remote", "add", "origin", origin], check=True, timeout=30)
    return work
