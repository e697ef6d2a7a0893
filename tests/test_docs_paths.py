"""The maps stay true: every module path README.md, MAINTAINERS.md and docs/ name exists.

Read from backticked spans: a `.py` file or a folder (`core/log.py`, `adapters/ui/`), and a dotted
name that starts with a module of ours (`features.all_unneeded()`, `text.quote`, `log.PREFIX_BLOCK`,
`contextflow.search.derived`) or one of our classes (`Store.refresh`), whose next part must be
defined there. Event kinds (`graph.node`), file names (`state.json`) and the store's own folders
are not module paths."""

from __future__ import annotations

import ast
import re
from functools import cache
from importlib.util import find_spec
from pathlib import Path

from contextflow.core.scan import BOUND_KIND
from contextflow.features import all_fields

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "contextflow"
DOCS = [ROOT / "README.md", ROOT / "MAINTAINERS.md", *sorted((ROOT / "docs").rglob("*.md"))]
# folders and files of a store, a state folder or an example, not of the code
NOT_CODE = {".sessions/", "blobs/", "derived/", "quarantine/", "shared/", ".contextflow/", "basic-memory-real/"}
NOT_CODE |= {"calc.py"}  # the file an agent writes in the captured sample session (docs/clients.md)
DATA_FILE = re.compile(r"\.(json|jsonl|txt|lock|log|cfsnap|pickle|md|toml)$")


@cache
def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


@cache
def defined(path: Path) -> frozenset[str]:
    """Top-level names of a module, and `Class.member` for its classes' members."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            if isinstance(node, ast.ClassDef):
                names.update(f"{node.name}.{member}" for member in _members(node))
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return frozenset(names)


def _members(cls: ast.ClassDef) -> set[str]:
    members = set()
    for node in ast.walk(cls):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            members.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            members.add(node.target.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            members.add(node.attr)
        elif isinstance(node, ast.Assign):
            members.update(n.id for target in node.targets for n in ast.walk(target) if isinstance(n, ast.Name))
    return members


def file_exists(name: str) -> bool:
    """A file of the repository (code, scripts, tests) whose path ends with `name`."""
    tail = "/" + name.removeprefix("contextflow/")
    return any(
        ("/" + str(path.relative_to(ROOT))).endswith(tail)
        for folder in ("contextflow", "scripts", "tests")
        for path in (ROOT / folder).rglob(Path(name).name)
    )


def folder_exists(name: str) -> bool:
    tail = name.strip("/").removeprefix("contextflow/")
    return (ROOT / name).is_dir() or any(path.is_dir() for path in PACKAGE.glob(f"**/{tail}"))


def dotted_exists(name: str) -> bool | None:
    """True or False for a name that starts with a module or class of ours; None for anything else."""
    parts = name.removesuffix("()").split(".")
    for cut in range(len(parts), 0, -1):
        prefix, rest = ".".join(parts[:cut]), parts[cut:]
        found = [path for module, path in modules().items() if module == prefix or module.endswith("." + prefix)]
        if found:
            return not rest or any(rest[0] in defined(path) for path in found)
    classes = [path for path in modules().values() if parts[0] in defined(path) and parts[0][:1].isupper()]
    if classes and len(parts) > 1:
        return any(f"{parts[0]}.{parts[1]}" in defined(path) for path in classes)
    return None


def missing_in(text: str) -> list[str]:
    kinds = set(all_fields()) | {BOUND_KIND}
    missing = []
    for span in dict.fromkeys(re.findall(r"`([^`\n]+)`", text)):
        if span in NOT_CODE or span in kinds:
            continue
        if re.fullmatch(r"[\w./-]+\.py", span):
            ok: bool | None = file_exists(span)
        elif re.fullmatch(r"[\w.-]+(/[\w.-]+)*/", span):
            ok = folder_exists(span)
        elif re.fullmatch(r"\w+(\.\w+)+(\(\))?", span) and not DATA_FILE.search(span):
            ok = dotted_exists(span)
            if ok is None and span.endswith("()"):  # a call names code: ours, or a library's
                ok = find_spec(span.split(".")[0]) is not None
        else:
            ok = None
        if ok is False:
            missing.append(span)
    return missing


def test_every_module_path_the_docs_name_exists():
    missing = {doc.name: found for doc in DOCS if (found := missing_in(doc.read_text(encoding="utf-8")))}
    assert missing == {}


def test_a_stale_path_is_caught():
    stale = "`sessions_index.py`, `cli/`, `operations/graph.py`, `views.folded_views()`, `features.VIEWS`"
    assert missing_in(stale) == [
        "sessions_index.py",
        "cli/",
        "operations/graph.py",
        "views.folded_views()",
        "features.VIEWS",
    ]
    good = "`core/log.py`, `adapters/ui/`, `features.all_unneeded()`, `Store.refresh`, `graph.node`, `state.json`"
    assert missing_in(good) == []
