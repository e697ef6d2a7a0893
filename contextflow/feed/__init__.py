"""The activity feed: every event a person cares about, newest first, from the derived tables on disk."""
