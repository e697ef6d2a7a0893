"""Placeholder, replaced by the recall table."""

from __future__ import annotations

from contextflow.operations.spec import Feature

FEATURE = Feature(group="recall")
