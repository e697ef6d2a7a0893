"""Timeline threads: thoughts, tangents and "you are here" positions."""
