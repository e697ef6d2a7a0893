"""The layers, read from the source: the core imports only the core; features never import admin
or the adapters; the table (features.py, each feature's declaration and table) imports, at module
level, only table modules; no two modules import each other at run time. Imports under
`if TYPE_CHECKING:` are for the type checker and count only for the core (which must not name a
feature or `App` even there)."""

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


def run_time_imports(package: Path) -> dict[str, set[str]]:
    """Each module of `package` -> the modules of it that running it imports: at the top or inside a
    function (not under TYPE_CHECKING), the named module's packages included (importing `a.b.c` runs
    `a/__init__.py` and `a/b/__init__.py`). Modules named by string (`Feature` declarations, loaded by
    `importlib`) are the registry's to load and are not followed."""
    modules = {
        ".".join(path.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__"): path
        for path in package.rglob("*.py")
    }
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        hidden = _type_only(tree)
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in hidden or not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            if isinstance(node, ast.Import):
                named = [alias.name for alias in node.names]
            else:
                base = here.split(".")[: len(here.split(".")) - node.level + 1] if node.level else []
                module = ".".join([*base, node.module] if node.module else base) if node.level else node.module or ""
                named = [f"{module}.{alias.name}" for alias in node.names]
            for target in named:
                while target and target not in modules:  # `from a import b`: b is a module, else a name in a
                    target = target.rpartition(".")[0]
                for ancestor in _ancestors(target):
                    if ancestor in modules:
                        found.add(ancestor)
        graph[name] = found - {name}
    return graph


def _ancestors(module: str) -> Iterator[str]:
    while module:
        yield module
        module = module.rpartition(".")[0]


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = stack[stack.index(node) :]
                    del stack[stack.index(node) :]
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_modules_import_each_other_at_run_time() -> None:
    """A circle of imports means no module in it can be understood, tested or loaded alone: what
    assembles the parts (`App.open`, the adapters) sits above them, the feature registry
    (`features.py`) imports no feature, and a lower module is handed what it needs."""
    graph = run_time_imports(PACKAGE)
    described = [
        " -> ".join(f"{module} (imports {', '.join(sorted(graph[module] & set(circle)))})" for module in circle)
        for circle in circles(graph)
    ]
    assert not described, "modules that import each other at run time:\n" + "\n".join(described)


def test_the_circle_check_sees_imports_inside_functions_and_packages(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from pkg.top import TOP\n")
    (package / "sub" / "low.py").write_text("LOW = 1\n")
    (package / "top.py").write_text("TOP = 1\ndef f():\n    from .sub import low\n    return low\n")
    (package / "typed.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.top import TOP\n"
        "from pkg.sub.low import LOW\n"
    )
    graph = run_time_imports(package)
    assert graph["pkg.top"] == {"pkg", "pkg.sub", "pkg.sub.low"}
    assert graph["pkg.typed"] == {"pkg", "pkg.sub", "pkg.sub.low"}  # not pkg.top: for the type checker only
    assert circles(graph) == [["pkg.sub", "pkg.top"]]
    (package / "sub" / "__init__.py").write_text("")
    assert circles(run_time_imports(package)) == []


def test_the_layer_checks_catch_a_violation(tmp_path):
    """The reader sees a core module importing `App` inside a function, and a relative import."""
    sample = PACKAGE / "core" / "store.py"
    assert "contextflow.core.scan" in ours(imports_of(sample))
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from contextflow.app import App\n    return App\n")
    assert "contextflow.app" in ours(imports_of(bad))
    hidden = tmp_path / "hidden.py"
    hidden.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from contextflow.app import App\n")
    assert "contextflow.app" not in ours(imports_of(hidden))
    assert "contextflow.app" in ours(imports_of(hidden, type_only=True))


def test_no_run_time_module_can_fold_a_view():
    """Every read queries the projections' tables: the store takes no views and offers no fold, and no module
    of contextflow defines a view protocol or imports the tests' folding oracle (`tests/folding.py`)."""
    import inspect

    from contextflow.core.store import Store

    assert not {"view", "views", "folds", "fresh_views", "view_loaded", "fold"} & set(dir(Store))
    assert "views" not in inspect.signature(Store).parameters
    for path in files("."):
        source = path.read_text(encoding="utf-8")
        folds = {"fold", "folding", "Fold", "LazyView"}
        assert not {name for name in ours(imports_of(path)) if name.rpartition(".")[2] in folds}, path
        assert not any(name.startswith("tests") for name in imports_of(path)), path
        tree = ast.parse(source)
        protocols = [
            node.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef)
            and any("Protocol" in ast.unparse(base) for base in node.bases)
            and {"initial", "apply"} <= {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
        ]
        assert not protocols, f"{path} defines a view protocol: {protocols}"


# -- one catch-up engine ----------------------------------------------------------------------

LOG_READERS = {"read_new", "read_tail", "read_whole"}
# who may read a log's bytes itself: the catch-up engine (the one writer of derived state), the rest read in
# memory while it builds, the store's scans, compaction and conflict merging (they rewrite the logs
# themselves), and capture (transcripts, with its own `read_new`)
ALLOWED_READERS = {
    "contextflow.core.log",
    "contextflow.core.catchup",
    "contextflow.core.rest",
    "contextflow.core.store",
    "contextflow.core.compact",
    "contextflow.core.conflicts",
}
POSITION_FILE = ("state.json", "positions.json", "cursor.json", "cursors.json", "offsets.json")


def second_engines(root: Path = PACKAGE) -> list[str]:
    """Modules outside the allowed readers that read the logs' bytes (`core/log.py`'s readers) or name a
    read-position state file of their own: a second catch-up engine."""
    found = []
    for path in sorted(root.rglob("*.py")):
        module = module_of(path)
        if module in ALLOWED_READERS or module.startswith("contextflow.capture"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("core.log"):
                found += [f"{module} imports {alias.name}" for alias in node.names if alias.name in LOG_READERS]
            elif isinstance(node, ast.Attribute) and node.attr in LOG_READERS:
                found.append(f"{module} calls {node.attr}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in POSITION_FILE:
                found.append(f"{module} names {node.value}")
    return found


def test_one_catch_up_engine_writes_derived_state():
    assert second_engines() == []


def test_the_engine_check_catches_a_second_one(tmp_path):
    (tmp_path / "contextflow" / "search").mkdir(parents=True)
    (tmp_path / "contextflow" / "search" / "mine.py").write_text(
        'from contextflow.core.log import read_new\nSTATE = "state.json"\n', encoding="utf-8"
    )
    found = second_engines(tmp_path / "contextflow")
    assert len(found) == 2 and "imports read_new" in found[0] and "names state.json" in found[1]
