"""Sessions (ContextFlowMCP's model): notes, handoffs, the active session, sessions on disk."""

from contextflow.features import Feature

FEATURE = Feature(
    "sessions",
    group="sessions",
    table="contextflow.sessions.operations",
    fields="contextflow.sessions.fields",
    extractors="contextflow.sessions.extract",
    search_version=(1, "818277b1d61ed463eb9c"),
    projections={"sessions": "contextflow.sessions.projection:PROJECTION"},
)
