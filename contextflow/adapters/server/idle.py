"""Work a server does once its client has gone quiet: a write's commit to the search index runs after no call
has come for a moment, while the client reads the reply, so calls in a row never wait for one between them.

One thread waits for the quiet and does the work; it stays for calls in a row and ends once none has come
for `LINGER_S`. A call never starts a thread per write: starting one costs the call that starts it a wait for
the scheduler, which on a loaded machine is longer than the call.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger("contextflow.adapters.server")
LINGER_S = 5.0  # how long the thread waits for more work before it ends


class WhenIdle:
    """`work()` run on its own thread once `quiet()` seconds pass with no call after `soon`."""

    def __init__(self, work: Callable[[], None], quiet: Callable[[], float], name: str) -> None:
        self._work, self._quiet, self._name = work, quiet, name
        self._changed = threading.Condition()
        self._due: float | None = None  # when the work runs (monotonic), unless a call puts it off
        self._running = False
        self._touched = time.monotonic()  # the last `soon` or `put_off`
        self.thread: threading.Thread | None = None  # the one that waits for quiet, while there is one

    def soon(self) -> None:
        """Run the work once no call has come for the quiet time (from now)."""
        with self._changed:
            self._touched = time.monotonic()
            self._due = self._touched + self._quiet()
            if self.thread is None:
                self.thread = threading.Thread(target=self._wait_and_work, name=self._name, daemon=True)
                self.thread.start()
            self._changed.notify_all()

    def put_off(self) -> bool:
        """A call came: work waiting for quiet waits until the call is done (then `soon` again). Whether any
        was waiting (work already running goes on)."""
        with self._changed:
            waiting, self._due, self._touched = self._due is not None, None, time.monotonic()
            return waiting

    def waiting(self) -> bool:
        """Whether work waits for quiet."""
        with self._changed:
            return self._due is not None

    def settle(self, timeout: float) -> bool:
        """Wait until no work waits or runs; whether that came within `timeout` seconds."""
        with self._changed:
            return self._changed.wait_for(lambda: self._due is None and not self._running, timeout)

    def _wait_and_work(self) -> None:
        while True:
            with self._changed:
                while (self._due is None or self._due > time.monotonic()) and self.thread is not None:
                    if self._due is None and time.monotonic() >= self._touched + LINGER_S:
                        self.thread = None  # nothing more came: it ends (the next `soon` starts one)
                    else:
                        until = self._due if self._due is not None else self._touched + LINGER_S
                        self._changed.wait(until - time.monotonic())
                if self.thread is None:
                    return
                self._due, self._running = None, True
            try:
                self._work()
            except Exception:  # (the thread goes on: it is the only one that does the work)
                log.warning("%s failed", self._name, exc_info=True)
            finally:
                with self._changed:
                    self._running = False
                    self._changed.notify_all()
