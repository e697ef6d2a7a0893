"""Sessions (ContextFlowMCP's model): notes, handoffs, the active session, sessions on disk."""

from contextflow.features import Feature

FEATURE = Feature(
    "sessions",
    group="sessions",
    table="contextflow.sessions.operations",
    views={"sessions": "contextflow.sessions.view:SessionsView"},
    fields="contextflow.sessions.fields",
    extractors="contextflow.sessions.extract",
    search_version=(1, "03fa5d9d9611785cda3f"),
    tables={"sessions": "contextflow.sessions.table:TABLES"},
)
