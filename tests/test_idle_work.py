"""The server's work once its client is quiet (a write's commit to the search index): one thread for calls in
a row, the work done once after them, a thread that ends when nothing more comes, and work that fails never
stopping the next."""

from __future__ import annotations

import threading

from contextflow.adapters.server import idle
from contextflow.adapters.server.idle import WhenIdle


def test_calls_in_a_row_share_one_thread_and_the_work_runs_once_after_them():
    done: list[int] = []
    quiet = [60.0]
    work = WhenIdle(lambda: done.append(1), lambda: quiet[0], "test-idle")
    work.soon()
    thread = work.thread
    for _ in range(50):  # each call puts the work off, then asks for it again
        assert work.put_off()
        work.soon()
        assert work.thread is thread and thread.is_alive()
    assert done == []
    quiet[0] = 0.0
    assert work.put_off()
    work.soon()
    assert work.settle(timeout=60)
    assert done == [1]
    assert not work.put_off()  # (nothing waits now)


def test_the_thread_ends_when_nothing_more_comes_and_the_next_write_starts_one(monkeypatch):
    monkeypatch.setattr(idle, "LINGER_S", 0.0)
    done = threading.Semaphore(0)
    work = WhenIdle(done.release, lambda: 0.0, "test-idle")
    work.soon()
    first = work.thread
    assert first is not None and done.acquire(timeout=60)
    first.join(timeout=60)
    assert not first.is_alive() and work.thread is None
    work.soon()
    assert done.acquire(timeout=60)


def test_work_that_fails_does_not_stop_the_next():
    calls: list[int] = []

    def flaky() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise OSError("disk full")

    work = WhenIdle(flaky, lambda: 0.0, "test-idle")
    work.soon()
    assert work.settle(timeout=60)
    work.soon()
    assert work.settle(timeout=60)
    assert calls == [1, 1]
