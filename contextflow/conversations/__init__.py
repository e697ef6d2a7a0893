"""Structured conversation records, saved whole, with their transcripts kept apart as blobs."""
