"""Sessions (ContextFlowMCP's model): notes, handoffs, the active session, the sessions sidecar."""
