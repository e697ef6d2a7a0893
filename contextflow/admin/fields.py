"""The closed lists the admin table and its core both use (this module stays light: the table imports it)."""

CLIENTS = ("claude-code", "codex", "gemini", "cursor")  # what `install` supports
