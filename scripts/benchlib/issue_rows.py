"""More rows of the views-on-disk issue for scripts/bench_issue_views.py, each with another process having
appended before it is measured (derived state present):

- N new servers started together, time until the last answered its first `read_shared_context` and
  their summed peak RSS, beside N no-op SDK servers started the same way;
- a new server's first call of each tool (every tool of the operations table, valid arguments), its
  time to the first answer and peak RSS, beside the no-op server's first call;
- a host that listed prompts (so the server keeps `resume_N` current), then a `list_sessions` call after
  another process wrote new bytes: that call's time and the server's peak RSS;
- building all derived state from the logs in a fresh state folder: the tables and the search index
  built at once by two processes, as a fresh machine's background builder and first search do (wall
  time until both are done, CPU seconds, peak RSS of each process and of a search build worker).
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from benchlib.procs import HANDSHAKE_VERSION, ColdStart, ProbeError, cold_start, receive, send, vm_hwm_kb

SERVERS = 4  # started together, as the issue counts them
INDEX = (
    "from contextflow.app import App\nfrom contextflow.search import derived\n"
    "app = App.open()\nderived.search_for(app.store).index()\napp.close()\n"
)

# makes one of each thing a tool names by id (a record, a thread and thought, a conversation, graph nodes)
SETUP = r"""
import sys, orjson
from contextflow.app import App
from contextflow.operations.spec import operations
ops = {op.name: op for op in operations()}
app = App.open()
def run(tool, args):
    reply = ops[tool].run(app, args)
    if getattr(reply, "data", None) is None:
        raise SystemExit(f"{tool} gave no data: {getattr(reply, 'text', reply)}")
    return reply.data
run("context_set", {"key": "fact:bench-tools", "value": {"n": 1}, "agent": "bench"})
thread = run("timeline_create_thread", {"name": "bench tools", "agent": "bench"})
thread_id = thread.get("thread_id") or thread.get("id") or thread["thread"]["id"]
thought = run("timeline_add_thought", {"thread_id": thread_id, "content": "a thought", "agent": "bench"})
tangent = run("timeline_go_tangent", {"thread_id": thread_id, "name": "bench tangent", "agent": "bench"})
conversation = run("save_conversation", {"topic": "bench tools", "project": "shared", "summary": "s"})
one = run("graph_remember", {"content": "bench node one", "agent": "bench"})
two = run("graph_remember", {"content": "bench node two", "agent": "bench"})
app.close()
made = {"thread": thread, "tangent": tangent, "thought": thought, "conversation": conversation, "one": one, "two": two}
print(orjson.dumps(made).decode())
"""


BUILD = r"""
import json, resource, sys, time
from contextflow.app import App
began = time.perf_counter()
app = App.open()
if sys.argv[1] == "tables":
    from contextflow.core.tables import BUILD_WAIT_S
    events = app.tables().update(BUILD_WAIT_S, foreground=True)
else:
    from contextflow.search import derived
    events = derived.search_for(app.store).update(rebuild=True)
app.close()
own, workers = (resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
status = open("/proc/self/status").read()  # VmHWM: this image's peak (ru_maxrss keeps the forking parent's)
peak = int(status.split("VmHWM:")[1].split()[0]) / 1024
print(json.dumps({"events": events, "seconds": time.perf_counter() - began, "peak_mb": peak,
    "worker_mb": workers.ru_maxrss / 1024, "cpu": own.ru_utime + own.ru_stime + workers.ru_utime + workers.ru_stime}))
"""


def build_all(python: str, env: Mapping[str, str]) -> dict[str, dict[str, float]]:
    """The tables and the search index built at once from the logs (env's state folder should be empty):
    per builder its events, seconds (until its process ended: merges included), peak MB, a worker's peak
    MB and CPU seconds; and "both": the wall time until both were done."""
    began = time.perf_counter()
    running = {
        what: subprocess.Popen(
            [python, "-c", BUILD, what], env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for what in ("tables", "search")
    }
    found: dict[str, dict[str, float]] = {}
    for what, process in running.items():
        out, err = process.communicate(timeout=3600)
        if process.returncode:
            raise SystemExit(f"building the {what} failed: {err.decode()[-2000:]}")
        found[what] = orjson.loads(out.strip().splitlines()[-1])
    found["both"] = {"seconds": time.perf_counter() - began}
    return found


def _id(found: dict[str, Any], *names: str) -> str:
    for name in names:
        if isinstance(found.get(name), str):
            return str(found[name])
    for value in found.values():  # nested: {"node": {"id": ...}}
        if isinstance(value, dict):
            try:
                return _id(value, *names)
            except KeyError:
                continue
    raise KeyError(f"none of {names} in {found}")


def tool_arguments(made: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Valid arguments for every tool (reads and writes), naming what SETUP made."""
    thread, thought = _id(made["thread"], "thread_id", "id"), _id(made["thought"], "thought_id", "id")
    conversation = _id(made["conversation"], "conversation_id", "id")
    tangent = _id(made["tangent"], "thread_id", "id")
    one, two = _id(made["one"], "id", "node_id"), _id(made["two"], "id", "node_id")
    return {
        "read_shared_context": {"limit": 20},
        "append_shared_note": {"agent": "bench", "text": "first call", "project": "shared"},
        "write_shared_handoff": {"agent": "bench", "summary": "first call", "project": "shared", "session_id": "bt"},
        "get_latest_handoff": {"project": "shared"},
        "list_sessions": {"project": "shared"},
        "choose_session": {"project": "shared", "session_id": "bt"},
        "resume_session": {"project": "shared", "session_id": "bt"},
        "context_set": {"key": "fact:bench-first", "value": {"n": 2}, "agent": "bench"},
        "context_get": {"key": "fact:bench-tools"},
        "context_list": {},
        "context_delete": {"key": "fact:bench-first", "agent": "bench"},
        "timeline_create_thread": {"name": "first call", "agent": "bench"},
        "timeline_list_threads": {},
        "timeline_get_thread": {"thread_id": thread},
        "timeline_add_thought": {"thread_id": thread, "content": "first call", "agent": "bench"},
        "timeline_update_thought": {"thought_id": thought, "content": "updated", "agent": "bench"},
        "timeline_update_thread": {"thread_id": thread, "description": "updated", "agent": "bench"},
        "timeline_where_am_i": {},
        "timeline_go_tangent": {"thread_id": thread, "name": "tangent", "agent": "bench"},
        "timeline_return": {"thread_id": tangent, "agent": "bench"},
        "get_context": {"query": "token refresh websocket", "project": "shared"},
        "generate_conversation_id": {},
        "save_conversation": {"topic": "first call", "project": "shared", "summary": "s"},
        "get_conversation": {"conversation_id": conversation},
        "graph_remember": {"content": "first call node", "agent": "bench"},
        "graph_recall": {"query": "bench node"},
        "graph_link": {"from": one, "to": two},
        "graph_update": {"id": one, "summary": "updated"},
        "graph_summarize": {"ids": [one, two], "content": "both", "agent": "bench"},
        "graph_compose": {"query": "bench"},
        "graph_status": {},
    }


def make_things(command: Sequence[str], env: Mapping[str, str]) -> dict[str, Any]:
    done = subprocess.run([*command, "-c", SETUP], env=dict(env), capture_output=True, timeout=900, check=False)
    if done.returncode:
        raise SystemExit(f"making the tools' ids failed: {done.stderr.decode()[-2000:]}")
    found: dict[str, Any] = orjson.loads(done.stdout.strip().splitlines()[-1])
    return found


def together(
    command: Sequence[str], env: Mapping[str, str], tool: str, args: dict[str, Any], log: Path, n: int
) -> tuple[float, float]:
    """N servers started at once: seconds until the last answered its first call, summed peak RSS (MB)."""
    with ThreadPoolExecutor(n) as pool:
        runs = list(pool.map(lambda _: cold_start(command, env, tool, args, log), range(n)))
    return max(run.to_first_call for run in runs), sum(run.peak_rss_kb for run in runs) / 1024


def first_calls(
    command: Sequence[str],
    floor: Sequence[str],
    env: Mapping[str, str],
    floor_env: Mapping[str, str],
    arguments: dict[str, dict[str, Any]],
    appended: Callable[[], None],
    log: Path,
) -> dict[str, tuple[ColdStart, ColdStart]]:
    """Each tool's first call in a new server, another process having appended just before, each beside
    a no-op server's first call started right after it (so a burst of load lands on both)."""
    found = {}
    for tool, args in arguments.items():
        appended()
        try:
            found[tool] = (cold_start(command, env, tool, args, log), cold_start(floor, floor_env, "noop", {}, log))
        except ProbeError as exc:
            raise SystemExit(f"{tool}: {exc}; the servers' stderr ends:\n{log.read_text()[-3000:]}") from None
    return found


def after_prompts(
    command: Sequence[str], env: Mapping[str, str], appended: Callable[[], None], reps: int, log: Path
) -> tuple[list[float], float]:
    """A host that listed prompts; then, `reps` times, another process appends and the host calls
    list_sessions: each call's seconds, and the server's peak RSS (MB)."""
    with open(log, "ab") as stderr:
        process = subprocess.Popen(
            list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=dict(env), bufsize=0
        )
    deadline = time.monotonic() + 1800
    try:
        client = {"name": "bench", "version": "1"}
        hello = {"protocolVersion": HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": client}
        send(process, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
        receive(process, 1, deadline)
        send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(process, {"jsonrpc": "2.0", "id": 2, "method": "prompts/list"})
        receive(process, 2, deadline)
        times = []
        for n in range(reps):
            appended()
            began = time.perf_counter()
            ask = {"name": "list_sessions", "arguments": {"project": "shared"}}
            send(process, {"jsonrpc": "2.0", "id": 10 + n, "method": "tools/call", "params": ask})
            receive(process, 10 + n, deadline)
            times.append(time.perf_counter() - began)
        return times, vm_hwm_kb(process.pid) / 1024
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def more_rows(trees: Sequence[Any], env: dict[str, str], floor: list[str], log: Path, noop_mb: float) -> None:
    """The rows above for `trees` (bench_issue_views.Tree: name, env, work, cli, append_elsewhere), their
    derived tables current; `floor` and `env`: the no-op server and its environment."""
    n = SERVERS
    floor_wall, floor_mb = together(floor, env, "noop", {}, log, n)
    print(f"{n} no-op SDK servers, first calls: {floor_wall * 1000:.0f} ms, {floor_mb:.0f} MB summed")
    for tree in trees:
        tree.append_elsewhere()
        wall, mb = together(tree.cli("serve"), tree.env, "read_shared_context", {"limit": 20}, log, n)
        print(
            f"{tree.name} {n} new servers, first read_shared_context: {wall * 1000:.0f} ms "
            f"({wall / floor_wall:.1f}x), {mb:.0f} MB summed ({mb / floor_mb:.1f}x)"
        )
    for tree in trees:
        subprocess.run([sys.executable, "-c", INDEX], env=tree.env, check=True, timeout=3600)  # the index present
        made = make_things([sys.executable], tree.env)
        every = {**tree.env, "CONTEXTFLOW_TOOLS": "all"}  # every tool group offered
        arguments = tool_arguments(made)
        found = first_calls(tree.cli("serve"), floor, every, env, arguments, tree.append_elsewhere, log)
        ratios = {tool: run.to_first_call / noop_run.to_first_call for tool, (run, noop_run) in found.items()}
        slow = max(ratios, key=lambda tool: ratios[tool])
        big = max(found, key=lambda tool: found[tool][0].peak_rss_kb)
        print(
            f"{tree.name} new server, first call of each of {len(found)} tools (each beside a no-op server's): "
            f"median {statistics.median(ratios.values()):.1f}x, slowest {slow} {ratios[slow]:.1f}x "
            f"({found[slow][0].to_first_call * 1000:.0f} ms), largest {big} peak "
            f"{found[big][0].peak_rss_kb / 1024:.0f} MB (no-op {noop_mb:.0f} MB)"
        )
        print(
            "  "
            + ", ".join(
                f"{tool} {ratios[tool]:.1f}x {run.peak_rss_kb / 1024:.0f} MB" for tool, (run, _) in found.items()
            )
        )
    for tree in trees:
        fresh = {**tree.env, "CONTEXTFLOW_STATE": str(tree.work / "build-state")}
        built = build_all(sys.executable, fresh)
        tables, search = built["tables"], built["search"]
        summed = tables["peak_mb"] + search["peak_mb"] + 2 * search["worker_mb"]
        print(
            f"{tree.name} building all derived state (tables and search index at once): "
            f"{built['both']['seconds']:.1f} s, {tables['cpu'] + search['cpu']:.0f} CPU s; "
            f"tables {tables['seconds']:.1f} s, {tables['peak_mb']:.0f} MB; search index {search['seconds']:.1f} s, "
            f"{search['peak_mb']:.0f} MB + {search['worker_mb']:.0f} MB a worker; {summed:.0f} MB summed"
        )
        shutil.rmtree(tree.work / "build-state", ignore_errors=True)
    for tree in trees:
        times, mb = after_prompts(tree.cli("serve"), tree.env, tree.append_elsewhere, 5, log)
        print(
            f"{tree.name} host that listed prompts, list_sessions after another process appended: "
            f"p50 {statistics.median(times) * 1000:.0f} ms (max {max(times) * 1000:.0f}), server peak {mb:.0f} MB"
        )
