"""Derived state on disk is rebuilt exactly when what goes into it changes (contextflow/core/formats.py).

Each format's version is recorded with the digest of the code it depends on: here for the search
index's own code, in each feature's declaration (`Feature.search_version`) for its extractors. When a
test here fails, the code deciding that content changed: raise the version if what goes in changes
(every machine rebuilds once), else record the new digest (nothing is rebuilt)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from contextflow.core import formats
from contextflow.core.formats import Format
from contextflow.features import all_projections
from contextflow.search import derived

# format name -> (version, digest of its code closure when that version was checked)
RECORDED = {
    "search-index": (6, "c97705f0a1cae752712b"),
    # the derived tables (core/tables.py), the projections keeping a view's state among them
    "sessions": (3, "78c86a9f2af1a976c900"),
    "feed": (3, "2a2d7ee1fca5698ab475"),
    "capture": (4, "5c7dd633ca797a253b27"),
    "graph-state": (4, "f022c1c317d55102944b"),
    "records-state": (2, "b2a085dcd01a1d578945"),
    "conversations-state": (2, "1843ccb2e93bb5e193e4"),
    "timeline": (2, "9dde0619e7b82b4ce9e4"),
}
GUARDED = [table_set.format for table_set in all_projections()]  # every versioned format (the index among them)


@pytest.mark.parametrize("found", GUARDED, ids=lambda f: f.name)
def test_each_format_version_matches_the_code_it_depends_on(found: Format):
    version, digest = RECORDED[found.name]
    now = found.digest()
    assert (found.version, now) == (version, digest), (
        f"the code that decides {found.name}'s content changed ({found.name} digest {now}). If what goes into "
        f"it changes, raise its version ({found.version}); then record ({found.version}, {now!r}) in RECORDED"
    )


@pytest.mark.parametrize("feature", sorted(derived.extractor_formats()))
def test_each_features_extractors_version_matches_their_code(feature: str):
    from contextflow.features import features

    declared = next(f for f in features() if f.name == feature).search_version
    now = derived.extractor_formats()[feature].digest(derived.INDEX)
    assert declared[1] == now, (
        f"{feature}'s extractors (or code only they import) changed. If what they put in the search index "
        f"changes, raise the version in contextflow/{feature}/__init__.py's search_version; either way record "
        f"the digest {now!r} there"
    )


def test_the_index_depends_on_the_ranking_extractors_projects_and_sessions_but_not_on_the_rest():
    modules = set(derived.INDEX.closure())
    for found in derived.extractor_formats().values():
        modules |= set(found.closure())
    wanted = {
        "contextflow.search.ranking",
        "contextflow.search.tokens",
        "contextflow.search.when",
        "contextflow.search.extractors",
        "contextflow.sessions.extract",
        "contextflow.graph.extract",
        "contextflow.core.project",
        "contextflow.sessions.view",
        "contextflow.core.fields",
    }
    assert wanted <= modules
    assert not {"contextflow.graph.query", "contextflow.admin.diagnose", "contextflow.search.retrieval"} & modules


def test_a_change_to_the_ranking_changes_the_digest_and_a_change_elsewhere_does_not(tmp_path, monkeypatch):
    copy = tmp_path / "contextflow"
    shutil.copytree(formats.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(formats, "PACKAGE", copy)
    formats.imports.cache_clear()
    try:
        before = derived.INDEX.digest()
        _append(copy / "graph" / "query.py", "\nUNRELATED = 1\n")
        formats.imports.cache_clear()
        assert derived.INDEX.digest() == before
        sessions = derived.extractor_formats()["sessions"]
        graph = derived.extractor_formats()["graph"]
        stamps = sessions.digest(derived.INDEX), graph.digest(derived.INDEX)
        _append(copy / "sessions" / "extract.py", "\nPRIORITY = 'priority'\n")
        formats.imports.cache_clear()
        assert derived.INDEX.digest() == before and graph.digest(derived.INDEX) == stamps[1]
        assert sessions.digest(derived.INDEX) != stamps[0]  # only the sessions feature's version must move
        _append(copy / "search" / "ranking.py", "\nNEAR_WEIGHT = 0.25\n")
        formats.imports.cache_clear()
        assert derived.INDEX.digest() != before
    finally:
        formats.imports.cache_clear()


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def test_the_index_key_holds_the_versions_not_the_code():
    key = derived.version_key()
    declared = {name: found.version for name, found in derived.extractor_formats().items()}
    assert key["extractors"] == declared and "sessions" in declared
    assert "code" not in key


def test_a_new_index_version_rebuilds_the_index(app):
    import sqlite3

    from contextflow.app import App
    from contextflow.search import retrieval

    app.store.append("note", {"text": "the websocket reconnect drops queued messages"})
    assert len(retrieval.get_context(app, query="websocket").shown) == 1
    before = derived.search_for(app.store).index_folder()
    again = App.open()
    assert len(retrieval.get_context(again, query="websocket").shown) == 1
    assert derived.search_for(again.store).index_folder() == before  # same version: the index is kept
    with sqlite3.connect(app.store.state_dir / "views.sqlite3") as db:  # built by another version
        db.execute("UPDATE formats SET version = version - 1 WHERE name = ?", (derived.NAME,))
    newer = App.open()
    assert len(retrieval.get_context(newer, query="websocket").shown) == 1
    assert derived.search_for(newer.store).index_folder() != before  # a new version: rebuilt


def test_a_module_outside_the_package_is_refused():
    with pytest.raises(ValueError, match="not a module"):
        Format("x", 1, ("contextflow.no_such_module",)).closure()
