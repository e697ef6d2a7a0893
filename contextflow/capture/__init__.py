"""Capture: one compact activity record per turn, read deterministically from the client's own
record of the session (Claude Code's transcript, Codex's rollout, Gemini CLI's chat file), and
an automatic handoff kept current after each turn. No model calls; new bytes only."""

from contextflow.features import Feature

FEATURE = Feature(
    "capture",
    table="contextflow.capture.operations",
    fields="contextflow.capture.fields",
    extractors="contextflow.capture.extract",
    search_version=(1, "510445b81f2b7c6c3e93"),
    projections={"capture": "contextflow.capture.projection:PROJECTION"},
)
