"""One typed `Settings`, parsed once per environment: every CONTEXTFLOW_* and MCP_SHARED_CONTEXT_* variable is
read there and nowhere else, and a value not understood stops only what needs it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from contextflow.adapters.hooks import hook_budget
from contextflow.adapters.server import inbound
from contextflow.admin.settings_check import settings_findings
from contextflow.app import App
from contextflow.core import project
from contextflow.core.errors import InputError
from contextflow.core.settings import HOOK_BUDGET, Settings, read

PACKAGE = Path(__file__).resolve().parents[1] / "contextflow"
# a variable's value read from a mapping: env.get("X"), os.environ["X"] (not an assignment), os.getenv("X")
_NAME = r"((?:CONTEXTFLOW|MCP_SHARED_CONTEXT)_[A-Z_]+|CTX_DB)"
_READ = re.compile(r"""(?:\.get\(|\[|getenv\()\s*["']""" + _NAME + r"""["']\s*(?:[,)]|\](?!\s*=[^=]))""")


def test_no_module_but_the_settings_reads_a_variable_of_ours():
    found = {
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in PACKAGE.rglob("*.py")
        if path != PACKAGE / "core" / "settings.py"
        for name in _READ.findall(path.read_text(encoding="utf-8"))
    }
    assert found == set()


def test_the_pattern_finds_a_direct_read():
    assert _READ.findall('x = env.get("CONTEXTFLOW_STORE", "")') == ["CONTEXTFLOW_STORE"]
    assert _READ.findall('os.environ["MCP_SHARED_CONTEXT_FILE"]') == ["MCP_SHARED_CONTEXT_FILE"]
    assert _READ.findall('env.update({"CONTEXTFLOW_STORE": folder})') == []  # writing one is fine
    assert _READ.findall('settings["CONTEXTFLOW_STATE"] = path') == []


def test_an_environment_is_parsed_once_and_its_fields_are_typed(tmp_path):
    env = {"CONTEXTFLOW_FSYNC": "on", "MCP_SHARED_CONTEXT_MAX_ARRAY_ITEMS": " 7 ", "CONTEXTFLOW_HOOK_BUDGET": "4000"}
    first = read(env)
    assert read(dict(env)) is first  # the same values: the same object
    assert (first.fsync, first.max_array_items, first.hook_budget, first.secrets) == (True, 7, 4000, "redact")
    assert read({**env, "CONTEXTFLOW_FSYNC": "off"}).fsync is False


def test_a_bad_value_stops_only_what_needs_it(tmp_path):
    env = {
        "CONTEXTFLOW_STORE": str(tmp_path / "store"),
        "CONTEXTFLOW_STATE": str(tmp_path / "state"),
        "MCP_SHARED_CONTEXT_MAX_INBOUND_LINE_BYTES": "lots",
        "CONTEXTFLOW_HOOK_BUDGET": "many",
        "CONTEXTFLOW_CAPTURE": "maybe",
    }
    app = App.open(env)  # the server's limit and the hooks' settings do not stop a command
    try:
        assert app.settings.inbound_line_bytes == inbound.MAX_LINE_BYTES
        findings = settings_findings(env, app.settings)
    finally:
        app.close()
    with pytest.raises(InputError, match=r"MCP_SHARED_CONTEXT_MAX_INBOUND_LINE_BYTES='lots' is not a positive whole"):
        inbound.Limits.from_env(env)  # the server refuses to start with it
    assert hook_budget(env) == HOOK_BUDGET  # a hook never fails on it ...
    assert any("CONTEXTFLOW_HOOK_BUDGET='many'" in line for line in findings)  # ... and doctor says so
    assert any("CONTEXTFLOW_CAPTURE='maybe' is not understood" in line for line in findings)
    with pytest.raises(InputError, match=r"MCP_SHARED_CONTEXT_MAX_NOTE_TEXT_CHARS='0' must be a positive integer"):
        App.open({**env, "MCP_SHARED_CONTEXT_MAX_NOTE_TEXT_CHARS": "0"})  # what the store's writes need


def test_the_defaults_are_the_project_rules():
    plain = Settings()
    assert (plain.default_project, plain.project_rule) == (project.DEFAULT_PROJECT, project.RULE_DEFAULT)
