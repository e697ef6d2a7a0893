"""The feed's limits, which its table and its core both use (this module stays light: the table imports it).
The feed has no event kinds of its own: it lists other features' events."""

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
