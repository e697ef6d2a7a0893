"""Server processes seen from outside: a raw stdio JSON-RPC client for cold starts, and RSS.

The cold-start probe speaks the handshake by hand (initialize, initialized, one tools/call)
so the clock runs from the spawn itself to the first answered call, with nothing of the
benchmark's own client in between.
"""

from __future__ import annotations

import os
import resource
import select
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

HANDSHAKE_VERSION = "2025-11-25"


class ProbeError(RuntimeError):
    """The server did not answer as expected."""


@dataclass(frozen=True)
class ColdStart:
    to_initialized: float  # spawn -> initialize result
    to_first_call: float  # spawn -> first tools/call result
    peak_rss_kb: int
    exit_seconds: float  # stdin closed -> process gone
    cpu_initialized: float = 0.0  # the server's own CPU seconds (user + system, all threads) to its initialize result
    cpu_first_call: float = 0.0  # ... to its first tools/call result


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a live process has used so far, all its threads (/proc/<pid>/stat), 0 if unknown."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    except (OSError, ValueError, IndexError):
        return 0.0


def vm_hwm_kb(pid: int) -> int:
    """Peak resident set size of a live process in KiB (/proc/<pid>/status VmHWM), 0 if unknown."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def child_pids(fragment: str) -> list[int]:
    """Pids of this process's children whose command line contains `fragment`."""
    found: list[int] = []
    for task in Path("/proc/self/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for pid in map(int, children):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if fragment in cmdline:
                found.append(pid)
    return found


def send(process: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert process.stdin is not None
    process.stdin.write(orjson.dumps(message) + b"\n")
    process.stdin.flush()


def receive(process: subprocess.Popen[bytes], want_id: int, deadline: float) -> dict[str, Any]:
    assert process.stdout is not None
    fd = process.stdout.fileno()
    buffer = b""
    while True:
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            message = orjson.loads(line)
            if message.get("id") == want_id:
                if "error" in message:
                    raise ProbeError(f"request {want_id} failed: {message['error']}")
                result: dict[str, Any] = message["result"]
                return result
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ProbeError(f"no answer to request {want_id} within the time limit")
        ready, _, _ = select.select([fd], [], [], remaining)
        if ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise ProbeError(f"the server exited before answering request {want_id}")
            buffer += chunk


def cold_start(
    command: Sequence[str],
    env: Mapping[str, str],
    tool: str,
    arguments: dict[str, Any],
    errlog: Path,
    timeout: float = 600.0,
) -> ColdStart:
    """Spawn a stdio server (stderr to `errlog`), time the handshake and one tools/call, then close it."""
    with open(errlog, "ab") as stderr:
        began = time.perf_counter()
        process = subprocess.Popen(
            list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=dict(env), bufsize=0
        )
    return _probe(process, began, tool, arguments, timeout)


def _probe(
    process: subprocess.Popen[bytes], began: float, tool: str, arguments: dict[str, Any], timeout: float
) -> ColdStart:
    deadline = time.monotonic() + timeout
    try:
        send(
            process,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": HANDSHAKE_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "1"},
                },
            },
        )
        receive(process, 1, deadline)
        initialized = time.perf_counter() - began
        cpu_initialized = cpu_seconds(process.pid)  # it answered, so it now waits on stdin
        send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        params = {"name": tool, "arguments": arguments}
        send(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params})
        result = receive(process, 2, deadline)
        first_call = time.perf_counter() - began
        cpu_first_call = cpu_seconds(process.pid)
        if result.get("isError"):
            raise ProbeError(f"{tool} returned an error: {result.get('content')}")
        peak = vm_hwm_kb(process.pid)
        closing = time.perf_counter()
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=timeout)
        exit_seconds = time.perf_counter() - closing
        return ColdStart(initialized, first_call, peak, exit_seconds, cpu_initialized, cpu_first_call)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def timed(
    command: list[str], env: dict[str, str], stdin: bytes, cwd: Path, expect: bytes | None = None
) -> tuple[float, float, float]:
    """(CPU seconds, wall seconds, peak RSS MB) of one child process under /usr/bin/time, run in `cwd` (not in
    a checkout, whose package `python -m` would import ahead of PYTHONPATH's); `expect` must be in its output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%M", *command], input=stdin, env=env, capture_output=True, timeout=900, cwd=cwd
    )
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"{command} failed: {done.stderr.decode()[-2000:]}")
    if expect is not None and expect not in done.stdout:
        raise SystemExit(f"{command} did not print {expect!r}: {done.stdout[:400]!r}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, int(done.stderr.decode().strip().splitlines()[-1]) / 1024
