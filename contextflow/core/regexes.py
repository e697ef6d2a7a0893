"""Regular expressions compiled once per interpreter, kept as Python keeps bytecode.

Every hook call is a new process, and `re` compiles in Python: the patterns one captured turn runs
(prose, secret rules, test outcomes) cost a session start about 10 ms to compile, every time.
`compile(source, flags)` keeps each pattern's compiled program beside this module's bytecode
(`__pycache__/regexes.<tag>.json`, or under `sys.pycache_prefix`), written at exit by a process that
compiled one it lacked, and never when bytecode is not written (`PYTHONDONTWRITEBYTECODE`).

Only a constant of the source may be passed: a pattern built at run time (from a learned secret, a
query) would be kept on disk. The file is trusted as the bytecode beside it is (whoever can write
there can change the code itself), and read only when whole: its first line names the interpreter
and a digest of the second, the programs. A file unreadable, oversized, of another interpreter or
damaged is not used, and a program `_sre` refuses is compiled again.
"""

from __future__ import annotations

import array
import atexit
import importlib
import json
import os
import re
import sys
from contextlib import suppress
from pathlib import Path
from typing import Any, AnyStr

from contextflow.core.fsutil import atomic_write, read_regular
from contextflow.core.hashing import blake2b

try:  # CPython's own compiler, the halves `re.compile` runs: parse to a program, then build it
    _sre: Any = importlib.import_module("_sre")
    _compiler: Any = importlib.import_module("re._compiler")
    _parser: Any = importlib.import_module("re._parser")
except ImportError:  # another interpreter: `re.compile` each time
    _sre = None
_WORD = "I"  # a program's code units, as `_sre` stores them
if _sre is not None and array.array(_WORD).itemsize != _sre.CODESIZE:
    _sre = None  # (no array type holds them: `re.compile` each time)

MAX_BYTES = 4_000_000  # a file larger than this is not read (every program of the package is ~150 KB)
MAX_PROGRAMS = 2_000  # and at most this many are kept


def _header(programs: bytes) -> dict[str, Any]:
    """The interpreter the programs are for, and their digest."""
    digest = blake2b(programs, digest_size=16).hexdigest()
    return {"python": sys.version, "magic": getattr(_sre, "MAGIC", None), "digest": digest}


def _key(source: str | bytes, flags: int) -> str:
    kind, text = ("b", source.decode("latin-1")) if isinstance(source, bytes) else ("s", source)
    return f"{kind}{flags}:{text}"


class Programs:
    """The programs of one file: read on first use, written by `save` when one was added."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.known: dict[str, Any] | None = None
        self.added: dict[str, list[Any]] = {}

    def compile(self, source: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
        flags = int(flags)
        if _sre is None or self.path is None:
            return re.compile(source, flags)
        key = _key(source, flags)
        kept = self._known().get(key)
        if kept is not None:
            with suppress(TypeError, ValueError, OverflowError, RuntimeError):
                return _built(source, kept)  # (`_sre` refuses a program it cannot run: RuntimeError)
        try:
            program = _program(source, flags)
            pattern = _built(source, program)
        except Exception:
            return re.compile(source, flags)
        if len(self.added) + len(self._known()) < MAX_PROGRAMS:
            self.added[key] = program
        return pattern

    def _known(self) -> dict[str, Any]:
        if self.known is None:
            self.known = {}
            with suppress(OSError, ValueError, UnicodeDecodeError):
                header, _, programs = read_regular(self.path or "", limit=MAX_BYTES).partition(b"\n")
                if json.loads(header) == _header(programs):
                    known = json.loads(programs)
                    self.known = known if isinstance(known, dict) else {}
        return self.known

    def save(self) -> None:
        """Write the programs read and added, when any was added and bytecode is written (a cache: a
        failure leaves it for the next process)."""
        if not self.added or self.path is None or sys.dont_write_bytecode:
            return
        programs = json.dumps({**self._known(), **self.added}, separators=(",", ":")).encode()
        self.added = {}
        data = json.dumps(_header(programs)).encode() + b"\n" + programs
        with suppress(OSError):
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            atomic_write(Path(self.path), data, mode=0o644, fsync=False)  # (readable as the bytecode beside it)


def _program(source: str | bytes, flags: int) -> list[Any]:
    """What `re._compiler.compile` hands `_sre.compile`, as plain data: [flags, groups, names, code]."""
    parsed = _parser.parse(source, flags)
    code = _compiler._code(parsed, flags)
    names = dict(parsed.state.groupdict)
    return [flags | parsed.state.flags, parsed.state.groups - 1, names, array.array(_WORD, code).tobytes().hex()]


def _built(source: AnyStr, program: list[Any]) -> re.Pattern[AnyStr]:
    flags, groups, names, code = program
    if not (isinstance(flags, int) and isinstance(groups, int) and isinstance(names, dict) and isinstance(code, str)):
        raise TypeError("not a program")
    if not all(
        isinstance(name, str) and isinstance(index, int) and 0 < index <= groups for name, index in names.items()
    ):
        raise ValueError("group names out of range")
    index_group: list[str | None] = [None] * (groups + 1)
    for name, index in names.items():
        index_group[index] = name
    words = array.array(_WORD, bytes.fromhex(code)).tolist()
    pattern: re.Pattern[AnyStr] = _sre.compile(source, flags, words, groups, names, tuple(index_group))
    return pattern


def default_path() -> str | None:
    """Beside this module's bytecode, where Python writes it (None: this interpreter keeps none)."""
    tag = sys.implementation.cache_tag
    if tag is None:
        return None
    here = os.path.dirname(os.path.abspath(__file__))
    folder = (
        os.path.join(sys.pycache_prefix, here.lstrip(os.sep))
        if sys.pycache_prefix
        else os.path.join(here, "__pycache__")
    )
    return os.path.join(folder, f"regexes.{tag}.json")


PROGRAMS = Programs(default_path())
atexit.register(PROGRAMS.save)


def compile(source: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """`re.compile(source, flags)` for a constant of the source, its program kept between processes."""
    return PROGRAMS.compile(source, flags)
