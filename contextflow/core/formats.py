"""Explicit format versions of machine-local derived state, with the code they depend on guarded.

State derived from the logs and kept on disk (the search index, views kept on disk) records the
format it was written in, and is rebuilt when that differs. A format's `version` is a number raised
by hand when what goes into the state changes, so an upgrade rebuilds exactly the states whose
content changed, never because unrelated code did.

What keeps the number honest: `Format.closure()`, the modules of ours that the code deciding the
content imports (read from the source, transitively, function-level imports included; imports under
`if TYPE_CHECKING:` never run and are left out, as are packages' `__init__.py`, which declare
and do not compute; a module imported by name at run time, such as a
feature's extractors, is a root), and `Format.digest()`, a hash of their text. A test holds each
format's version beside the digest it was checked with (tests/test_formats.py): when that code
changes, the test fails until the version is raised (the content changes) or the new digest is
recorded (it does not).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import NamedTuple

from contextflow.core import hashing

PACKAGE = Path(__file__).resolve().parents[1]  # contextflow/
ROOT_NAME = PACKAGE.name


class Format(NamedTuple):
    """One kind of derived state: its name, its version, and the modules whose code decides its content
    (`roots`: module names, or a function giving them when they come from the features)."""

    name: str
    version: int
    roots: tuple[str, ...] | Callable[[], Iterable[str]]

    def root_modules(self) -> tuple[str, ...]:
        return tuple(self.roots() if callable(self.roots) else self.roots)

    def closure(self) -> list[str]:
        """The roots and every module of ours they import, sorted."""
        return sorted(closure(self.root_modules()))

    def digest(self, beside: Format | None = None) -> str:
        """A hash of the closure's names and text (without `beside`'s closure: what this one adds to it)."""
        found = hashing.blake2b(digest_size=10)
        shared = set(beside.closure()) if beside is not None else set()
        for module in (name for name in self.closure() if name not in shared):
            found.update(module.encode() + b"\0" + module_path(module).read_bytes() + b"\0")
        return found.hexdigest()


def module_path(module: str) -> Path:
    """The source file of one of our modules (`contextflow.search.disk` -> contextflow/search/disk.py)."""
    relative = Path(*module.split(".")[1:])
    package = PACKAGE / relative / "__init__.py"
    return package if package.is_file() else (PACKAGE / relative).with_suffix(".py")


def closure(roots: Iterable[str]) -> set[str]:
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        if not module_path(module).is_file():
            raise ValueError(f"{module} is not a module of {ROOT_NAME}")
        seen.add(module)
        todo.extend(imports(module))
    return seen


@cache
def imports(module: str) -> frozenset[str]:
    """The modules of ours `module` imports when it runs (at its top or in a function)."""
    import ast  # (only the tests and the format checks read code: not every process that names a format)

    path = module_path(module)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    hidden = {
        id(sub)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for child in node.body
        for sub in ast.walk(child)
    }
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in hidden:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            found.add(source)
            found.update(f"{source}.{alias.name}" for alias in node.names)  # `from a import b`: b may be a module
    return frozenset(
        name
        for name in found
        if (name == ROOT_NAME or name.startswith(ROOT_NAME + "."))
        and module_path(name).is_file()
        and module_path(name).name != "__init__.py"  # packages' declarations (a version, a FEATURE), not code
    )
