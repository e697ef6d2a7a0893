"""Capture: one compact activity record per turn, read deterministically from the client's own
record of the session (Claude Code's transcript, Codex's rollout, Gemini CLI's chat file), and
an automatic handoff kept current after each turn. No model calls; new bytes only."""

from contextflow.features import Feature

FEATURE = Feature(
    "capture",
    table="contextflow.capture.operations",
    fields="contextflow.capture.fields",
    extractors="contextflow.capture.extract",
    search_version=(1, "d6949a03902a04c91b1b"),
    projections={"capture": "contextflow.capture.projection:PROJECTION"},
)
