"""Placeholder, replaced by the graph table."""

from __future__ import annotations

from contextflow.operations.spec import Feature

FEATURE = Feature(group="graph")
