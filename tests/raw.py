"""Events written straight into writers' logs, as other machines' logs arrive (tests choose the writer,
seq and clock stamp of each)."""

from __future__ import annotations

from pathlib import Path

from contextflow.core.events import Event, encode
from contextflow.core.log import log_path


def write_events(folder: Path, events: list[Event]) -> None:
    """Append each event to its writer's log in `folder`, in the order given."""
    folder.mkdir(parents=True, exist_ok=True)
    for event in events:
        with log_path(folder, event.writer).open("ab") as handle:
            handle.write(encode(event))
