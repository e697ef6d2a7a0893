"""Placeholder, replaced by the admin table."""

from __future__ import annotations

from contextflow.operations.spec import Feature

FEATURE = Feature(group="admin")
