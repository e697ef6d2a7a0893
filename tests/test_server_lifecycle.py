"""`contextflow serve` stops promptly on the signals clients send, with nothing on stdout."""

import os
import signal
import subprocess
import sys
import time

import pytest


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_serve_exits_promptly_and_cleanly_on_a_stop_signal(signum):
    process = subprocess.Popen(
        [sys.executable, "-m", "contextflow", "serve"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ),
    )
    try:
        time.sleep(1.0)  # let it start and block reading stdin
        assert process.poll() is None
        process.send_signal(signum)
        assert process.wait(timeout=10) == 0
        assert process.stdout.read() == b""
    finally:
        if process.poll() is None:
            process.kill()
        for stream in (process.stdin, process.stdout, process.stderr):
            stream.close()
