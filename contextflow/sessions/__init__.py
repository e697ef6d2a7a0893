"""Sessions (ContextFlowMCP's model): notes, handoffs, the active session, sessions on disk."""

from contextflow.features import Feature

FEATURE = Feature(
    "sessions",
    group="sessions",
    table="contextflow.sessions.operations",
    fields="contextflow.sessions.fields",
    extractors="contextflow.sessions.extract",
    search_version=(1, "93cf99bdb16916db74a9"),
    projections={"sessions": "contextflow.sessions.projection:PROJECTION"},
)
