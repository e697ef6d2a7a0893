"""`App`: the store plus settings, the one object every adapter hands to the core functions."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contextflow.core import legacy
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
        if self.store.loaded:  # each feature's close-time work, for the views this process loaded
            from contextflow import features

            features.close(self.store)
        self.store.close()

    def every_view(self) -> list[View]:
        """Fresh instances of every feature's view, search included (compaction asks each of them)."""
        from contextflow import features

        return features.all_views()
