"""A kill storm: hundreds of writer processes SIGKILLed at random points while appending.

A zygote process imports contextflow once and forks each writer (so 200+ writers take
seconds, not minutes). Two writer ids (two "machines", each with its own lock) share the
store folder; on each, several processes contend for the lock. Writers append batches of
random size, some of them large enough that a kill can land inside the write itself, and
record each acknowledged batch (append returned) in their own ack file. One writer in ten
instead dies holding the lock after writing half a line, the worst tear there is. Half the
time after an append a writer also brings the machine's derived tables up to date, a quarter of
the time it adds its newest rows ahead of a build (so kills land inside their transactions too).

Afterwards: every acknowledged event is on disk exactly once, every line decodes or was
moved to quarantine, (writer, seq) pairs are unique, and the next writer on each id appends
normally, and each machine's derived tables (the graph's and the records' state among them) equal a
fresh build from the logs.
"""

from __future__ import annotations

import os
import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson

from contextflow.core.events import decode
from contextflow.core.locate import Location
from contextflow.core.log import read_whole
from contextflow.core.store import Store
from contextflow.core.tables import Tables
from contextflow.features import all_projections

WRITERS = 220
LIVE = 8  # writers alive at once
WRITER_IDS = ("machine-a", "machine-b")
TEAR_EVERY = 10
STORM_TIMEOUT = 120.0

ZYGOTE = r"""
import os, random, signal, sys
from pathlib import Path
from filelock import FileLock
from contextflow.core.locate import Location
from contextflow.core.store import Store
from contextflow.core.tables import Tables
from contextflow.features import all_projections

signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
folder = Path(sys.argv[1])
print("ready", flush=True)

def work(writer, state, ack_path, seed, tear):
    rng = random.Random(seed)
    state_dir = Path(state)
    if tear:  # die holding the lock, half a line written: what a crash mid-write leaves
        with FileLock(state_dir / "writer.lock"):
            line = b'{"v":1,"id":"torn-%d","w":"%s","seq":1,"hlc":1,"kind":"note","data":{"text":"' % (
                seed, writer.encode())
            fd = os.open(folder / f"events.{writer}.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            os.write(fd, line[: rng.randint(1, len(line))])
            os.kill(os.getpid(), signal.SIGKILL)
    store = Store(Location(folder, "test"), writer, state_dir, shares_state=False)
    tables = Tables(store, all_projections())  # on disk, updated (and killed) in between
    acks = os.open(ack_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    n = 0
    nodes = []
    while True:
        size = 200_000 if rng.random() < 0.03 else rng.randint(10, 400)
        batch = [("note", {"text": f"{seed}-{n}-{i} " + "x" * size}) for i in range(rng.randint(1, 4))]
        if rng.random() < 0.5:  # knowledge too: its state on disk is folded (and killed) as well
            batch.append(("graph.node", {"type": "fact", "content": f"{seed}-{n}", "tags": ["tier:working"]}))
            batch.append(("graph.tag", {"node": rng.choice(nodes) if nodes else "none", "tags": ["tier:pinned"]}))
            batch.append(("context.set", {"key": f"fact:k{rng.randrange(20)}", "value": {"n": n}}))
        events = store.append_many(batch)
        nodes += [e.id for e in events if e.kind == "graph.node"]
        os.write(acks, (" ".join(e.id for e in events) + "\n").encode())  # acknowledged
        if rng.random() < 0.5:
            tables.update(5.0)
        elif rng.random() < 0.5:  # as while a build runs elsewhere: this machine's newest rows added ahead
            tables._add_own_newest(5.0)
        n += 1

for command in sys.stdin:
    writer, state, ack_path, seed, tear = command.split()
    pid = os.fork()
    if pid == 0:
        try:
            work(writer, state, ack_path, int(seed), tear == "1")
        finally:
            os._exit(1)
    print(pid, flush=True)
"""


class Zygote:
    def __init__(self, folder: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", ZYGOTE, str(folder)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "CONTEXTFLOW_SECRETS": "off"},
        )
        assert self.readline() == "ready"

    def readline(self) -> str:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 30)
        assert ready, "the zygote did not answer within 30 s"
        return self.proc.stdout.readline().decode().strip()

    def spawn(self, *fields: object) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.write((" ".join(map(str, fields)) + "\n").encode())
        self.proc.stdin.flush()
        return int(self.readline())

    def close(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def kill_and_wait(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists():  # reaped by the zygote's kernel-side SIG_IGN
        assert time.monotonic() < deadline, f"writer {pid} did not die"
        time.sleep(0.001)


def test_a_kill_storm_loses_no_acknowledged_append_and_leaves_every_line_valid(tmp_path: Path) -> None:
    folder, acks = tmp_path / "store", tmp_path / "acks"
    folder.mkdir(mode=0o700)
    acks.mkdir()
    states = {writer: tmp_path / f"state-{writer}" for writer in WRITER_IDS}
    for state in states.values():
        state.mkdir()
    rng = random.Random(7)
    started = time.monotonic()
    zygote = Zygote(folder)
    live: list[int] = []
    tears = 0
    try:
        for number in range(WRITERS):
            assert time.monotonic() - started < STORM_TIMEOUT, "the storm took too long"
            writer = WRITER_IDS[number % len(WRITER_IDS)]
            tear = number % TEAR_EVERY == TEAR_EVERY - 1
            tears += tear
            live.append(zygote.spawn(writer, states[writer], acks / f"{number}.ack", number, int(tear)))
            if len(live) >= LIVE:
                time.sleep(rng.uniform(0, 0.03))
                kill_and_wait(live.pop(rng.randrange(len(live))))
        for pid in live:
            time.sleep(rng.uniform(0, 0.02))
            kill_and_wait(pid)
    finally:
        for pid in live:
            kill_and_wait(pid)
        zygote.close()

    acknowledged = {
        event_id for path in acks.iterdir() for line in path.read_text().splitlines() for event_id in line.split()
    }
    assert len(acknowledged) > WRITERS, "too few appends were acknowledged for the storm to mean anything"

    # the next writer on each id proceeds, repairing a torn tail first
    for writer in WRITER_IDS:
        survivor = Store(Location(folder, "test"), writer, states[writer], shares_state=False)
        survivor.append("note", {"text": f"after the storm on {writer}"})
        assert survivor.health().bad_line_count == 0

    on_disk: dict[str, int] = {}
    notes = graph_nodes = 0
    pairs: set[tuple[str, int]] = set()
    for log in sorted(folder.glob("events.*.jsonl")):
        data = log.read_bytes()
        assert data.endswith(b"\n"), f"{log.name} still ends in a torn line"
        _, lines, rest = read_whole(log)  # (batch markers are the reader's, not events)
        assert not rest, f"{log.name} still ends in a torn line or an unfinished batch"
        for number, line in lines:
            event = decode(line, number)  # raises on any line that is not a whole event
            on_disk[event.id] = on_disk.get(event.id, 0) + 1
            notes += event.kind == "note"
            graph_nodes += event.kind == "graph.node"
            assert (event.writer, event.seq) not in pairs, f"seq {event.seq} of {event.writer} used twice"
            pairs.add((event.writer, event.seq))
    missing = acknowledged - set(on_disk)
    assert not missing, f"{len(missing)} acknowledged events are not on disk, e.g. {sorted(missing)[:5]}"
    assert all(count == 1 for count in on_disk.values())

    for writer in WRITER_IDS:  # whatever the kills interrupted, the tables catch up to a fresh build's rows
        survivor = Store(Location(folder, "test"), writer, states[writer], shares_state=False)
        tables = Tables(survivor, all_projections())
        assert tables.query("SELECT count(*) FROM feed WHERE kind = 'note'")[0][0] == notes, "every note is in the feed"
        assert tables.query("SELECT count(*) FROM graph_nodes")[0][0] == graph_nodes, "every node is in the graph's"
        assert tables.differing() == []  # the graph's state on disk too
        tables.close()

    fragments = list((folder / "quarantine").glob("*.frag"))
    assert len(fragments) >= 1, "the tearing writers' half lines were not quarantined"
    for fragment in fragments:
        try:
            orjson.loads(fragment.read_bytes())
        except orjson.JSONDecodeError:
            continue
        raise AssertionError(f"{fragment.name} holds a whole event: quarantine must only take torn tails")
    print(
        f"\nkill storm: {WRITERS} writers ({tears} died mid-line), {len(acknowledged)} acknowledged events, "
        f"{len(on_disk)} on disk, {len(fragments)} quarantined fragments, {time.monotonic() - started:.1f}s"
    )
