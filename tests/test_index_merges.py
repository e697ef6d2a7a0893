"""Merges of the search index end in the background after a commit (search/disk.py), and the damage
check (search/files.py) looks only at the segments `meta.json` names: a search right after a write waits
for no merge, merges never look like damage, and a torn or truncated file still does."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from contextflow.app import App
from contextflow.search import derived, retrieval
from contextflow.search.disk import DiskIndex
from contextflow.search.docs import Doc
from contextflow.search.files import FilesDamaged, check, committed
from tests import search_oracle


def refs(app: App, query: str) -> list[str]:
    return [shown.hit.doc.ref for shown in retrieval.get_context(app, query=query, limit=50).shown]


def on_disk(app: App) -> dict[str, Doc]:
    return {doc.doc_id: doc for doc in derived.search_for(app.store).index().all_docs()}


def one_note_indexed(app: App) -> tuple[Path, dict[str, int]]:
    """The index folder once a note is searched and its merges ended, and the files its commit recorded."""
    app.store.append("note", {"project": "p", "text": "websocket once"})
    refs(app, "websocket")
    search = derived.search_for(app.store)
    search.index().settle()
    folder = search.index_folder()
    return folder, committed(folder)


def segments(folder: Path) -> int:
    return len(orjson.loads((folder / "meta.json").read_bytes())["segments"])


def test_each_search_after_a_write_finds_it_and_merges_keep_the_segments_few(app):
    for n in range(30):  # a commit each: merges start along the way (eight small segments make one)
        app.store.append("note", {"project": "p", "text": f"websocket retry number{n}"})
        assert len(refs(app, "websocket")) == n + 1
        assert refs(app, f"number{n}")
    index = derived.search_for(app.store).index()
    index.settle()
    assert segments(index.folder) < 30
    memory = App.open()
    assert on_disk(app) == dict(search_oracle.memory_index(memory.store).docs)


def test_merges_still_going_are_not_damage_and_another_writer_waits_for_them(app):
    for n in range(12):
        app.store.append("note", {"project": "p", "text": f"websocket entry{n}"})
        refs(app, "websocket")
    search = derived.search_for(app.store)
    folder = search.index_folder()
    recorded = derived.Committed(search.tables()).files
    check(folder, recorded)  # whatever the merges did since the commit that recorded these
    other = DiskIndex(folder)  # another process's handle: its writer waits for tantivy's lock
    other.write([])
    other.commit()
    other.settle()
    search.index().settle()
    check(folder, recorded)
    assert len(refs(App.open(), "websocket")) == 12


def test_a_truncated_file_of_a_live_segment_or_a_torn_meta_file_is_damage(app, tmp_path):
    folder, recorded = one_note_indexed(app)
    assert recorded and all(not name.startswith("meta") for name in recorded)
    victim = next(folder / name for name in recorded if name.endswith(".term"))
    whole = victim.read_bytes()
    victim.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(FilesDamaged, match="not those its last commit wrote"):
        check(folder, recorded)
    victim.write_bytes(whole)
    check(folder, recorded)
    (folder / "meta.json").write_bytes(b'{"segments": [')
    with pytest.raises(FilesDamaged, match="meta file"):
        check(folder, recorded)
    (folder / "meta.json").unlink()
    with pytest.raises(FilesDamaged, match="gone"):
        check(folder, recorded)
    assert committed(folder) == {}  # nothing to record where nothing is committed
    check(tmp_path / "nowhere", {})  # an index not written yet holds nothing to check


def test_a_file_deleted_while_the_folder_is_scanned_is_only_left_out(app, monkeypatch):
    folder, recorded = one_note_indexed(app)
    real = os.scandir

    class Gone:  # an entry a merge's clean-up deleted between the listing and its stat
        name, path = "0123456789abcdef0123456789abcdef.term", str(folder / "gone")

        def is_file(self, follow_symlinks: bool = True) -> bool:
            raise FileNotFoundError(self.path)

        def stat(self, follow_symlinks: bool = True) -> os.stat_result:
            raise FileNotFoundError(self.path)

    class Listing:
        def __init__(self, path: Path) -> None:
            self.inner = real(path)

        def __enter__(self) -> Listing:
            return self

        def __exit__(self, *exc: object) -> None:
            self.inner.close()

        def __iter__(self):
            yield Gone()
            yield from self.inner

    monkeypatch.setattr(os, "scandir", Listing)
    check(folder, recorded)  # the live segments' files are all there: no damage
    assert committed(folder) == recorded
