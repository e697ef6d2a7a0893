"""The machine-local state folder is a trust boundary: nothing read from it can run code, it is
private to its user, and the links and names in and around the store are never followed blindly."""

from __future__ import annotations

import os
import pickle
import stat
from pathlib import Path

import pytest

from contextflow.adapters.cli import main
from contextflow.app import App
from contextflow.core import blobs, locate
from contextflow.core.errors import ContextflowError, InputError, StoreError
from tests.folding import view_of
from tests.sync.workload import differences, picture, write_round


class _Planted:
    """Unpickling this writes a marker file: proof that something read from the state folder ran code."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os.system, (f"touch {self.marker}",))


# -- 6. nothing folded is read from the state folder --------------------------------------------


def test_a_planted_pickle_or_snapshot_file_is_never_read(app, tmp_path, capsys):
    write_round(app, 0)
    marker = tmp_path / "pwned"
    payload = b"CFSNAP2\n" + (16).to_bytes(8, "big") + pickle.dumps(_Planted(marker))
    for name in ("snapshot.pickle", "snapshot.cfsnap"):  # what older versions kept there
        path = app.store.state_dir / name
        path.write_bytes(payload)
        os.chmod(path, 0o600)
    assert main(["note", "after the plant"]) == 0
    again = App.open()
    view_of(again.store, "sessions")
    assert not marker.exists()
    assert differences(picture(App.open(shares_state=False)), picture(again)) == []


# -- 7. private files and folders --------------------------------------------------------------


def test_every_state_file_is_0600_and_every_state_folder_0700(app, tmp_path, capsys):
    for i in range(3):
        write_round(app, i)
    app.close()
    assert main(["note", "one more"]) == 0
    root = tmp_path / "state"
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        expected = 0o700 if path.is_dir() else 0o600
        assert mode == expected, f"{path} is {mode:o}"


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777])
def test_a_group_or_world_writable_state_folder_is_refused(tmp_path, mode, capsys):
    root = tmp_path / "state"
    root.mkdir(mode=0o700)
    os.chmod(root, mode)
    with pytest.raises(ContextflowError, match="writable by other users"):
        App.open()
    assert main(["note", "x"]) == 2
    assert "writable by other users" in capsys.readouterr().err


def test_a_state_folder_owned_by_another_user_is_refused(tmp_path, monkeypatch):
    root = tmp_path / "state"
    root.mkdir(mode=0o700)
    monkeypatch.setattr(locate, "current_uid", lambda: root.stat().st_uid + 1)
    with pytest.raises(ContextflowError, match="owned by another user"):
        App.open()


def test_a_state_folder_inside_the_synced_store_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CONTEXTFLOW_STATE", str(tmp_path / "store" / "state"))
    with pytest.raises(ContextflowError, match="inside the synced store"):
        App.open()
    assert main(["read"]) == 2
    assert "inside the synced store" in capsys.readouterr().err


def test_a_state_folder_readable_by_others_is_made_private(tmp_path):
    root = tmp_path / "state"
    root.mkdir()
    os.chmod(root, 0o755)
    App.open().store.append("note", {"text": "x"})
    assert stat.S_IMODE(root.stat().st_mode) == 0o700


# -- 8. links and names ------------------------------------------------------------------------


def test_a_quarantine_folder_that_is_a_symlink_is_not_followed(app, store_dir, tmp_path):
    app.store.append("note", {"text": "first"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (store_dir / "quarantine").symlink_to(elsewhere)
    with open(store_dir / "events.writer-a.jsonl", "ab") as handle:
        handle.write(b'{"torn')
    with pytest.raises(StoreError, match="symbolic link"):
        app.store.append("note", {"text": "second"})
    assert list(elsewhere.iterdir()) == []
    assert (store_dir / "events.writer-a.jsonl").read_bytes().endswith(b'{"torn')  # nothing lost


def test_a_blobs_folder_that_is_a_symlink_is_not_followed(store_dir, tmp_path):
    store_dir.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (store_dir / "blobs").symlink_to(elsewhere)
    with pytest.raises(StoreError, match="symbolic link"):
        blobs.write_blob(store_dir, b"transcript")
    assert list(elsewhere.rglob("*")) == []
    sha = "a" * 64
    (elsewhere / "aa").mkdir()
    (elsewhere / "aa" / sha).write_bytes(b"planted")
    with pytest.raises(StoreError, match="symbolic link"):
        blobs.read_blob(store_dir, sha)


def test_the_same_store_through_a_symlink_shares_one_lock_and_one_writer_sequence(tmp_path, store_dir):
    store_dir.mkdir()
    link = tmp_path / "link-to-store"
    link.symlink_to(store_dir)
    direct = App.open()
    linked = App.open({**os.environ, "CONTEXTFLOW_STORE": str(link)})
    assert linked.store.state_dir == direct.store.state_dir
    assert linked.store.log_writer.lock_file == direct.store.log_writer.lock_file
    seqs = [
        direct.store.append("note", {"text": "a"}).seq,
        linked.store.append("note", {"text": "b"}).seq,
        direct.store.append("note", {"text": "c"}).seq,
    ]
    assert seqs == [1, 2, 3]


@pytest.mark.parametrize(
    "writer",
    ["laptop.sync-conflict-20250101-120000-ABCDEF", "laptop.conflict", "a/b", "..", "a\\b", "laptop~1"],
)
def test_writer_ids_that_look_like_conflict_copies_or_paths_are_refused(monkeypatch, writer, capsys):
    monkeypatch.setenv("CONTEXTFLOW_WRITER", writer)
    with pytest.raises(InputError, match="CONTEXTFLOW_WRITER"):
        App.open()
    assert main(["note", "x"]) == 2
    err = capsys.readouterr().err
    assert "CONTEXTFLOW_WRITER" in err and err.count("\n") == 1
