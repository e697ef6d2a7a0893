"""The limits and defaults search's table and its core both use (this module stays light: the table imports it)."""

# the kinds `--kind` and `kinds=[...]` accept: what the features' extractors name (a test checks they agree)
SEARCH_KINDS = ("activity", "context", "conversation", "handoff", "node", "note", "thought", "thread")
DEFAULT_LIMIT, MAX_LIMIT = 8, 50
DEFAULT_BUDGET, MIN_BUDGET, MAX_BUDGET = 2_000, 200, 50_000
