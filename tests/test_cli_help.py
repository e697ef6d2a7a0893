"""Every command and command group answers --help with a description, and each group's help lists
every action with a help line: read from what `contextflow ... --help` prints, as a user sees it."""

from __future__ import annotations

import pytest

from contextflow.adapters.cli import build_parser, group_help, help_words, main
from contextflow.features import features
from contextflow.operations.spec import operations

COMMANDS = sorted({op.command for op in operations() if op.command})


def help_of(capsys: pytest.CaptureFixture[str], *words: str) -> str:
    with pytest.raises(SystemExit) as done:
        main([*words, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


def help_line(shown: str, word: str) -> str:
    """The help printed beside `word` in a command list (argparse puts it on the next line for a long word)."""
    lines = shown.splitlines()
    for n, line in enumerate(lines):
        if line.strip() == word or line.strip().startswith(word + " "):
            rest = line.strip()[len(word) :].strip()
            return rest or (lines[n + 1].strip() if n + 1 < len(lines) else "")
    return ""


@pytest.mark.parametrize("words", COMMANDS, ids=" ".join)
def test_every_command_has_a_description(capsys, words):
    op = next(op for op in operations() if op.command == words)
    shown = " ".join(help_of(capsys, *words).split())
    described = help_words(op.cli_description or op.summary, op)  # help speaks of commands and flags
    assert " ".join(described.split())[:60] in shown


def test_the_top_level_help_lists_every_command_and_group_with_a_help_line():
    shown = build_parser().format_help()
    for word in {words[0] for words in COMMANDS}:
        assert help_line(shown, word), f"{word} has no help line"


GROUPS = sorted({word for feature in features() for word in feature.commands})


def test_every_command_word_with_actions_is_described_by_its_feature():
    words = {op.command[0] for op in operations() if op.command and len(op.command) == 2}
    assert words == set(GROUPS)
    assert group_help("context") == "keyed context records (set, get, list, delete)"


@pytest.mark.parametrize("group", GROUPS)
def test_each_group_help_lists_every_action_with_a_help_line(capsys, group):
    shown = help_of(capsys, group)
    for words in COMMANDS:
        if words[0] == group:
            assert help_line(shown, words[1]), f"{group} {words[1]} has no help line"
