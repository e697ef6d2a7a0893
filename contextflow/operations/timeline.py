"""Placeholder, replaced by the timeline table."""

from __future__ import annotations

from contextflow.operations.spec import Feature

FEATURE = Feature(group="timeline")
