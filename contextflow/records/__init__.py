"""Keyed context records and orientation (whereami, wherewasi, remember)."""
