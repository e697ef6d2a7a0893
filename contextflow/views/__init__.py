"""The views folded over every event. Each feature names its views in its `Feature` (contextflow.operations),
so this package imports none of them until a store needs them."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from contextflow.fold import View


def all_views() -> list[View]:
    from contextflow.operations import features

    found: list[View] = []
    for feature in features():
        for path in feature.views:
            module, _, name = path.partition(":")
            found.append(getattr(importlib.import_module(module), name)())
    return found
