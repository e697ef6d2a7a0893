import os
import subprocess
import sys
from pathlib import Path

import pytest

from contextflow.core import locate
from contextflow.core.errors import InputError
from contextflow.core.locate import locate_store, validate_writer, writer_id


def env_with(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "CONTEXTFLOW_STATE": str(tmp_path / "state"), **extra}


def test_contextflow_store_wins_over_every_other_rule(tmp_path):
    found = locate_store(env_with(tmp_path, CONTEXTFLOW_STORE=str(tmp_path / "a"), MCP_SHARED_CONTEXT_FOLDER="/x"))
    assert (found.folder, found.rule) == (tmp_path / "a", "CONTEXTFLOW_STORE")


def test_the_legacy_file_variable_makes_its_folder_the_store_and_the_file_legacy(tmp_path):
    legacy = tmp_path / "ctx" / "shared.jsonl"
    found = locate_store(env_with(tmp_path, MCP_SHARED_CONTEXT_FILE=str(legacy)))
    assert (found.folder, found.rule, found.legacy_files) == (legacy.parent, "MCP_SHARED_CONTEXT_FILE", (legacy,))


def test_the_legacy_folder_variable_is_the_store(tmp_path):
    found = locate_store(env_with(tmp_path, MCP_SHARED_CONTEXT_FOLDER=str(tmp_path / "f")))
    assert found.folder == tmp_path / "f" and found.legacy_files == (tmp_path / "f" / ".mcp-shared-context.jsonl",)


def test_a_path_named_in_a_codex_config_file_is_discovered(tmp_path):
    config = tmp_path / "home" / ".codex" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[mcp_servers.ctx.env]\nMCP_SHARED_CONTEXT_FILE = "/data/ctx/shared.jsonl"\n')
    found = locate_store(env_with(tmp_path))
    assert found.rule == "client-config" and found.folder == Path("/data/ctx") and str(config) in found.detail


def test_an_existing_legacy_file_in_home_is_read_but_the_store_is_the_default_folder(tmp_path):
    legacy = tmp_path / "home" / ".mcp-shared-context.jsonl"
    legacy.parent.mkdir(parents=True, exist_ok=True)
    legacy.write_text("")
    found = locate_store(env_with(tmp_path))
    assert found.rule == "legacy-file" and found.legacy_files == (legacy,) and found.folder != legacy.parent


def test_with_nothing_set_the_store_is_the_platform_data_folder(tmp_path):
    found = locate_store(env_with(tmp_path))
    assert found.rule == "default" and found.folder.name == "store" and "contextflow" in str(found.folder)


def test_the_writer_id_is_stable_per_machine_and_can_be_overridden(tmp_path):
    env = env_with(tmp_path)
    first = writer_id(env)
    assert writer_id(env) == first
    assert writer_id({**env, "CONTEXTFLOW_WRITER": "laptop"}) == "laptop"


@pytest.mark.parametrize("bad", ["", ".hidden", "a/b", "x" * 65, "sp ace"])
def test_a_bad_writer_id_is_refused_with_an_example(bad):
    with pytest.raises(InputError, match="for example"):
        validate_writer(bad)


def test_every_variable_contextflow_reads_is_named_once_in_the_settings():
    """`core.settings.VARIABLES` lists every CONTEXTFLOW_* and MCP_SHARED_CONTEXT_* variable the code names
    (and ctx's CTX_DB)."""
    import re
    from pathlib import Path

    from contextflow.core.settings import VARIABLES

    package = Path(__file__).resolve().parents[1] / "contextflow"
    named = set()
    for path in package.rglob("*.py"):
        named |= set(
            re.findall(r"\b(?:(?:CONTEXTFLOW|MCP_SHARED_CONTEXT)_[A-Z_]+|CTX_DB)\b", path.read_text(encoding="utf-8"))
        )
    named -= {"CONTEXTFLOW_E2E_NODE_DIR"}  # the tests' own
    assert named - set(VARIABLES) == set()
    assert set(VARIABLES) - named == set()


@pytest.mark.skipif(
    not sys.platform.startswith(locate.XDG_PLATFORMS), reason="the XDG rules apply on Linux and the BSDs"
)
@pytest.mark.parametrize("xdg", [None, "", "   ", "relative/dir", "/abs/xdg", "/abs/xdg/"])
@pytest.mark.parametrize("home", [None, "", "rel-home", "/home/someone", "/home/someone/", "/"])
def test_the_default_folders_are_the_ones_platformdirs_names(monkeypatch, xdg, home):
    import platformdirs

    for name, value in (("XDG_DATA_HOME", xdg), ("XDG_STATE_HOME", xdg), ("HOME", home)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert locate.user_folder("data") == Path(platformdirs.user_data_dir("contextflow", appauthor=False))
    assert locate.user_folder("state") == Path(platformdirs.user_state_dir("contextflow", appauthor=False))


def test_a_hook_with_no_settings_does_not_import_platformdirs(tmp_path):
    env = {
        "HOME": str(tmp_path),
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
    }
    code = (
        "import sys; from contextflow.core import locate; locate.locate_store({}); locate.state_root({}); "
        "print('platformdirs' in sys.modules)"
    )
    found = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert found.stdout.strip() == ("False" if sys.platform.startswith(locate.XDG_PLATFORMS) else "True"), found.stderr
