"""Never a silent wait: the search index is brought up to date in the background, and while it is
built (the first time on a machine, or after many new bytes) a search answers with how far it is.

The build runs in a child process (`python -m contextflow.adapters.ui.indexing`): the page's server
keeps its memory and its interpreter for the pages meanwhile, and the index on disk is shared by
every process of the machine anyway. The child prints its progress (bytes and events read, time
left) as JSON lines; it stops when the server goes (its stdin closes). `Indexer.building()` says
whether a build is under way (or starts one when the index is far behind) and how far it is. A
small gap is caught up by the search itself, as every process does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextflow.core import jsonio, progress
from contextflow.core.log import list_segments
from contextflow.search import derived

if TYPE_CHECKING:
    from contextflow.core.store import Store

BACKGROUND_BYTES = 4 * 1024 * 1024  # a search further behind than this waits for a background build
REPORT_S = 0.25  # the child's progress lines, this often


class Indexer:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.child: subprocess.Popen[bytes] | None = None
        self.state: dict[str, Any] = {}
        self.began = 0.0
        self.failed: str | None = None
        self.mutex = threading.Lock()

    def running(self) -> bool:
        with self.mutex:
            return self.child is not None and self.child.poll() is None

    def start(self) -> None:
        """Bring the index up to date in a child process (one at a time)."""
        with self.mutex:
            if self.child is not None and self.child.poll() is None:
                return
            self.failed, self.began, self.state = None, time.monotonic(), {}
            root = self.store.state_dir.parent.parent  # <state root>/stores/<store digest>
            env = {**os.environ, "CONTEXTFLOW_STORE": str(self.store.folder), "CONTEXTFLOW_STATE": str(root)}
            command = [sys.executable, "-m", "contextflow.adapters.ui.indexing", str(self.store.state_dir)]
            self.child = subprocess.Popen(
                command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
            threading.Thread(target=self._follow, args=(self.child,), daemon=True).start()

    def _follow(self, child: subprocess.Popen[bytes]) -> None:
        assert child.stdout is not None and child.stderr is not None
        for line in child.stdout:
            try:
                self.state = jsonio.loads(line)
            except jsonio.DecodeError:
                continue
        error = child.stderr.read().decode(errors="replace").strip()
        if child.wait() != 0:
            self.failed = error.splitlines()[-1] if error else f"the index build stopped (exit {child.returncode})"
        for stream in (child.stdin, child.stdout, child.stderr):
            if stream is not None:
                stream.close()

    def stop(self) -> None:
        """Stop a build under way (it starts over from its last commit next time); when the server stops."""
        with self.mutex:
            child = self.child
        if child is not None and child.poll() is None:
            child.terminate()
            child.wait(30)

    def behind(self) -> int:
        """Bytes of the logs not yet in the index (all of them when there is no index yet)."""
        described = derived.describe(self.store)
        if described["version_matches"]:
            return int(described["log_bytes_behind"] or 0)
        return sum(_size(path) for path in list_segments(self.store.folder, self.store.location.legacy_files))

    def building(self) -> dict[str, Any] | None:
        """How far the build under way is, or None when a search can run now (the index is current
        or nearly). A search far behind starts the build."""
        if not self.running():
            if self.behind() <= BACKGROUND_BYTES:
                return None
            self.start()
        # (until the build's first report: none of the bytes behind read yet)
        state = self.state or {"done_bytes": 0, "total_bytes": self.behind(), "events": 0, "seconds_left": None}
        return {**state, "seconds": round(time.monotonic() - self.began, 1), "failed": self.failed}


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _build(expected_state_dir: str) -> int:
    """The child: bring the index of the store the environment names up to date, reporting progress."""
    from contextflow.core.catchup import behind_the_agents
    from contextflow.core.store import Store

    behind_the_agents()
    store = Store.open(os.environ)
    if os.path.realpath(store.state_dir) != os.path.realpath(expected_state_dir):
        print(f"the index build found another state folder ({store.state_dir}); nothing built", file=sys.stderr)
        return 2
    done = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), os._exit(1)), daemon=True).start()  # the server went

    def report() -> None:
        while not done.wait(REPORT_S):
            state = progress.running()
            if state is not None:
                sys.stdout.write(jsonio.dumps(state).decode() + "\n")
                sys.stdout.flush()

    threading.Thread(target=report, daemon=True).start()
    try:
        derived.search_for(store).index()
    finally:
        done.set()
    return 0


if __name__ == "__main__":
    raise SystemExit(_build(sys.argv[1]))
