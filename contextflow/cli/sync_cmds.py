"""compact: rewrite this machine's own log without the events no view needs (see docs/sync.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from contextflow.app import App
from contextflow.cli.output import add_format, emit
from contextflow.compact import CompactReport, compact, default_archive_dir


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "compact",
        help="rewrite this machine's log without superseded events",
        description="Rewrite only this writer's own log, dropping events that later events in the same log "
        "supersede (overwritten, deleted, replaced) and keeping everything other machines need to merge. "
        "Atomic: temp file, fsync, rename. Other machines refold from the new file after sync.",
    )
    parser.add_argument("--dry-run", action="store_true", help="report what would change; write nothing")
    parser.add_argument(
        "--archive", action="store_true",
        help="keep a gzip copy of the old log in the machine-local state folder (see --archive-dir)",
    )
    parser.add_argument("--archive-dir", type=Path, help="keep the gzip copy here instead (outside the store)")
    add_format(parser)
    parser.set_defaults(func=cmd_compact)


def human_size(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KB"
    return f"{count / (1024 * 1024):.1f} MB"


def report_text(report: CompactReport) -> str:
    verb = "would compact" if report.dry_run else "compacted"
    if report.bytes_before == 0:
        return f"nothing to compact: {report.log} does not exist yet"
    lines = []
    if report.blocked_by:
        lines.append(
            f"nothing dropped: the view(s) {', '.join(report.blocked_by)} cannot tell which events they no longer "
            "need, so every event is kept"
        )
    if not report.changed:
        lines.insert(0, f"nothing to compact in {report.log} ({report.lines_before} lines)")
        return "\n".join(lines)
    lines.insert(0, f"{verb} {report.log}: {report.lines_before} -> {report.lines_after} lines, "
                 f"{human_size(report.bytes_before)} -> {human_size(report.bytes_after)}")
    for label, counts in (("dropped", report.dropped), ("reduced", report.reduced)):
        if counts:
            lines.append(f"{label}: " + ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items())))
    if report.duplicates:
        lines.append(f"repeated lines removed: {report.duplicates}")
    if report.kept_unreadable:
        lines.append(f"unreadable lines kept as they are: {report.kept_unreadable}")
    if report.archive:
        lines.append(f"old log archived at {report.archive}")
    return "\n".join(lines)


def cmd_compact(args: argparse.Namespace, app: App) -> int:
    archive = args.archive_dir or (default_archive_dir(app) if args.archive else None)
    report = compact(app, archive=archive, dry_run=args.dry_run)
    emit(args, report_text(report), report.as_dict())
    return 0
