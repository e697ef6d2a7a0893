"""A file of the search index folder that is not a regular file (a FIFO, a folder), or the folder itself
replaced by a FIFO or a file: a search never waits on it. The index is found damaged before anything opens
a file there, rebuilt from the logs, and answers as before; `doctor` names the damage and `--fix` removes it.

Each read runs in a child process under a timeout, so a read that blocks on a FIFO fails the test instead
of hanging the suite."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from contextflow.app import App
from contextflow.search import derived, retrieval

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")

ROOT = Path(__file__).resolve().parents[1]
LIMIT_S = 120  # far beyond a rebuild of this small store; a read blocked on a FIFO never ends
SEARCH = (
    "import json, sys\n"
    "from contextflow.app import App\n"
    "from contextflow.search import retrieval\n"
    "found = retrieval.get_context(App.open(), query=sys.argv[1])\n"
    "print(json.dumps(sorted(shown.hit.doc.ref for shown in found.shown)))\n"
)


def child(*argv: str) -> subprocess.CompletedProcess[str]:
    """`python ARGV` with this test's store and state, this checkout's code, at most LIMIT_S seconds."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, *argv], env=env, capture_output=True, text=True, timeout=LIMIT_S, check=False
    )


def searched(query: str) -> list[str]:
    done = child("-c", SEARCH, query)
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.splitlines()[-1]))


def doctor(*flags: str) -> dict[str, object]:
    done = child("-m", "contextflow", "doctor", "--quick", "--format", "json", *flags)
    return dict(json.loads(done.stdout))


def stock(app: App) -> list[str]:
    app.store.append("note", {"project": "web", "text": "the websocket reconnect drops queued messages"})
    app.store.append("note", {"project": "web", "text": "a websocket ping keeps the proxy from closing it"})
    app.store.append("note", {"project": "api", "text": "token refresh retries once before failing"})
    return sorted(shown.hit.doc.ref for shown in retrieval.get_context(app, query="websocket").shown)


def replace(path: Path, how: str) -> None:
    """`path` (a file or the folder) made a FIFO, a folder or a plain file."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    if how == "fifo":
        os.mkfifo(path, 0o600)
    elif how == "folder":
        path.mkdir(mode=0o700)
    else:
        path.write_bytes(b"not an index\n")
        path.chmod(0o600)


def segment_file(folder: Path) -> Path:
    return next(path for path in sorted(folder.iterdir()) if path.suffix == ".term")


CASES = [
    ("meta.json", "fifo"),
    (".managed.json", "fifo"),
    (".tantivy-meta.lock", "fifo"),
    (".tantivy-writer.lock", "fifo"),
    ("meta.json", "folder"),
    (".managed.json", "folder"),
    ("segment", "fifo"),
    ("", "fifo"),  # the index folder itself
    ("", "file"),
]


def damaged_target(app: App, name: str) -> Path:
    folder = derived.search_for(app.store).index_folder()
    return folder if not name else segment_file(folder) if name == "segment" else folder / name


def no_wrong_types(derived_folder: Path) -> None:
    """Everything under the derived folder is a real folder or a regular file (the damage removed)."""
    for at, folders, names in os.walk(derived_folder):
        for name in [*folders, *names]:
            mode = os.lstat(os.path.join(at, name)).st_mode
            assert stat.S_ISDIR(mode) or stat.S_ISREG(mode), os.path.join(at, name)


@pytest.mark.parametrize(("name", "how"), CASES)
def test_a_search_never_waits_on_a_wrong_typed_index_file_and_answers_as_a_fresh_index(
    app: App, name: str, how: str
) -> None:
    want = stock(app)
    assert len(want) == 2
    target = damaged_target(app, name)
    replace(target, how)
    assert searched("websocket") == want  # rebuilt, in a process that never saw the index before
    no_wrong_types(target.parent if not name else target.parent.parent)
    assert searched("websocket") == want  # and read again from the rebuilt index


@pytest.mark.parametrize(("name", "how"), [(".managed.json", "fifo"), (".tantivy-meta.lock", "fifo"), ("", "fifo")])
def test_doctor_names_a_wrong_typed_index_file_and_fix_removes_it(app: App, name: str, how: str) -> None:
    want = stock(app)
    target = damaged_target(app, name)
    replace(target, how)
    info = doctor()
    damage = derived_info(info)["damaged"]
    assert isinstance(damage, str) and "a FIFO" in damage and str(target) in damage
    assert any("search index is damaged" in str(problem) for problem in list_of(info["problems"]))
    doctor("--fix")
    assert not os.path.lexists(target)  # (the rebuilt index is in a new folder)
    info = doctor()
    assert derived_info(info)["damaged"] is None
    no_wrong_types(app.store.state_dir / derived.FOLDER)
    assert searched("websocket") == want


def derived_info(info: dict[str, object]) -> dict[str, object]:
    found = info["derived"]
    assert isinstance(found, dict)
    return found


def list_of(value: object) -> list[object]:
    assert isinstance(value, list)
    return value
