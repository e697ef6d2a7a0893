"""`App`: the store plus settings, the one object every adapter hands to the core functions."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contextflow.core import legacy
from contextflow.core.errors import StoreError
from contextflow.core.fold import View
from contextflow.core.settings import Settings
from contextflow.core.store import Store


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
        location = store.location
        legacy_active = legacy.active_session_file(location.legacy_files, location.source)
        return cls(store, Settings.from_env(store.state_dir, env, cwd, legacy_active))

    def close(self) -> None:
        if self.store.loaded and self.store.view_loaded("sessions"):  # never load a view just to close
            from contextflow.sessions import index as sessions_index

            with contextlib.suppress(StoreError):  # a view that cannot be read now (a legacy file too large)
                sessions_index.save_if_stale(self.store, self.store.view("sessions"), force=True)
        self.store.close()

    def every_view(self) -> list[View]:
        """Fresh instances of every feature's view, search included (compaction asks each of them)."""
        from contextflow import features

        return features.all_views()
