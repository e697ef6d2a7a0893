"""Sessions (ContextFlowMCP's model): notes, handoffs, the active session, sessions on disk."""

from contextflow.features import Feature

FEATURE = Feature(
    "sessions",
    group="sessions",
    table="contextflow.sessions.operations",
    views={"sessions": "contextflow.sessions.view:SessionsView"},
    fields="contextflow.sessions.fields",
    extractors="contextflow.sessions.extract",
    search_version=(1, "c2a72890a9e33248de43"),
    tables={"sessions": "contextflow.sessions.table:TABLES"},
)
