"""Compiled patterns kept between processes (`core/regexes.py`): the same patterns as `re.compile`'s, read
back only when whole and of this interpreter, never a pattern built from what a process read."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from contextflow.core import regexes
from contextflow.core.regexes import Programs

TEXTS = [
    "",
    "we chose SQLite over Postgres because it is one file",
    "password = 'hunter2hunter2' and token: ghp_" + "a1" * 18,
    "FAILED tests/test_x.py::test_y - AssertionError",
    "next steps: rerun it\n- [x] done\n2) second",
    "MCP_SHARED_CONTEXT_FILE = /tmp/x.json",
    "ünïcödé İ ı ſ K \u2028 \x00 <ctx:remember>x</ctx:remember>",
]


@pytest.fixture(autouse=True)
def bytecode_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # (as an installed package runs; the suite may not)


def package_patterns() -> list[re.Pattern[str]]:
    """Every pattern the package compiles at import, and every secret rule."""
    import contextflow.core.secret_rules as rules

    found: dict[tuple[object, int], re.Pattern[str]] = {}
    for path in sorted(Path(regexes.__file__).parents[1].rglob("*.py")):
        name = ".".join(path.relative_to(Path(regexes.__file__).parents[2]).with_suffix("").parts)
        if name.endswith("__main__"):
            continue
        module = importlib.import_module(name.removesuffix(".__init__"))
        for value in vars(module).values():
            if isinstance(value, re.Pattern):
                found[(value.pattern, value.flags)] = value
    for rule in rules.rules():
        found[(rule.source, rule.flags)] = rule.pattern
    return list(found.values())


def test_every_pattern_of_the_package_read_back_is_the_one_re_compiles(tmp_path: Path) -> None:
    path = str(tmp_path / "kept.json")
    patterns = package_patterns()
    assert len(patterns) > 100
    writing = Programs(path)
    for pattern in patterns:
        assert writing.compile(pattern.pattern, pattern.flags) == re.compile(pattern.pattern, pattern.flags)
    writing.save()
    reading = Programs(path)
    for pattern in patterns:
        kept = reading.compile(pattern.pattern, pattern.flags)
        fresh = re.compile(pattern.pattern, pattern.flags)
        assert kept == fresh  # (flags, source and the program itself)
        assert (kept.groups, kept.groupindex) == (fresh.groups, fresh.groupindex)
        for text in TEXTS:
            subject = text.encode() if isinstance(pattern.pattern, bytes) else text
            assert [m.span() for m in kept.finditer(subject)] == [m.span() for m in fresh.finditer(subject)]
    assert reading.added == {}  # every one read back, none compiled again


def test_a_new_program_is_written_only_when_bytecode_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "kept.json"
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    programs = Programs(str(path))
    programs.compile(r"\bkept\b")
    programs.save()
    assert not path.exists()
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    programs.save()
    assert Programs(str(path)).compile(r"\bkept\b").search("is kept here").span() == (3, 7)
    assert Programs(str(path))._known().keys() == {"s0:\\bkept\\b"}  # (keyed by the flags given)


def _kept(tmp_path: Path) -> Path:
    path = tmp_path / "kept.json"
    programs = Programs(str(path))
    programs.compile(r"(?P<word>\w+)@(?P<host>[a-z.]+)", re.I)
    programs.save()
    return path


def _compiles_again(path: Path) -> None:
    programs = Programs(str(path))
    pattern = programs.compile(r"(?P<word>\w+)@(?P<host>[a-z.]+)", re.I)
    assert pattern == re.compile(r"(?P<word>\w+)@(?P<host>[a-z.]+)", re.I)
    assert pattern.match("Ann@Example.org").groupdict() == {"word": "Ann", "host": "Example.org"}
    assert programs.added  # compiled from the source, to be written again


def test_a_damaged_file_is_not_used(tmp_path: Path) -> None:
    path = _kept(tmp_path)
    whole = path.read_bytes()
    header, programs = whole.split(b"\n", 1)
    for damaged in (
        whole[: len(whole) // 2],  # cut
        header + b"\n" + programs.replace(b"0", b"1", 1),  # one code unit changed: the digest differs
        b"not json\n" + programs,
        b"",
        json.dumps({**json.loads(header), "python": "another"}).encode() + b"\n" + programs,
    ):
        path.write_bytes(damaged)
        _compiles_again(path)


def test_a_program_the_engine_refuses_is_compiled_again(tmp_path: Path) -> None:
    path = _kept(tmp_path)
    programs = json.loads(path.read_bytes().split(b"\n", 1)[1])
    for program in programs.values():
        program[3] = "ff" * 40  # not a program `_sre` runs
    body = json.dumps(programs, separators=(",", ":")).encode()
    path.write_bytes(json.dumps(regexes._header(body)).encode() + b"\n" + body)
    _compiles_again(path)
    for wrong in ([1, 2], [32, 1, {"word": 5}, "00"], ["x", 0, {}, "00"]):  # wrong shapes, a group out of range
        programs = {key: wrong for key in programs}
        body = json.dumps(programs).encode()
        path.write_bytes(json.dumps(regexes._header(body)).encode() + b"\n" + body)
        _compiles_again(path)


def test_no_fifo_link_or_folder_is_read(tmp_path: Path) -> None:
    kept = _kept(tmp_path)
    link = tmp_path / "link.json"
    link.symlink_to(kept)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    for path in (link, fifo, tmp_path):
        _compiles_again(path)  # (a FIFO with no writer would block a plain open)


def test_a_file_over_the_limit_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _kept(tmp_path)
    monkeypatch.setattr(regexes, "MAX_BYTES", path.stat().st_size - 1)
    _compiles_again(path)


def test_kept_beside_the_bytecode_and_read_by_the_next_process_without_what_it_read(tmp_path: Path) -> None:
    """Two processes capture a turn's text through the secret scan and the prose reader: the first writes the
    programs under PYTHONPYCACHEPREFIX, the second compiles none; the secret it learned is in no file."""
    secret = "Zq8" + "x7Lm2Pw9" * 4
    code = (
        "from contextflow.core import regexes, secrets\n"
        "from contextflow.capture import prose\n"
        f"text = 'we chose SQLite over Postgres because it is one file; password = \"{secret}\"'\n"
        "evidence = secrets.Evidence()\n"
        "evidence.learn(text)\n"
        f"print(evidence.safe('then {secret} again'))\n"
        "prose.extract(text)\n"
        "print(len(regexes.PROGRAMS.added))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPYCACHEPREFIX=str(tmp_path / "prefix"), HOME=str(tmp_path / "home"))
    env.update(CONTEXTFLOW_STATE=str(tmp_path / "state"), CONTEXTFLOW_STORE=str(tmp_path / "store"))
    outputs = [
        subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=True)
        for _ in range(2)
    ]
    assert secret not in outputs[0].stdout
    assert int(outputs[0].stdout.split()[-1]) > 20 and int(outputs[1].stdout.split()[-1]) == 0
    kept = list((tmp_path / "prefix").rglob("regexes.*.json"))
    assert len(kept) == 1 and kept[0].parent.name == "core"
    assert not any(secret in path.read_text(errors="replace") for path in (tmp_path / "prefix").rglob("*.json"))
