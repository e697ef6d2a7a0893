"""Running and keeping contextflow: serve, doctor, install, hooks' setup, compaction."""
