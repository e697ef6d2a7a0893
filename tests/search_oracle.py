"""The search view folded in memory: the oracle the shared on-disk index (`search/derived.py`) is tested
against. Never used at run time: every search reads the index on disk."""

from __future__ import annotations

import weakref

from contextflow.app import App
from contextflow.core.fold import LazyView
from contextflow.core.store import Store
from contextflow.features import view_paths
from contextflow.search.index import SearchIndex
from contextflow.search.view import VIEW_NAME, SearchView

_TWINS: weakref.WeakKeyDictionary[Store, Store] = weakref.WeakKeyDictionary()


def memory_index(store: Store) -> SearchIndex:
    """The search view folded in this process's memory by a twin store that folds only it."""
    twin = _TWINS.get(store)
    if twin is None:
        twin = _TWINS[store] = Store(
            store.location,
            store.writer,
            store.state_dir,
            views=[LazyView(VIEW_NAME, view_paths()[VIEW_NAME])],
            fields=store.fields,  # the same shape checks as every view
            shares_state=False,
        )
    return twin.view(SearchView)


def search_index(app: App) -> SearchIndex:
    """The app's search view in memory (its own fold when its store folds the view)."""
    if app.store.folds(VIEW_NAME):
        return app.store.view(SearchView)
    return memory_index(app.store)
