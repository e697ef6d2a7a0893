"""contextflow: shared memory for AI coding agents over append-only JSONL logs."""

__version__ = "0.1.0"

__all__ = ["__version__"]
