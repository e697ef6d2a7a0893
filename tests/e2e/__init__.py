"""End-to-end tests: `contextflow serve` as a real subprocess, driven by real MCP clients."""
