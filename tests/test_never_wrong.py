"""Never a wrong answer: while the derived state is being built, locked by another process or damaged,
a read answers completely (from the logs) or says plainly what it could not read; "not found" never comes
from an unfinished build, a lock or a damaged file."""

from __future__ import annotations

import pytest

from contextflow.app import App
from contextflow.search import derived, retrieval


def refs(app: App, query: str) -> list[str]:
    return [shown.hit.doc.ref for shown in retrieval.get_context(app, query=query).shown]


def stock(app: App) -> None:
    app.store.append("note", {"project": "web", "text": "the websocket reconnect drops queued messages"})
    app.store.append("note", {"project": "api", "text": "token refresh retries once before failing"})


@pytest.mark.parametrize("name", ["meta.json", "state.json", "segments"])
def test_a_deleted_file_of_the_search_index_never_hides_results(app, name):
    stock(app)
    assert len(refs(app, "websocket")) == 1
    search = derived.search_for(app.store)
    folder = search.index_folder()
    if name == "meta.json":
        (folder / "meta.json").unlink()
    elif name == "state.json":
        (search.folder / derived.STATE_FILE).unlink()
    else:
        for path in folder.iterdir():
            if path.suffix in (".idx", ".store", ".term"):
                path.unlink()
    for reader in (App.open(), app):
        assert len(refs(reader, "websocket")) == 1


def test_doctor_names_a_damaged_search_index_and_fix_rebuilds_it(capsys, app):
    import json

    from contextflow.adapters.cli import main

    stock(app)
    assert refs(app, "websocket")
    (derived.search_for(app.store).index_folder() / "meta.json").unlink()
    main(["doctor", "--quick", "--format", "json"])
    info = json.loads(capsys.readouterr().out)
    assert info["derived"]["damaged"] and any("search index is damaged" in p for p in info["problems"])
    main(["doctor", "--quick", "--fix", "--format", "json"])
    capsys.readouterr()
    main(["doctor", "--quick", "--format", "json"])
    info = json.loads(capsys.readouterr().out)
    assert info["derived"]["damaged"] is None and not any("search index" in p for p in info["problems"])
    assert len(refs(App.open(), "websocket")) == 1
