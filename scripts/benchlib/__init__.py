"""Helpers for scripts/bench: store generation, MCP timing, process probes and the report."""
