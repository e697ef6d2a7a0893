"""`App`: the store plus settings, the one object every adapter hands to the core functions."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from contextflow.core.errors import StoreError
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
        store = Store.open(env, **store_kwargs)
        return cls(store, Settings.from_env(store.state_dir, env, cwd))

    def close(self) -> None:
        if self.store.loaded and self.store.view_loaded("sessions"):  # never load a view just to close
            from contextflow.sessions import index as sessions_index

            with contextlib.suppress(StoreError):  # a view that cannot be read now (a legacy file too large)
                sessions_index.save_if_stale(self.store, self.store.view("sessions"), force=True)
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
