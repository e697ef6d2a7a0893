"""The adapters: the stdio MCP server and HTTP bridge, the CLI, client hooks, the picker and the local
web page (`ui/`). Each is thin: it parses, calls an operation from the table, and renders."""
