"""The layers, read from the source: the core imports only the core; features never import admin
or the adapters; the table (features.py, each feature's declaration and table) imports, at module
level, only table modules. Imports under `if TYPE_CHECKING:` are for the type checker and count
only for the core (which must not name a feature or `App` even there)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from contextflow.features import PACKAGES

PACKAGE = Path(__file__).resolve().parents[1] / "contextflow"
FEATURES = tuple(p for p in PACKAGES if p != "admin")  # admin runs the adapters (serve, ui, hooks)


def module_of(path: Path) -> str:
    if not path.is_relative_to(PACKAGE):
        return path.stem
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_only(tree: ast.Module) -> set[int]:
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hidden.update(id(sub) for child in node.body for sub in ast.walk(child))
    return hidden


def imports_of(path: Path, *, type_only: bool = False, top_level: bool = False) -> Iterator[str]:
    """The contextflow modules `path` imports (`from a import b` also yields `a.b`: b may be a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    hidden = set() if type_only else _type_only(tree)
    package = module_of(path) if path.name == "__init__.py" else module_of(path).rpartition(".")[0]
    nodes = tree.body if top_level else list(ast.walk(tree))
    for node in nodes:
        if id(node) in hidden:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base) if node.level else node.module or ""
            yield module
            yield from (f"{module}.{alias.name}" for alias in node.names)


def ours(names: Iterator[str]) -> set[str]:
    return {name for name in names if name == "contextflow" or name.startswith("contextflow.")}


def files(*folders: str) -> list[Path]:
    return sorted(path for folder in folders for path in (PACKAGE / folder).rglob("*.py"))


def test_the_core_imports_only_the_core():
    allowed = ("contextflow.core", "contextflow.__version__", "contextflow")  # the version string
    wrong = {
        module_of(path): sorted(name for name in ours(imports_of(path, type_only=True)) if not _under(name, allowed))
        for path in files("core")
    }
    assert {module: names for module, names in wrong.items() if names} == {}


def test_features_import_neither_admin_nor_the_adapters():
    forbidden = ("contextflow.admin", "contextflow.adapters")
    wrong = {
        module_of(path): sorted(name for name in ours(imports_of(path)) if _under(name, forbidden))
        for path in files(*FEATURES)
    }
    assert {module: names for module, names in wrong.items() if names} == {}


def test_the_table_imports_only_table_modules():
    table = [
        PACKAGE / "features.py",
        *(PACKAGE / "operations" / f"{name}.py" for name in ("__init__", "spec", "params")),
    ]
    table += [path for package in PACKAGES for path in (PACKAGE / package).glob("*.py") if path.stem in TABLE_FILES]
    allowed = {module_of(path) for path in table} | {"contextflow.operations", "contextflow.core.fields"}
    wrong = {}
    for path in table:
        found = {name for name in ours(imports_of(path, top_level=True)) if name.rpartition(".")[0] not in allowed}
        wrong[module_of(path)] = sorted(name for name in found if name not in allowed)
    assert {module: names for module, names in wrong.items() if names} == {}


TABLE_FILES = ("__init__", "operations", "fields")  # fields.py: shapes and the limits table and core share


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def test_the_layer_checks_catch_a_violation(tmp_path):
    """The reader sees a core module importing `App` inside a function, and a relative import."""
    sample = PACKAGE / "core" / "store.py"
    assert "contextflow.core.fold" in ours(imports_of(sample))
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from contextflow.app import App\n    return App\n")
    assert "contextflow.app" in ours(imports_of(bad))
    hidden = tmp_path / "hidden.py"
    hidden.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from contextflow.app import App\n")
    assert "contextflow.app" not in ours(imports_of(hidden))
    assert "contextflow.app" in ours(imports_of(hidden, type_only=True))
