"""Placeholder, replaced by the context table."""

from __future__ import annotations

from contextflow.operations.spec import Feature

FEATURE = Feature(group="context")
