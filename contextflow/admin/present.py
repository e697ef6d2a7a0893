"""serve, doctor, pick-session and compact: running and keeping contextflow."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextflow.operations.spec import JSON, Reply

if TYPE_CHECKING:  # `serve` imports only what serving needs
    from contextflow.app import App


def serve(app: App, args: JSON) -> Reply:
    if args.get("http"):
        from contextflow.adapters.server.auth import load_grants
        from contextflow.adapters.server.http import run_http

        run_http(app, load_grants(app.env, args.get("tokens")), args["host"], args["port"])
        return Reply.finished()
    from contextflow.adapters.server.app import run_stdio

    run_stdio(app)
    return Reply.finished()


def ui(app: App, args: JSON) -> Reply:
    from contextflow.adapters.ui.server import run_ui

    run_ui(app, args.get("port"), open_browser=not args.get("no_open"))
    return Reply.finished()


def doctor(app: App, args: JSON) -> Reply:
    from contextflow.admin.diagnose import problems, store_info
    from contextflow.admin.install_check import client_store_findings
    from contextflow.core import conflicts
    from contextflow.core.errors import EXIT_PROBLEMS

    fixed = conflicts.fix(app.store) if args.get("fix") else None
    from contextflow.admin.diagnose import fix_permissions
    from contextflow.admin.settings_check import settings_findings

    chmodded = fix_permissions(app) if args.get("fix") else []
    if args.get("fix") or args.get("rebuild"):
        from contextflow.admin.diagnose import remove_wrong_typed

        chmodded += remove_wrong_typed(app)
    from contextflow.search import derived

    if args.get("rebuild") or (args.get("fix") and derived.describe(app.store)["damaged"]):
        derived.search_for(app.store).rebuild()
    from contextflow.capture.health import capture_health, health_lines

    info = store_info(
        app, verify=not args.get("quick"), check=True, repair=bool(args.get("fix") or args.get("rebuild"))
    )
    found = (
        problems(info)
        + conflicts.findings(app.store)
        + client_store_findings()
        + settings_findings(app.env, app.settings)
    )
    info["problems"] = found
    info["capture"] = capture_health(app.store.state_dir)
    from contextflow.adapters.cli import SUPPORTED_PLATFORMS

    info["platform"] = {"system": platform.system(), "supported": SUPPORTED_PLATFORMS}
    lines = [
        f"platform:     {platform.system()} (supported: {SUPPORTED_PLATFORMS})",
        f"store:        {info['store']}" + ("" if os.path.isdir(info["store"]) else " (created on the first write)"),
        f"chosen by:    {info['chosen_by']}" + (f" ({info['chosen_detail']})" if info["chosen_detail"] else ""),
        *([f"store note:   {info['store_note']}"] if info["store_note"] else []),
        *(
            f"ContextFlowMCP: {path} and its .sessions/ (its {info['contextFileSource']}; read, never written"
            + ("" if any(log["legacy"] for log in info["logs"]) else "; nothing there yet")
            + ")"
            for path in info["legacy_files"][:1]
        ),
        f"writer:       {info['writer']}",
        f"state:        {info['state_dir']}",
        f"events:       {info['events']} (duplicates ignored: {info['duplicate_events_ignored']})",
        f"bad lines:    {info['bad_lines']}",
        f"active:       {info['active_session'] or '(none)'}",
        f"project:      {info['default_project']} (chosen by {info['project_chosen_by']})",
        "logs:" if info["logs"] else "logs:         none yet (the first write creates this machine's)",
    ]
    for log in info["logs"]:
        tags = [t for t, on in (("legacy", log["legacy"]), ("conflict copy", log["conflict_copy"])) if on]
        extra = f" [{', '.join(tags)}]" if tags else ""
        lines.append(f"  {log['file']}: {log['events']} events, {log['bad_lines']} bad{extra}")
    index = info["derived"]
    status = (
        "damaged (the next search rebuilds it)"
        if index["damaged"]
        else "current"
        if index["current"]
        else "behind the logs (the next search catches up)"
        if index["version_matches"]
        else "not built"
    )
    held = f"{index['documents'] or 0} documents, {status} (updated {index['updated'] or 'never'})"
    if index.get("locked"):  # (its documents, build and read positions are in the locked file)
        held = "how far it is could not be read: another process holds views.sqlite3 locked"
    lines += [
        f"search index: {index['folder']}: {index['bytes'] / 1e6:.1f} MB, {held}",
        f"  rebuild:    {index['rebuild']}",
        *health_lines(info["capture"]),
    ]
    on_disk = info["tables"]
    versions = ", ".join(f"{name} v{version}" for name, version in on_disk["formats"].items())
    lines += [
        f"views on disk: {on_disk['file']}: {on_disk['bytes'] / 1e6:.1f} MB ({versions}), {_tables_state(on_disk)}",
        f"  rebuild:    {on_disk['rebuild']}",
    ]
    from contextflow.admin.install_check import client_ways

    ways, _ = client_ways(Path(app.env.get("HOME") or Path.home()), Path.cwd())
    info["clients"] = ways
    lines += ["clients:", *(f"  {way}" for way in ways)] if ways else ["clients:      none configured"]
    lines.append("problems:" if found else "problems:     none")
    lines += [f"  - {problem}" for problem in found]
    if fixed is not None:
        info["fix"], info["permissions_fixed"] = fixed.as_dict(), chmodded
        lines += fixed.lines()
        lines += [f"fixed: {path}" for path in chmodded]
    return Reply("\n".join(lines), info, exit=EXIT_PROBLEMS if found else 0)


def pick_session(app: App, args: JSON) -> Reply:
    from contextflow.adapters.picker import run_picker

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print(
            "contextflow: pick-session needs an interactive terminal; in scripts use "
            "`contextflow use SESSION_ID` or the choose_session tool instead",
            file=sys.stderr,
        )
        return Reply.finished(2)
    return Reply.finished(run_picker(app, args.get("project")))


def human_size(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    return f"{count / 1024:.1f} KB" if count < 1024 * 1024 else f"{count / (1024 * 1024):.1f} MB"


def compact_log(app: App, args: JSON) -> Reply:
    from contextflow.core.compact import compact, default_archive_dir

    given = args.get("archive_dir")
    archive = Path(given) if given else (default_archive_dir(app.store) if args.get("archive") else None)
    report = compact(app.store, app.unneeded(), archive=archive, dry_run=bool(args.get("dry_run")))
    if report.bytes_before == 0:
        return Reply(f"nothing to compact: {report.log} does not exist yet", report.as_dict())
    verb = "would compact" if report.dry_run else "compacted"
    lines = [
        f"{verb} {report.log}: {report.lines_before} -> {report.lines_after} lines, "
        f"{human_size(report.bytes_before)} -> {human_size(report.bytes_after)}"
        if report.changed
        else f"nothing to compact in {report.log} ({report.lines_before} lines)"
    ]
    if report.blocked_by:
        lines.append(
            f"nothing dropped: the view(s) {', '.join(report.blocked_by)} cannot tell which events they no longer "
            "need, so every event is kept"
        )
    if report.changed:
        for label, counts in (("dropped", report.dropped), ("reduced", report.reduced)):
            if counts:
                lines.append(f"{label}: " + ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items())))
        if report.duplicates:
            lines.append(f"repeated lines removed: {report.duplicates}")
        if report.kept_unreadable:
            lines.append(f"unreadable lines kept as they are: {report.kept_unreadable}")
        if report.archive:
            lines.append(f"old log archived at {report.archive}")
    return Reply("\n".join(lines), report.as_dict())


def read_info(app: App) -> str:
    """The `shared-context://info` resource (the sessions feature offers it, ContextFlowMCP's API)."""
    from contextflow import __version__
    from contextflow.admin.diagnose import store_info
    from contextflow.operations.provenance import dumps

    return dumps({"server": {"name": "contextflow", "version": __version__}, **store_info(app)})


def _tables_state(on_disk: dict[str, Any]) -> str:
    if on_disk.get("rebuilt"):
        return "damaged: deleted and rebuilt from the logs"
    if on_disk.get("damaged"):
        return "damaged (see problems)"
    if on_disk["current"]:
        return "current"
    if on_disk.get("locked"):
        return "could not be read: another process holds views.sqlite3 locked (reads answer from the logs meanwhile)"
    return "empty (the store has no logs yet)" if on_disk.get("empty") else "behind the logs (the next read catches up)"
