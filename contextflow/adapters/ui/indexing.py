"""Never a silent wait: the search index is brought up to date in the background, and while it is
built (the first time on a machine, or after many new bytes) a search answers with how far it is.

`Indexer.building()` says whether a build is under way (or starts one when the index is far
behind) and how far it is: bytes and events read, time left. A small gap is caught up by the
search itself, as every process does. Also the capture state the health page shows.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextflow.core import progress
from contextflow.core.log import list_segments
from contextflow.search import derived

if TYPE_CHECKING:
    from contextflow.app import App
    from contextflow.core.store import Store

BACKGROUND_BYTES = 4 * 1024 * 1024  # a search further behind than this waits for a background build


class Indexer:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.thread: threading.Thread | None = None
        self.began = 0.0
        self.failed: str | None = None
        self.mutex = threading.Lock()

    def start(self) -> None:
        """Bring the index up to date in a background thread (once at a time)."""
        with self.mutex:
            if self.thread is not None and self.thread.is_alive():
                return
            self.failed, self.began = None, time.monotonic()
            self.thread = threading.Thread(target=self._run, name="contextflow-index", daemon=True)
            self.thread.start()

    def _run(self) -> None:
        try:
            derived.search_for(self.store).index()
        except Exception as exc:  # the next search tries again and reports it
            self.failed = str(exc)

    def behind(self) -> int:
        """Bytes of the logs not yet in the index (all of them when there is no index yet)."""
        described = derived.describe(self.store)
        if described["version_matches"]:
            return int(described["log_bytes_behind"] or 0)
        return sum(_size(path) for path in list_segments(self.store.folder, self.store.location.legacy_files))

    def building(self) -> dict[str, Any] | None:
        """How far the build under way is, or None when a search can run now (the index is current
        or nearly). A search far behind starts the build."""
        with self.mutex:
            alive = self.thread is not None and self.thread.is_alive()
        if not alive:
            behind = self.behind()
            if behind <= BACKGROUND_BYTES:
                return None
            self.start()
        state = progress.running() or {"done_bytes": 0, "total_bytes": 0, "events": 0, "seconds_left": None}
        return {**state, "seconds": round(time.monotonic() - self.began, 1), "failed": self.failed}


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def capture_state(app: App) -> dict[str, Any]:
    """What this machine's capture keeps: transcripts followed and when each was last read."""
    folder = app.store.state_dir / "capture"
    try:
        files = [entry for entry in folder.iterdir() if entry.is_file() and entry.suffix == ".json"]
    except OSError:
        files = []
    stamps = [entry.stat().st_mtime for entry in files]
    last = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(max(stamps))) if stamps else None
    return {"folder": str(folder), "transcripts": len(files), "last_capture": last}
