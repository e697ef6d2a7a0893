"""Fixtures for the end-to-end suites: the server command, the server's environment, bounded
subprocess runs, and real MCP clients from the npm registry.

The npm clients are pinned (CLIENTS) and installed once per test session into
`<repo>/.e2e-node/<bin>/` (git-ignored; CONTEXTFLOW_E2E_NODE_DIR moves it), so later runs reuse
them without the network. A test that needs one skips only when npm cannot reach its registry;
any other install failure fails the test.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from tests.e2e.mock_models import AnthropicMock, GeminiMock, MockModel, ResponsesMock

REPO = Path(__file__).resolve().parents[2]
CLIENT_DOCS = REPO / "docs" / "clients.md"
NODE_DIR = Path(os.environ.get("CONTEXTFLOW_E2E_NODE_DIR") or REPO / ".e2e-node")
INSTALL_TIMEOUT = 600.0
PING_TIMEOUT = 60.0
CLIENT_TIMEOUT = 120.0

# The environment the session started with (the per-test HOME isolation comes later): npm
# installs use it, so npm finds its own config and cache as a developer's shell would.
_START_ENV = dict(os.environ)
# Variables that would let a server find a store without the client passing it: a client test
# removes them, so only what the client itself passes reaches the server.
_SERVER_VARIABLE_PREFIXES = ("CONTEXTFLOW_", "MCP_SHARED_CONTEXT_")
# Client variables that keep the clients quiet and offline: no telemetry, update checks,
# auto-updates or other traffic that is not the MCP server itself.
OFFLINE_CLIENT_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "GEMINI_CLI_TRUST_WORKSPACE": "true",
    "NO_UPDATE_NOTIFIER": "1",
    "NO_COLOR": "1",
    "CI": "1",
}


@dataclass(frozen=True)
class NodeClient:
    package: str
    version: str
    bin: str

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}"


CLIENTS = {
    "inspector": NodeClient("@modelcontextprotocol/inspector", "2.12.0", "mcp-inspector"),
    "claude": NodeClient("@anthropic-ai/claude-code", "2.1.330", "claude"),
    "gemini": NodeClient("@google/gemini-cli", "0.61.0", "gemini"),
    "codex": NodeClient("@openai/codex", "0.169.0", "codex"),
    # its binary comes in a platform package (opencode-linux-x64, ...) from the same registry
    "opencode": NodeClient("opencode-ai", "1.18.33", "opencode"),
    # not a client: the reference memory server, whose memory.json contextflow imports and exports
    "server-memory": NodeClient("@modelcontextprotocol/server-memory", "2026.8.31", "mcp-server-memory"),
}


# -- bounded subprocesses --------------------------------------------------------------------


def _tail(text: str, limit: int = 4000) -> str:
    return text if len(text) <= limit else "..." + text[-limit:]


def run_bounded(
    args: Sequence[str | os.PathLike[str]],
    *,
    env: Mapping[str, str],
    timeout: float = CLIENT_TIMEOUT,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a command in its own process group; past `timeout` kill that group and fail the test.

    Whatever the command left running in its group (a server a client forgot) is ended too.
    """
    shown = " ".join(map(str, args))
    with subprocess.Popen(
        [str(arg) for arg in args],
        env=dict(env),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as process:
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process.pid)
            out, err = process.communicate()
            pytest.fail(f"`{shown}` did not finish within {timeout:.0f}s\nstdout:\n{_tail(out)}\nstderr:\n{_tail(err)}")
        finally:
            _kill_group(process.pid)
    return subprocess.CompletedProcess(args, process.returncode, out, err)


def _kill_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)


def describe(result: subprocess.CompletedProcess[str]) -> str:
    """A failure message with the command, exit code and both streams."""
    shown = " ".join(map(str, result.args))
    return f"`{shown}` exited {result.returncode}\nstdout:\n{_tail(result.stdout)}\nstderr:\n{_tail(result.stderr)}"


# -- the server --------------------------------------------------------------------------------


def contextflow_command() -> Path:
    """The `contextflow` console script of the interpreter running the tests."""
    command = Path(sys.executable).with_name("contextflow")
    if not command.exists():
        pytest.fail(f"{command} is missing: install the project into this environment (pip install -e '.[dev]')")
    return command


@pytest.fixture
def server_env(isolated_env: Path) -> dict[str, str]:
    """The server's environment: this test's store, state and HOME, its own writer and project."""
    home = isolated_env / "home"
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "CONTEXTFLOW_STORE": str(isolated_env / "store"),
        "CONTEXTFLOW_STATE": str(isolated_env / "state"),
        "CONTEXTFLOW_WRITER": "e2e-server",
        "MCP_SHARED_CONTEXT_PROJECT": "e2e",
    }


def client_env(**extra: str) -> dict[str, str]:
    """The environment for a client process: this test's HOME, no store variables, offline flags."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SERVER_VARIABLE_PREFIXES)}
    return {**env, **OFFLINE_CLIENT_ENV, **extra}


def with_on_path(env: dict[str, str], *folders: Path) -> dict[str, str]:
    """`env` with `folders` first on PATH (so documented commands like `contextflow serve` resolve)."""
    return {**env, "PATH": os.pathsep.join([*map(str, folders), env.get("PATH", os.defpath)])}


def server_state_made(store: Path, home: Path) -> bool:
    """Whether a server run with CONTEXTFLOW_STORE=store and this HOME (no CONTEXTFLOW_STATE) started:
    opening a store creates its machine-local state folder, named by a hash of the store path."""
    digest = hashlib.sha256(str(store).encode()).hexdigest()[:16]
    return (home / ".local" / "state" / "contextflow" / "stores" / digest).is_dir()


def doc_snippets(heading: str, language: str) -> list[str]:
    """The ```language blocks under `## heading` in docs/clients.md, in order."""
    text = CLIENT_DOCS.read_text(encoding="utf-8")
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end != -1 else None]
    blocks = section.split("```")
    return [block.split("\n", 1)[1] for block in blocks[1::2] if block.split("\n", 1)[0].strip() == language]


# -- npm clients -------------------------------------------------------------------------------


def _npm_env() -> dict[str, str]:
    return {
        **_START_ENV,
        "npm_config_update_notifier": "false",
        "npm_config_fund": "false",
        "npm_config_audit": "false",
    }


@cache
def _registry_problem() -> str | None:
    """Why the npm registry cannot be reached, or None when it can."""
    npm = shutil.which("npm", path=_START_ENV.get("PATH"))
    if npm is None:
        return "npm is not installed, so the npm registry cannot be reached"
    try:
        pinged = subprocess.run(
            [npm, "ping", "--fetch-retries=0"],
            env=_npm_env(),
            capture_output=True,
            text=True,
            timeout=PING_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"npm registry unreachable: `npm ping` gave no answer within {PING_TIMEOUT:.0f}s"
    if pinged.returncode != 0:
        return f"npm registry unreachable: `npm ping` exited {pinged.returncode}: {_tail(pinged.stderr, 400)}"
    return None


def _installed_version(folder: Path, client: NodeClient) -> str | None:
    try:
        manifest = json.loads((folder / "node_modules" / client.package / "package.json").read_text())
    except (OSError, ValueError):
        return None
    version = manifest.get("version")
    return version if isinstance(version, str) else None


def install_client(client: NodeClient) -> Path:
    """The client's executable, installed from npm into NODE_DIR unless that version is there."""
    folder = NODE_DIR / client.bin
    executable = folder / "node_modules" / ".bin" / client.bin
    if executable.exists() and _installed_version(folder, client) == client.version:
        return executable
    problem = _registry_problem()
    if problem:
        pytest.skip(f"{problem}; cannot install {client.spec}")
    folder.mkdir(parents=True, exist_ok=True)
    manifest = {
        "name": f"contextflow-e2e-{client.bin}",
        "private": True,
        "dependencies": {client.package: client.version},
    }
    (folder / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
    npm = shutil.which("npm", path=_START_ENV.get("PATH")) or "npm"
    result = run_bounded(
        [npm, "install", "--no-audit", "--no-fund", "--no-package-lock"],
        env=_npm_env(),
        timeout=INSTALL_TIMEOUT,
        cwd=folder,
    )
    if result.returncode != 0 or not executable.exists():
        pytest.fail(f"installing {client.spec} failed (the registry answered npm ping)\n{describe(result)}")
    return executable


@pytest.fixture(scope="session")
def inspector_bin() -> Path:
    return install_client(CLIENTS["inspector"])


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    return install_client(CLIENTS["claude"])


@pytest.fixture(scope="session")
def gemini_bin() -> Path:
    return install_client(CLIENTS["gemini"])


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    return install_client(CLIENTS["codex"])


@pytest.fixture(scope="session")
def opencode_bin() -> Path:
    return install_client(CLIENTS["opencode"])


# -- network check -------------------------------------------------------------------------------


def traced_network(args: Sequence[str | os.PathLike[str]], trace_file: Path) -> list[str] | None:
    """`strace` prefix that records the network syscalls of `args` and its children, or None."""
    strace = shutil.which("strace")
    if strace is None:
        return None
    # --seccomp-bpf stops only at the traced calls: without it every syscall stops, and a client's
    # MCP server then starts about 7x slower, past clients' connect timeouts on a loaded machine.
    for fast in (["--seccomp-bpf"], []):
        probe = subprocess.run([strace, "-f", *fast, "-qq", "-o", os.devnull, "true"], capture_output=True, check=False)
        if probe.returncode == 0:
            calls = "trace=socket,connect,sendto,sendmsg"
            return [strace, "-f", *fast, "-qq", "-e", calls, "-o", str(trace_file), *map(str, args)]
    return None  # ptrace not allowed here


def outside_connections(trace_file: Path) -> list[str]:
    """Traced connect/send calls to any internet address other than loopback."""
    found = []
    for line in trace_file.read_text(errors="replace").splitlines():
        if not any(call in line for call in ("connect(", "sendto(", "sendmsg(")):
            continue
        if "AF_INET" not in line or "AF_NETLINK" in line or "nlmsg" in line:
            continue
        if "127.0.0." in line or '"::1"' in line:
            continue
        found.append(line.strip())
    return found


# -- scripted model APIs on loopback -----------------------------------------------------------------


def _serving(mock: MockModel) -> Iterator[MockModel]:
    mock.start()
    try:
        yield mock
    finally:
        mock.stop()


@pytest.fixture(scope="module")
def anthropic_mock() -> Iterator[MockModel]:
    """The Messages API (Claude Code) on 127.0.0.1 for one test module, stopped at its end."""
    yield from _serving(AnthropicMock())


@pytest.fixture(scope="module")
def gemini_mock() -> Iterator[MockModel]:
    """The Gemini API (Gemini CLI) on 127.0.0.1 for one test module, stopped at its end."""
    yield from _serving(GeminiMock())


@pytest.fixture(scope="module")
def responses_mock() -> Iterator[MockModel]:
    """The Responses API (Codex) on 127.0.0.1 for one test module, stopped at its end."""
    yield from _serving(ResponsesMock())
