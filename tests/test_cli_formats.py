"""Every command's `--format text|json|markdown`, after the command or before it (ctx's global flag), is
either honoured (json prints JSON, text and markdown print text) or refused in one line naming the formats
the command takes; never silently answered in another format (README: "Every command has ... --format")."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from contextflow.adapters.cli import main
from contextflow.operations.spec import operations

FILLED = {
    "--agent": "me",
    "SUMMARY": "a summary",
    "KEY": "k:1",
    "VALUE": '{"a": 1}',
    "NAME": "name",
    "CONTENT": "content",
    "QUERY": "node",
    "--type": "fact",
    "TAG": "area:x",
    "--query": "node",
    "EVENT": "stop",
    "CLIENT": "codex",
}
COMMANDS = sorted(" ".join(op.command) for op in operations() if op.command)


def argv_of(word: str, ids: dict[str, str], tmp_path: Path) -> list[str]:
    op = next(op for op in operations() if op.command and " ".join(op.command) == word)
    argv = list(op.command or ())
    for param in op.params:
        if param.cli and param.required:
            name = param.cli_name()
            value = ids.get(name) or FILLED.get(name) or str(tmp_path / "given.txt")
            argv += [value] if param.positional else [name, value]
    return argv


@pytest.fixture
def ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    (tmp_path / "given.txt").write_text("a file\n")
    assert main(["note", "first", "--agent", "me", "--session", "s1"]) == 0
    found = {}
    for name, text in (("ID", "node one"), ("TO", "node two")):
        capsys.readouterr()
        assert main(["add", "--type", "fact", text, "--format", "json"]) == 0
        found[name] = json.loads(capsys.readouterr().out)["id"]
    found.update(FROM=found["ID"], OLD=found["ID"], NEW=found["TO"])
    capsys.readouterr()
    return found


@pytest.mark.parametrize("word", COMMANDS)
def test_every_command_honours_or_refuses_each_format(
    word: str, ids: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = argv_of(word, ids, tmp_path)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"")))  # what `import` with no path reads
    for format_ in ("text", "json", "markdown"):
        for given in ([*argv, "--format", format_], ["--format", format_, *argv]):
            try:
                code = main(given)
            except SystemExit as exc:  # argparse's refusal
                code = int(exc.code or 0)
            out, err = capsys.readouterr()
            said = f"{given}: exit {code}, stdout {out[:80]!r}, stderr {err[:200]!r}"
            assert len(err.strip().splitlines()) <= 1, said
            if code == 2 and "format" in err:  # refused: naming what it takes, or that it takes none
                assert any(name in err for name in ("text", "json", "mermaid", "no --format")), said
                continue
            if code != 0 or not out.strip():
                continue  # an error about the arguments (one line, checked above), or nothing to print
            if format_ == "json":
                json.loads(out)  # raises: not JSON
            else:
                assert not _is_json_document(out), said


def _is_json_document(out: str) -> bool:
    try:
        return isinstance(json.loads(out), (dict, list))
    except ValueError:
        return False
