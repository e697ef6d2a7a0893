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
    assert not os.path.lexists(target) or stat.S_ISREG(os.lstat(target).st_mode)  # (removed, or made again)
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


# -- doctor: state items of the wrong type (lock files, the index folder) ------------------------------


def state_item(app: App, name: str) -> Path:
    if name == "index folder":
        return derived.search_for(app.store).index_folder()
    if name == ".tantivy-writer.lock":
        return derived.search_for(app.store).index_folder() / name
    return app.store.state_dir / name


@pytest.mark.parametrize(
    ("name", "how", "said"),
    [
        ("views.build.lock", "fifo", "a FIFO, not a regular file"),
        ("views.ahead.lock", "folder", "a folder, not a regular file"),
        (".tantivy-writer.lock", "fifo", "a FIFO, not a regular file"),
        ("index folder", "file", "a regular file, not a folder"),
    ],
)
def test_doctor_names_a_state_item_of_the_wrong_type_and_fix_removes_it(
    app: App, name: str, how: str, said: str
) -> None:
    want = stock(app)
    target = state_item(app, name)
    replace(target, how)
    os.chmod(target, 0o755 if how == "folder" else 0o644)  # (not what doctor should speak of)
    info = doctor()
    problems = [str(problem) for problem in list_of(info["problems"])]
    assert any(str(target) in problem and said in problem and "--fix" in problem for problem in problems), problems
    assert not any(str(target) in problem and "readable by other users" in problem for problem in problems)
    fixed = doctor("--fix")
    assert any(str(target) in str(line) and "removed" in str(line) for line in list_of(fixed["permissions_fixed"]))
    assert not os.path.lexists(target) or stat.S_ISREG(os.lstat(target).st_mode)  # (a lock file made again)
    assert not list_of(doctor()["problems"])
    no_wrong_types(app.store.state_dir)
    assert searched("websocket") == want


def test_a_lock_on_a_folder_holding_files_fails_at_once_saying_what_stands_there(tmp_path: Path) -> None:
    from contextflow.core.lock import LockDamaged, WriterLock

    path = tmp_path / "views.build.lock"
    (path / "inside").mkdir(parents=True)
    with pytest.raises(LockDamaged, match="is a folder holding files: remove it"), WriterLock(path, 5):
        pass


def test_a_lock_on_a_fifo_is_taken_without_waiting_and_still_excludes(tmp_path: Path) -> None:
    from contextflow.core.lock import LockTimeout, WriterLock

    path = tmp_path / "views.build.lock"
    os.mkfifo(path, 0o600)
    held = (
        "from contextflow.core.lock import WriterLock; from pathlib import Path\n"
        f"WriterLock(Path({str(path)!r}), 5).acquire()\nprint('held', flush=True)\ninput()"
    )
    with subprocess.Popen(
        [sys.executable, "-c", held], env={**os.environ, "PYTHONPATH": str(ROOT)}, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True,
    ) as holder:  # fmt: skip
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "held\n"
            with pytest.raises(LockTimeout), WriterLock(path, 0):
                pass
        finally:
            holder.kill()


LONG_LIVED = (
    "import json, os, shutil, sys\n"
    "from contextflow.app import App\n"
    "from contextflow.search import derived, retrieval\n"
    "app = App.open()\n"
    "def refs():\n"
    "    return sorted(s.hit.doc.ref for s in retrieval.get_context(app, query='websocket').shown)\n"
    "app.store.append('note', {'project': 'web', 'text': 'the websocket reconnect drops queued messages'})\n"
    "seen = [refs()]\n"
    "folder = derived.search_for(app.store).index_folder()\n"
    "target = folder / sys.argv[1] if sys.argv[1] else folder\n"
    "shutil.rmtree(target) if target.is_dir() else target.unlink()\n"
    "os.mkfifo(target)\n"
    "seen.append(refs())\n"
    "app.store.append('note', {'project': 'web', 'text': 'a websocket ping keeps the proxy from closing it'})\n"
    "seen.append(refs())\n"
    "print(json.dumps(seen))\n"
)


@pytest.mark.parametrize("name", ["meta.json", ".managed.json", ".tantivy-meta.lock", ""])
def test_a_server_holding_the_index_open_answers_every_later_call_after_a_fifo_takes_a_files_place(
    name: str, app: App
) -> None:
    done = child("-c", LONG_LIVED, name)
    assert done.returncode == 0, done.stderr
    first, damaged, later = json.loads(done.stdout.splitlines()[-1])
    assert len(first) == 1 and damaged == first and len(later) == 2 and first[0] in later
