"""The adapters: the stdio MCP server and HTTP bridge, the CLI, client hooks and the picker. Each is thin:
it parses, calls an operation from the table, and renders."""
