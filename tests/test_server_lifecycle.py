"""`contextflow serve` stops promptly on the signals clients send, with nothing but protocol on stdout."""

import json
import os
import signal
import subprocess
import sys

import pytest

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}},
}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_serve_exits_promptly_and_cleanly_on_a_stop_signal(signum):
    process = subprocess.Popen(
        [sys.executable, "-m", "contextflow", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
    )
    try:
        process.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())  # serving, and blocked reading stdin again
        assert answer["id"] == 1 and "result" in answer
        process.send_signal(signum)
        assert process.wait(timeout=10) == 0
        assert process.stdout.read() == b""
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        for stream in (process.stdin, process.stdout, process.stderr):
            stream.close()
