"""One import from start to end: detect the format, read every file, plan, store in one write.

A file that cannot be read or has a bad item is reported and left out whole; the other files of
a folder are planned together (a link may cross files) and stored as one batch, so an import lands
entirely or not at all. Graph formats stream: each file is read an item at a time into a stage on disk
(`stage.py`), planned from it an event at a time into a staged batch (`core/staged.py`), and that is
written as one framed batch, so memory stays bounded whatever the size of the input. A dry run plans
the same events and stores none.
"""

from __future__ import annotations

import contextlib
import gc
import io
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any, BinaryIO

from contextflow.app import App
from contextflow.capture.stored import known_turns
from contextflow.core import jsonio
from contextflow.core.errors import InputError, NotFoundError
from contextflow.core.staged import StagedBatch
from contextflow.graph import transfer
from contextflow.imports import basicmemory, beads, claudemem, files, servermemory, transcripts
from contextflow.imports.detect import EXPECTED, FORMATS, detect_bytes, detect_file, detect_folder, first_line_format
from contextflow.imports.graphplan import Planner
from contextflow.imports.model import MAX_SOURCE_LINE, Item, Planned, Report, SourceError
from contextflow.imports.progress import Progress
from contextflow.imports.stage import Stage

Reader = Callable[[str, BinaryIO], Iterator[Item]]
FILE_READERS: dict[str, Reader] = {
    "server-memory": servermemory.items,
    "beads": beads.items,
    "claude-mem": claudemem.items,
}
Source = tuple[str, Callable[[], Iterable[Item]]]  # a file's label, and its items (read again when planned again)
COUNTED = 1_000  # items read between two redraws of the reading count
CHUNK = 2000
YOUNG_COLLECTED = 10_000  # new containers between two passes of the collector over the youngest, during an import
SETTLED = 20_000  # items an import brings the derived tables up to date with itself; the background builder more


def settle(app: App, report: Report) -> None:
    """After an import a reader can fold itself: this machine's derived tables brought up to date now,
    so the calls after it read them (after a larger one, the first call has the background builder do
    it: an import does not leave a process behind it)."""
    from contextflow.sessions.stored import disk

    if not report.dry_run and 0 < sum(report.stored.values()) <= SETTLED and disk(app):
        app.tables().update()


def _read_bytes(path: Path) -> bytes:
    try:
        return files.read(path)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}; pass {EXPECTED}") from None


def _file_items(fmt: str, path: Path) -> Iterator[Item]:
    with files.opened(path) as handle:
        yield from FILE_READERS[fmt](str(path), handle)


def run_import(
    app: App,
    path: str,
    *,
    fmt: str | None = None,
    dry_run: bool = False,
    merge: bool = False,
    progress: Progress | None = None,
) -> Report:
    if fmt is not None and fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r} after --from; use one of {', '.join(FORMATS)}")
    progress = progress or Progress()
    jsonio.fast()  # an import parses in bulk
    with _fewer_collections():
        return _run(app, path, fmt, dry_run, merge, progress)


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """The cyclic collector's youngest generation collected every `YOUNG_COLLECTED` new containers instead of
    700 while an import runs (restored after): an import makes a few short-lived dicts, lists and tuples per
    item and holds a chunk of them, and those passes were 8% of a 1M-line import. What a pass would free is
    still bounded (that many containers' worth); import is a command of its own process (`cli_only`)."""
    young, *older = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG_COLLECTED), *older)
    try:
        yield
    finally:
        gc.set_threshold(young, *older)


def _run(app: App, path: str, fmt: str | None, dry_run: bool, merge: bool, progress: Progress) -> Report:
    try:
        if path == "-":
            return _import_stdin(app, fmt, dry_run, merge, progress)
        where = Path(path).expanduser()
        if not where.exists():
            raise NotFoundError(f"cannot read {path}: no such file or folder; pass {EXPECTED}")
        files.check_given(where)  # a FIFO or a device is refused before anything opens it
        if where.is_dir():
            fmt = fmt or detect_folder(where)
            if fmt in transcripts.FORMATS:
                return _import_sessions(app, fmt, where, dry_run, progress)
            if fmt == "beads":
                issues = beads.issues_file(where)
                if issues != where and (why := files.refusal(issues, where)):
                    raise InputError(f"{issues}: {why}; nothing was stored")
                return _graph_file(app, fmt, issues, dry_run, progress)
            if fmt != "basic-memory":
                raise InputError(f"{fmt} imports a file, and {path} is a folder; pass the file")
            return _import_notes(app, where, dry_run, progress)
        if (fmt or transcripts.first_line_format(where)) in transcripts.FORMATS:  # streamed, never read whole
            return _import_sessions(app, fmt or str(transcripts.first_line_format(where)), where, dry_run, progress)
        fmt = fmt or detect_file(where)
        if fmt in transcripts.FORMATS:
            return _import_sessions(app, fmt, where, dry_run, progress)
        if fmt == "basic-memory":
            return _import_notes(app, where, dry_run, progress)
        if fmt in FILE_READERS:  # streamed: an item at a time
            return _graph_file(app, fmt, where, dry_run, progress)
        return _import_file(app, str(where), _read_bytes(where), fmt, dry_run, merge, progress)
    finally:
        progress.close()


def _import_stdin(app: App, fmt: str | None, dry_run: bool, merge: bool, progress: Progress) -> Report:
    """Standard input: JSON Lines (told by its first line) streamed a line at a time, a document read whole."""
    stream = sys.stdin.buffer
    head = stream.readline(MAX_SOURCE_LINE)
    lines = fmt or first_line_format("stdin", head)
    if lines in ("server-memory", "beads"):
        reader = FILE_READERS[lines]
        chained = io.BufferedReader(_Chained(head, stream))
        return _import_graph(app, lines, "stdin", [("stdin", lambda: reader("stdin", chained))], [], dry_run, progress)
    raw = head + stream.read()
    fmt = fmt or detect_bytes("stdin", raw)
    if fmt == "basic-memory" or fmt in transcripts.FORMATS:
        raise InputError(f"{fmt} is read from its files: pass the file or folder instead of standard input")
    if fmt in FILE_READERS:
        reader = FILE_READERS[fmt]
        return _import_graph(
            app, fmt, "stdin", [("stdin", lambda: reader("stdin", io.BytesIO(raw)))], [], dry_run, progress
        )
    return _import_file(app, "stdin", raw, fmt, dry_run, merge, progress)


class _Chained(io.RawIOBase):
    """The first line already read, then the rest of the stream."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self.head, self.rest = head, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.head:
            size = min(len(buffer), len(self.head))
            buffer[:size], self.head = self.head[:size], self.head[size:]
            return size
        data = self.rest.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _import_file(app: App, label: str, raw: bytes, fmt: str, dry_run: bool, merge: bool, progress: Progress) -> Report:
    if fmt == "contextflow":
        return _import_own(app, label, raw, dry_run, merge)
    raise InputError(f"{fmt} imports a folder of notes; pass the folder, not {label}")


def _import_own(app: App, label: str, raw: bytes, dry_run: bool, merge: bool) -> Report:
    try:
        doc = jsonio.loads(raw)
    except jsonio.DecodeError as exc:
        raise SourceError(label, f"not valid JSON ({exc.msg})", exc.lineno) from None
    result, planned = transfer.plan_import(app, doc, merge=merge)
    report = Report("contextflow", label, dry_run, files=1)
    report.stored.update({"node": result.nodes_added, "edge": result.edges_added, "view": result.views_added})
    report.present.update({"node": result.nodes_present, "edge": result.edges_present, "view": result.views_present})
    report.skipped["node differing here, kept (--merge)"] = result.nodes_differing
    report.stored, report.present, report.skipped = +report.stored, +report.present, +report.skipped
    what = {"graph.node": "node", "graph.edge": "edge", "graph.view": "view"}
    report.planned = [Planned(i, kind, data, what.get(kind, kind), "") for i, kind, data in planned]
    if planned and not dry_run:
        app.store.append_many([(kind, data) for _, kind, data in planned], ids=[i for i, _, _ in planned], fold=False)
    return report


def _graph_file(app: App, fmt: str, path: Path, dry_run: bool, progress: Progress) -> Report:
    return _import_graph(app, fmt, str(path), [(str(path), lambda: _file_items(fmt, path))], [], dry_run, progress)


def _import_notes(app: App, where: Path, dry_run: bool, progress: Progress) -> Report:
    sources: list[Source] = []
    errors: list[str] = []
    for file, result in basicmemory.read_folder(where):
        if isinstance(result, SourceError):
            errors.append(str(result))
        else:
            sources.append((file, result.items))
    return _import_graph(app, "basic-memory", str(where), sources, errors, dry_run, progress)


def _import_graph(
    app: App, fmt: str, label: str, sources: list[Source], errors: list[str], dry_run: bool, progress: Progress
) -> Report:
    """Stage every item of `sources`, plan, and store the events as one batch. A file whose item the store
    refuses is left out, and the rest is staged and planned again; a bad line stops the whole import."""
    report = Report(fmt, label, dry_run, files=len(sources) + len(errors))
    report.errors += errors
    while sources:
        with Stage(app.store.state_dir, fmt) as stage:
            name = Path(label).name
            progress.start(len(sources), f"reading {name}")
            count = 0
            for file, read in sources:  # a bad line stops here: nothing of the file is stored
                index = stage.file(file)
                for item in read():
                    stage.add(index, item)
                    count += 1
                    if not count % COUNTED:  # one large file is one step of the bar: its items are counted
                        progress.advance(0, f"reading {name}: {count:,} items")
                progress.advance(1)
            progress.say(f"indexing {count:,} staged items")
            stage.finish()
            planner = Planner(app, fmt, labels=dry_run)
            planning = f"planning {stage.items:,} items"
            progress.start(stage.items, f"{planning}: reading the store's graph first")

            def tick(done: int, planning: str = planning) -> None:
                progress.advance(done, planning)

            try:
                if dry_run:
                    report.planned = list(planner.plan(stage, tick))
                else:
                    _store(app, planner.plan(stage, tick), progress)
            except SourceError as exc:
                if exc.file not in {file for file, _ in sources}:
                    raise
                report.errors.append(str(exc))
                sources = [source for source in sources if source[0] != exc.file]
                continue
        report.present.update(planner.present)
        report.skipped.update(planner.skipped)
        report.stored.update(planner.planned)
        break
    progress.advance(progress.total)
    if report.errors and report.files == 1:
        raise InputError(report.errors[0])
    return report


def _store(app: App, planned: Iterator[Planned], progress: Progress) -> None:
    """The planned events staged, then written as one batch. Only edges carrying the source's relation names
    are redacted here: node data was redacted as it was staged, and the other events hold ids and types."""
    from contextflow.core.secrets import scrub_items

    with StagedBatch(app.store.state_dir, app.store.writer) as staged:
        while chunk := list(islice(planned, CHUNK)):
            edges = [n for n, event in enumerate(chunk) if event.what == "edge" and "metadata" in event.data]
            items = [(event.id, event.kind, app.store.admit(event.kind, event.data)) for event in chunk]
            for n, (kind, data) in zip(edges, scrub_items([items[n][1:] for n in edges]), strict=True):
                items[n] = (items[n][0], kind, data)
            # a node's data as staged, when admitted as it is: its JSON is stored without encoding it again
            bodies = [event.body if item[2] is event.data else None for event, item in zip(chunk, items, strict=True)]
            staged.add_many(items, scrubbed=True, encoded=bodies)
        progress.advance(0, f"storing {len(staged)} event(s)")
        app.store.append_staged(staged)


def _import_sessions(app: App, fmt: str, where: Path, dry_run: bool, progress: Progress) -> Report:
    """Each transcript file a session: all of them planned, then stored in one write (dated when they happened)."""
    paths, refused = transcripts.files(where, fmt)
    report = Report(fmt, str(where), dry_run, files=len(paths))
    report.errors += [str(error) for error in refused]
    known = known_turns(app)  # turns captured live or imported before
    planned: list[Planned] = []
    stamps: list[int] = []
    progress.start(len(paths) + 1, f"reading {len(paths)} session(s)")
    for path in paths:
        try:
            plan = transcripts.plan_file(app, fmt, path, known)  # streamed: a line at a time
        except SourceError as exc:
            report.errors.append(str(exc))
            progress.advance(1)
            continue
        planned += plan.events
        stamps += plan.stamps
        report.present["turn"] += plan.present
        report.skipped.update(plan.skipped)
        progress.advance(1)
    report.present = +report.present
    report.stored.update(Counter(event.what for event in planned))
    if dry_run:
        report.planned = planned
    elif planned:
        progress.advance(0, f"storing {len(planned)} event(s)")
        app.store.append_many(
            [(p.kind, p.data) for p in planned], ids=[p.id for p in planned], stamps=stamps, fold=False
        )
    progress.advance(1)
    if report.errors and len(paths) == 1:
        raise InputError(report.errors[0])
    return report
