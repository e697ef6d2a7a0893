"""The shared core: log I/O, the store and its folds, events, clock, ids, checks, errors, settings.

Nothing here knows a feature: whoever builds the app hands the store its views."""
