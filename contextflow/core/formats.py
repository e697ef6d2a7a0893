"""Derived formats: an explicit version per format of machine-local derived state, and the guard
that keeps it honest.

A derived format (a set of tables on disk, an index) is kept across upgrades while its `version`
is unchanged, so the version must change exactly when what fills it changes. Each format names its
code closure: the modules whose code decides what it holds. `closure_hash` hashes their source;
`RECORDED` (`formats.json` beside this module) holds, per format, the version and the hash it was
recorded with, and a test fails when the hash moved while the version did not. After changing such
code: raise the format's version if what it holds changes (else nothing is rebuilt), then run
`python -m contextflow.core.formats --write` to record the new hash.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

RECORD_FILE = Path(__file__).with_name("formats.json")
_REGISTRIES = ("contextflow.features",)  # names the formats, fills none (this module's `main` reads it)


@dataclass(frozen=True, slots=True)
class Format:
    name: str
    version: int
    roots: tuple[str, ...]  # the modules that fill it; its closure is them and what they import of ours


def _source(module: str) -> Path | None:
    from importlib.util import find_spec

    try:
        spec = find_spec(module)
    except (ImportError, ValueError):
        return None
    return Path(spec.origin) if spec is not None and spec.origin and spec.origin.endswith(".py") else None


def _imports(module: str, source: Path) -> set[str]:
    """contextflow modules `source` imports (those only a type checker reads left out)."""
    import ast

    found: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
                continue
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):  # (nested blocks and function bodies)
                    visit([child])

    visit(ast.parse(source.read_bytes()).body)
    return {name for name in found if name.split(".")[0] == "contextflow" and name not in (module, *_REGISTRIES)}


def closure(fmt: Format) -> list[str]:
    """The modules whose code decides what the format holds: its roots and, transitively, the
    contextflow modules they import (found and parsed, never imported)."""
    seen: dict[str, Path] = {}
    todo = list(fmt.roots)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        source = _source(module)
        if source is None:
            if module in fmt.roots:
                raise LookupError(f"format {fmt.name}: module {module} is not found")
            continue  # a name imported from a module, not a module
        seen[module] = source
        todo += _imports(module, source)
    return sorted(seen)


def closure_hash(fmt: Format) -> str:
    """A hash of the source of every module of the format's closure."""
    import hashlib

    digest = hashlib.blake2b(digest_size=8)
    for module in closure(fmt):
        source = _source(module)
        assert source is not None
        digest.update(module.encode() + b"\0" + source.read_bytes() + b"\0")
    return digest.hexdigest()


def recorded() -> dict[str, list[object]]:
    """{format: [version, closure hash]} as last recorded."""
    try:
        found = json.loads(RECORD_FILE.read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def unrecorded(formats: list[Format]) -> list[str]:
    """Why each format whose code changed without its version changing is wrong (empty when none is)."""
    known, problems = recorded(), []
    for fmt in formats:
        version, digest = (known.get(fmt.name) or [None, None])[:2]
        current = closure_hash(fmt)
        if digest != current and version == fmt.version:
            problems.append(
                f"the code that fills derived format {fmt.name!r} changed but its version is still {fmt.version}: "
                "raise the version if what it holds changes, then run `python -m contextflow.core.formats --write`"
            )
        elif digest != current or version != fmt.version:
            problems.append(
                f"derived format {fmt.name!r} is not recorded at version {fmt.version}: "
                "run `python -m contextflow.core.formats --write`"
            )
    return problems


def write(formats: list[Format]) -> None:
    record = {fmt.name: [fmt.version, closure_hash(fmt)] for fmt in sorted(formats, key=lambda f: f.name)}
    RECORD_FILE.write_text(json.dumps(record, indent=1) + "\n")


def main(argv: list[str]) -> int:
    from contextflow.features import all_formats

    if argv[1:] == ["--write"]:
        write(all_formats())
        return 0
    problems = unrecorded(all_formats())
    print("\n".join(problems) or "every derived format is recorded")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
