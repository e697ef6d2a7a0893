"""Running and keeping contextflow: serve, doctor, install, hooks' setup, compaction."""

from contextflow.features import Feature

FEATURE = Feature("admin", group="admin", table="contextflow.admin.operations")
