"""`App`: the store plus settings, the one object every adapter hands to the core functions."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from contextflow.core.fold import View
from contextflow.core.settings import Settings
from contextflow.core.store import Store

if TYPE_CHECKING:
    from contextflow.core.tables import Tables


@dataclass
class App:
    store: Store
    settings: Settings

    @classmethod
    def open(
        cls, env: Mapping[str, str] | None = None, *, cwd: str | os.PathLike[str] | None = None, **store_kwargs: Any
    ) -> App:
        """The store the environment names, folding every feature's views (`contextflow.features`).
        `cwd`: the working folder whose repository names the default project (core.project)."""
        from contextflow import features

        env = os.environ if env is None else env
        store_kwargs.setdefault("views", features.folded_views)
        store_kwargs.setdefault("fields", features.all_fields)
        store_kwargs.setdefault("snapshot_versions", features.snapshot_versions)
        store = Store.open(env, **store_kwargs)
        return cls(store, Settings.from_env(store.state_dir, env, cwd))

    def close(self) -> None:
        if self.store.loaded:  # each feature's close-time work, for the views this process loaded
            from contextflow import features

            features.close(self.store)
        if "contextflow.core.tables" in sys.modules:  # (never imported just to close)
            sys.modules["contextflow.core.tables"].close_for(self.store)
        self.store.close()

    def tables(self) -> Tables:
        """The derived tables on disk every process of this machine shares (`core/tables.py`)."""
        from contextflow import features
        from contextflow.core.tables import tables_for

        return tables_for(self.store, features.all_tables)

    def every_view(self) -> list[View]:
        """Fresh instances of every feature's view, search included (compaction asks each of them)."""
        from contextflow import features

        return features.all_views()
