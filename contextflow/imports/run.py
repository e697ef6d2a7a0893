"""One import from start to end: detect the format, read every file, plan, store in one write.

A file that cannot be read or has a bad item is reported and left out whole; the other files of
a folder are planned together (a link may cross files) and stored with one `append_many`, so an
import lands entirely or not at all. A dry run plans the same events and stores none.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import orjson

from contextflow.app import App
from contextflow.capture.view import ActivityView
from contextflow.core.errors import InputError, NotFoundError
from contextflow.graph import transfer
from contextflow.imports import basicmemory, beads, claudemem, files, servermemory, transcripts
from contextflow.imports.detect import EXPECTED, FORMATS, detect_bytes, detect_folder
from contextflow.imports.graphplan import Planner
from contextflow.imports.model import Planned, Records, Report, SourceError
from contextflow.imports.progress import Progress

Reader = Callable[[str, bytes], Records]
FILE_READERS: dict[str, Reader] = {
    "server-memory": servermemory.read,
    "beads": beads.read,
    "claude-mem": claudemem.read,
}


def _read_bytes(path: Path) -> bytes:
    try:
        return files.read(path)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}; pass {EXPECTED}") from None


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
    try:
        if path == "-":
            raw = sys.stdin.buffer.read()
            fmt = fmt or detect_bytes("stdin", raw)
            if fmt == "basic-memory" or fmt in transcripts.FORMATS:
                raise InputError(f"{fmt} is read from its files: pass the file or folder instead of standard input")
            return _import_file(app, "stdin", raw, fmt, dry_run, merge, progress)
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
                return _import_file(app, str(issues), _read_bytes(issues), fmt, dry_run, merge, progress)
            if fmt != "basic-memory":
                raise InputError(f"{fmt} imports a file, and {path} is a folder; pass the file")
            return _import_records(app, fmt, str(where), basicmemory.read_folder(where), dry_run, progress)
        if (fmt or transcripts.first_line_format(where)) in transcripts.FORMATS:  # streamed, never read whole
            return _import_sessions(app, fmt or str(transcripts.first_line_format(where)), where, dry_run, progress)
        raw = _read_bytes(where)
        fmt = fmt or detect_bytes(str(where), raw)
        if fmt in transcripts.FORMATS:
            return _import_sessions(app, fmt, where, dry_run, progress)
        if fmt == "basic-memory":
            return _import_records(app, fmt, str(where), basicmemory.read_folder(where), dry_run, progress)
        return _import_file(app, str(where), raw, fmt, dry_run, merge, progress)
    finally:
        progress.close()


def _import_file(app: App, label: str, raw: bytes, fmt: str, dry_run: bool, merge: bool, progress: Progress) -> Report:
    if fmt == "contextflow":
        return _import_own(app, label, raw, dry_run, merge)
    if fmt not in FILE_READERS:
        raise InputError(f"{fmt} imports a folder of notes; pass the folder, not {label}")
    progress.start(1, f"reading {Path(label).name}")
    records = FILE_READERS[fmt](label, raw)  # a bad line stops here: nothing of the file is stored
    progress.advance(1)
    return _import_records(app, fmt, label, [(label, records)], dry_run, progress)


def _import_own(app: App, label: str, raw: bytes, dry_run: bool, merge: bool) -> Report:
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
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


def _import_records(
    app: App,
    fmt: str,
    label: str,
    units: list[tuple[str, Records | SourceError]],
    dry_run: bool,
    progress: Progress,
) -> Report:
    report = Report(fmt, label, dry_run, files=len(units))
    good: dict[str, Records] = {}
    for file, result in units:
        if isinstance(result, SourceError):
            report.errors.append(str(result))
        else:
            good[file] = result
    planned: list[Planned] = []
    while good:  # an item the store refuses drops its file, and the rest is planned again
        merged, owner = _merge(good)
        planner = Planner(app, fmt, label, owner, labels=dry_run)
        progress.start(2 * (len(merged.nodes) + len(merged.edges)), f"planning {len(merged.nodes)} item(s)")
        try:
            planned = planner.plan(merged, progress.advance)
        except SourceError as exc:
            if exc.file not in good:
                raise
            report.errors.append(str(exc))
            del good[exc.file]
            continue
        report.present.update(planner.present)
        report.skipped.update(planner.skipped)
        break
    report.stored.update(Counter(event.what for event in planned))
    if dry_run:
        report.planned = planned
    elif planned:
        progress.advance(0, f"storing {len(planned)} event(s)")
        app.store.append_many([(p.kind, p.data) for p in planned], ids=[p.id for p in planned], fold=False)
    progress.advance(progress.total)
    if report.errors and len(units) == 1:
        raise InputError(report.errors[0])
    return report


def _import_sessions(app: App, fmt: str, where: Path, dry_run: bool, progress: Progress) -> Report:
    """Each transcript file a session: all of them planned, then stored in one write (dated when they happened)."""
    paths, refused = transcripts.files(where, fmt)
    report = Report(fmt, str(where), dry_run, files=len(paths))
    report.errors += [str(error) for error in refused]
    known = set(app.store.view(ActivityView).turn_ids)  # turns captured live or imported before
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


def _merge(good: dict[str, Records]) -> tuple[Records, dict[str, str]]:
    merged = Records()
    owner: dict[str, str] = {}
    for file, records in good.items():
        merged.nodes += records.nodes
        merged.edges += records.edges
        merged.deleted += records.deleted
        merged.skipped.update(records.skipped)
        owner.update(dict.fromkeys((record.key for record in records.nodes), file))
    return merged, owner
