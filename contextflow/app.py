"""`App`: the store plus settings, the one object every adapter hands to the core functions."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from contextflow.core import legacy
from contextflow.core.locate import Location
from contextflow.core.project import settings_for
from contextflow.core.settings import Settings, adopt
from contextflow.core.store import Store

if TYPE_CHECKING:
    from contextflow.core.scan import Unneeded
    from contextflow.core.tables import Tables


class App:
    """One store and the settings it is used with (a plain class: every hook call defines it)."""

    def __init__(self, store: Store, settings: Settings, env: Mapping[str, str] | None = None) -> None:
        self.store = store
        self.settings = settings
        self.env = os.environ if env is None else env  # the environment it was opened with

    @classmethod
    def open(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        cwd: str | os.PathLike[str] | None = None,
        location: Location | None = None,
        **store_kwargs: Any,
    ) -> App:
        """The store the environment names, checking every field as the features declare it
        (`contextflow.features`), and the settings resolved from that environment. `cwd`: the working
        folder whose repository names the default project (core.project); `location=`: where the caller
        already found the store."""
        from contextflow import features

        env = os.environ if env is None else env
        store_kwargs.setdefault("fields", features.all_fields)
        store = Store.open(env, location, **store_kwargs)
        found = store.location
        legacy_active = legacy.active_session_file(found.legacy_files, found.source)
        settings = settings_for(store.state_dir, env, cwd, legacy_active)
        adopt(settings)  # what has no App at hand (the search ranking) reads the same settings
        return cls(store, settings, env)

    def close(self) -> None:
        if "contextflow.core.tables" in sys.modules:  # (never imported just to close)
            sys.modules["contextflow.core.tables"].close_for(self.store)

    def tables(self) -> Tables:
        """The derived tables on disk every process of this machine shares (`core/tables.py`)."""
        from contextflow import features
        from contextflow.core.tables import tables_for

        return tables_for(self.store, features.all_projections)

    def unneeded(self) -> dict[str, Unneeded | None]:
        """What each projection, and the search index, can do without (compaction asks each of them)."""
        from contextflow import features

        return features.all_unneeded()
