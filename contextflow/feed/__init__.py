"""The activity feed: every event a person cares about, newest first, from the derived tables on disk."""

from contextflow.features import Feature

FEATURE = Feature(
    "feed", table="contextflow.feed.operations", projections={"feed": "contextflow.feed.projection:PROJECTION"}
)
