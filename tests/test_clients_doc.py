"""docs/clients.md's table of every client, checked against what `contextflow install` writes: the
files of each client (user scope) and the hook events in them."""

import json
import re
import tomllib
from pathlib import Path

import pytest

from contextflow.admin.clients import install_client as install
from contextflow.admin.fields import CLIENTS

DOC = Path(__file__).resolve().parents[1] / "docs" / "clients.md"
NAMES = {"Claude Code": "claude-code", "Codex CLI": "codex", "Gemini CLI": "gemini", "OpenCode": "opencode"}
NAMES["Cursor"] = "cursor"
PLUGIN_EVENTS = re.compile(r'^    (?:"([\w.]+)"|(event)): async', re.M)  # the OpenCode plugin's hooks
OPENCODE_EVENTS = re.compile(r'event\.type === "([\w.]+)"')


def table() -> dict[str, list[str]]:
    text = DOC.read_text()
    block = text[text.index("<!-- clients:begin -->") : text.index("<!-- clients:end -->")]
    rows = [line for line in block.splitlines() if line.startswith("| ") and not line.startswith("| client")]
    cells = [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows if "---" not in row]
    return {NAMES[row[0]]: row for row in cells}


def written(client: str, home: Path) -> tuple[list[str], list[str]]:
    """The files install writes for `client` (as `~/...`) and the hook events in them, in order."""
    changes = install(client, home=home, command=["/opt/cf/bin/contextflow"], env={"CONTEXTFLOW_STORE": "/s"})
    files = ["~/" + change.path.relative_to(home).as_posix() for change in changes]
    events: list[str] = []
    for change in changes:
        if change.path.suffix == ".json":
            hooks = json.loads(change.after).get("hooks")
            events += [event for event in hooks or {} if event not in events]
        elif change.path.suffix == ".toml":
            tomllib.loads(change.after)  # the server entry only
        elif change.path.suffix == ".js":
            for named, _ in PLUGIN_EVENTS.findall(change.after):
                events += [named] if named else OPENCODE_EVENTS.findall(change.after)
    return files, list(dict.fromkeys(events))


def test_the_table_has_one_row_per_client_install_supports():
    assert sorted(table()) == sorted(CLIENTS)


@pytest.mark.parametrize("client", CLIENTS)
def test_each_row_names_the_files_install_writes_and_their_hook_events(client, tmp_path):
    home = tmp_path / "home"
    files, events = written(client, home)
    row = table()[client]
    assert row[2].replace("`", "").split(", ") == files
    assert row[3].split(", ") == events


def test_each_row_says_how_to_turn_it_off_and_what_was_verified_live():
    for client, row in table().items():
        assert len(row) == 8 and all(row), client
    assert table()["cursor"][7].startswith("not run")
