"""What `contextflow doctor` and the info resource report about a store."""

from __future__ import annotations

import os
import stat
from collections import Counter
from pathlib import Path
from typing import Any

from contextflow.app import App
from contextflow.core import legacy, tables
from contextflow.core.blobs import bad_blobs
from contextflow.core.clock import MAX_DRIFT_MS, ahead_ms
from contextflow.core.events import MAX_DEPTH
from contextflow.core.log import iter_quarantine, unread_logs
from contextflow.search import derived
from contextflow.search.files import kind

_STATE_SCAN_LIMIT = 200  # entries of the state folder looked at for loose permissions
_LOG_FIELDS = ("writer", "events", "bad_lines", "legacy", "conflict_copy", "held", "torn")


def store_info(app: App, verify: bool = False, check: bool = False, repair: bool = False) -> dict[str, Any]:
    """What doctor and the info resource show; `check` (doctor) also reads every page of the machine-local
    derived tables (`Tables.damage`), `verify` (doctor, not --quick) also compares them with a fresh build from
    the logs (`tables_check`: as costly as a cold build). Damaged tables are deleted and rebuilt when `verify`
    or `repair` (--fix, --rebuild)."""
    from contextflow.sessions.core import active_session

    store = app.store
    health = store.health()
    location = store.location
    bad_kinds: Counter[str] = Counter()
    for segment in health.segments:
        bad_kinds.update(segment.bad_kinds)
    context_file = location.legacy_files[0] if location.legacy_files else None
    on_disk = tables.describe(app.tables(), check=check or verify)
    if on_disk["damaged"] and (verify or repair):
        app.tables().rebuild()
        on_disk = {**tables.describe(app.tables(), check=False), "damaged": on_disk["damaged"], "rebuilt": True}
    return {
        "store": str(store.folder),
        "chosen_by": location.rule,
        "chosen_detail": location.detail or None,
        "store_note": location.store_note or None,
        "legacy_files": [str(path) for path in location.legacy_files],
        "oversized_legacy_files": health.oversized,
        "writer": store.writer,
        "state_dir": str(store.state_dir),
        "active_session": active_session(app),
        "active_session_file": str(app.settings.active_session_file),
        "default_project": app.settings.default_project,
        "project_chosen_by": app.settings.project_rule,
        "events": store.event_count,
        "duplicate_events_ignored": store.duplicates,
        "bad_lines": health.bad_line_count,
        "bad_line_kinds": dict(bad_kinds),
        "bad_line_samples": [report._asdict() for report in health.bad_lines[:10]],
        "bad_fields": health.bad_fields,
        "writers_ahead": writers_ahead(health.segments),
        "future_stamped": future_stamped(health.bounded, health.waiting),
        "logs": [
            {"file": str(segment.path), **{name: getattr(segment, name) for name in _LOG_FIELDS}}
            for segment in health.segments
        ],
        "quarantined_fragments": [str(path) for path in iter_quarantine(store.folder)],
        "derived": derived.describe(store),
        "tables": on_disk,
        "unread_logs": [{"file": str(path), "why": why} for path, why in unread_logs(store.folder)],
        "bad_blobs": [{"file": str(path), "why": why} for path, why in bad_blobs(store.folder)],
        "verified": tables_check(app) if verify else {"checked": False},
        "loose_state_permissions": loose_state_permissions(store.state_dir.parent.parent),
        "wrong_typed_state": wrong_typed_state(store.state_dir.parent.parent),
        # ContextFlowMCP's names for the same facts (tools written against its info resource): its
        # context file and how it was found, in its words; its session folder is read, never written
        "file": str(context_file or store.log_writer.path),
        # its companions only where they exist: contextflow reads them, never creates them
        "sessionDataDir": _existing(legacy.sessions_dir(context_file)) if context_file else None,
        "sessionIndexFile": _existing(legacy.index_file(context_file)) if context_file else None,
        "lockFile": str(store.log_writer.lock_file),  # contextflow's writer lock (ContextFlowMCP: `<file>.lock`)
        "activeSessionFile": str(app.settings.active_session_file),
        "activeSessionId": active_session(app),
        "defaultProject": app.settings.default_project,
        "contextFolder": str(context_file.parent) if context_file else str(store.folder),
        "contextFileSource": location.source,
        "contextFileDiscovery": {
            **dict(location.discovery),
            "rule": location.rule,
            "detail": location.detail or None,
            "store": str(store.folder),
            "legacy_files": [str(path) for path in location.legacy_files],
        },
    }


def _existing(path: Path) -> str | None:
    return str(path) if path.exists() else None


def writers_ahead(segments: Any) -> list[dict[str, Any]]:
    """Writers whose newest stamp lies more than the drift bound ahead of this machine's clock."""
    found: dict[str, int] = {}
    for segment in segments:
        ahead = ahead_ms(segment.newest)
        if ahead > MAX_DRIFT_MS:
            found[segment.writer] = max(found.get(segment.writer, 0), ahead)
    return [{"writer": writer, "ahead_s": ms // 1000} for writer, ms in sorted(found.items())]


def tables_check(app: App) -> dict[str, Any]:
    """Whether the machine-local derived tables say what a fresh build from the logs says: forged or
    damaged tables could show what no log holds. They are trusted and never checked on load (that would
    cost the build they save): `doctor` asks, and deletes a liar."""
    return {"checked": True, "derived_tables_differing": app.tables().differing()}


def future_stamped(bounded: dict[str, int], waiting: dict[str, int]) -> list[dict[str, Any]]:
    """Per writer: events stamped beyond the drift bound that a bound ordered before later writes, and
    those no bound names yet (the next write here bounds them)."""
    return [
        {"writer": writer, "bounded": bounded.get(writer, 0), "waiting": waiting.get(writer, 0)}
        for writer in sorted({*bounded, *waiting})
    ]


def _state_entries(root: Path) -> list[tuple[str, os.stat_result]]:
    """The first entries of the state folder with their `lstat` (links not followed, nothing opened)."""
    found: list[tuple[str, os.stat_result]] = []
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            if len(found) >= _STATE_SCAN_LIMIT:
                return found
            path = os.path.join(folder, name)
            try:
                found.append((path, os.lstat(path)))
            except OSError:
                continue
    return found


def _folder_expected(path: str) -> bool | None:
    """Whether a folder (True) or a regular file (False) belongs at `path` in the state folder, when known."""
    name, parent = os.path.basename(path), os.path.basename(os.path.dirname(path))
    if parent == "derived" and name.startswith("search"):
        return True
    if parent.startswith("search") and os.path.basename(os.path.dirname(os.path.dirname(path))) == "derived":
        return False  # (an index folder holds only files)
    if name.endswith(".lock") or name.startswith("views.sqlite3") or name == "writer-id":
        return False
    return None


def wrong_typed_state(root: Path) -> list[str]:
    """State items that are not what contextflow writes there: a FIFO, device or socket anywhere, a folder
    where a file belongs (a lock file, `views.sqlite3`), a file where a folder belongs (the search index)."""
    found = []
    for path, st in _state_entries(root):
        mode, folder = st.st_mode, _folder_expected(path)
        if stat.S_ISLNK(mode) or (stat.S_ISREG(mode) and folder is not True):
            continue
        if stat.S_ISDIR(mode) and folder is not False:
            continue
        wanted = "a folder" if folder else "a regular file"
        found.append(f"{path} ({kind(mode)}, not {wanted})")
    return found


def loose_state_permissions(root: Path) -> list[str]:
    """State files not 0600 / folders not 0700 (the state folder holds a copy of the store); items of the
    wrong type are `wrong_typed_state`'s."""
    wrong = {entry.split(" (")[0] for entry in wrong_typed_state(root)}
    return [
        f"{path} (mode {stat.S_IMODE(st.st_mode):o})"
        for path, st in _state_entries(root)
        if stat.S_IMODE(st.st_mode) & 0o077 and not stat.S_ISLNK(st.st_mode) and path not in wrong
    ]


def remove_wrong_typed(app: App) -> list[str]:
    """`doctor --fix`: the wrong-typed items of this store's machine-local state removed (never followed:
    the logs rebuild what they held). Others (the machine's `writer-id`) are only reported."""
    from contextflow.core.fsutil import remove_derived

    removed = []
    root, own = app.store.state_dir.parent.parent, str(app.store.state_dir) + os.sep
    for entry in wrong_typed_state(root):
        path = entry.split(" (")[0]
        if path.startswith(own):
            try:
                remove_derived(Path(path))
            except OSError:
                continue
            removed.append(f"{entry}: removed")
    return removed


def fix_permissions(app: App) -> list[str]:
    """`doctor --fix`: the state files and folders contextflow writes (and the store folder) made private
    again (0600 / 0700); only this user's own, never through a link. What was changed, each once."""
    from contextflow.core.locate import current_uid

    uid = current_uid()
    root = app.store.state_dir.parent.parent
    paths = [entry.split(" (mode ")[0] for entry in loose_state_permissions(root)]
    fixed: list[str] = []
    for path in [*paths, str(app.store.folder)]:
        try:  # opened without following a link or waiting on a FIFO, then changed through the descriptor
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            mode = stat.S_IMODE(st.st_mode)
            private = 0o700 if stat.S_ISDIR(st.st_mode) else 0o600
            if (uid is None or st.st_uid == uid) and mode & 0o077:
                os.fchmod(fd, mode & private)
                fixed.append(f"{path}: mode {mode:o} -> {mode & private:o}")
        except OSError:
            continue
        finally:
            os.close(fd)
    return fixed


def _duration(ms: int) -> str:
    seconds = ms // 1000
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds} s"


def problems(info: dict[str, Any]) -> list[str]:
    """Plain-language findings that need a person's attention (conflict copies: conflicts.findings)."""
    found: list[str] = []
    if info["bad_lines"]:
        found.append(f"{info['bad_lines']} malformed line(s) were skipped (see bad_line_samples); the rest reads fine")
    kinds = info.get("bad_line_kinds", {})
    if kinds.get("clock stamp out of range"):
        found.append(
            f"{kinds['clock stamp out of range']} line(s) carry a clock stamp out of range (past year "
            "9999 or negative): skipped, left on disk; the machine that wrote them has a broken clock"
        )
    if kinds.get("nested too deeply"):
        found.append(
            f"{kinds['nested too deeply']} line(s) have arrays and objects nested more than {MAX_DEPTH} levels deep: "
            "skipped, left on disk; no contextflow writes such a line"
        )
    for path, size in info.get("oversized_legacy_files", {}).items():
        found.append(
            f"the ContextFlowMCP file {path} ({size} bytes) is over {legacy.MAX_FILE_SETTING}: it is not read and "
            "reads are refused until the limit is raised or the file is smaller"
        )
    if kinds.get("oversized line"):
        found.append(f"{kinds['oversized line']} line(s) are over the size limit (oversized): skipped, left on disk")
    if bad_fields := info.get("bad_fields"):
        listed = ", ".join(f"{name} ({count})" for name, count in list(bad_fields.items())[:10])
        found.append(
            f"{sum(bad_fields.values())} field(s) of synced events had the wrong type and were left out as "
            f"they were read: {listed}; the lines are left on disk, the rest of each event reads fine"
        )
    for writer in info.get("writers_ahead", []):
        found.append(
            f"writer {writer['writer']}'s newest event is stamped {_duration(writer['ahead_s'] * 1000)} ahead of "
            f"this machine's clock (more than the {MAX_DRIFT_MS // 60000}-minute drift bound): fix that machine's "
            f"clock, or if no machine of yours is {writer['writer']}, remove its log from the store"
        )
    for writer in info.get("future_stamped", []):
        if writer["bounded"]:
            found.append(
                f"writer {writer['writer']}: {writer['bounded']} event(s) stamped beyond the drift bound are "
                "ordered just before the write that bounded them (the same on every machine)"
            )
        if writer["waiting"]:
            found.append(
                f"writer {writer['writer']}: {writer['waiting']} event(s) stamped beyond the drift bound wait for "
                "this machine's next write, which bounds them; until then they order after every other event"
            )
    for entry in info.get("wrong_typed_state", []):
        repair = (
            "remove it by hand (it names this machine's log: restore it from a backup if you have one)"
            if os.path.basename(entry.split(" (")[0]) == "writer-id"
            else "`contextflow doctor --fix` removes it (the logs rebuild what it held)"
        )
        found.append(f"state item {entry}: damage, never opened; {repair}")
    for path in info.get("loose_state_permissions", []):
        found.append(f"state file {path} is readable by other users; chmod 600 files and 700 folders there")
    state = info.get("verified", {})
    if damaged := info.get("derived", {}).get("damaged"):
        found.append(
            f"the search index is damaged ({damaged}): the next search rebuilds it from the logs; "
            "`contextflow doctor --fix` rebuilds it now"
        )
    on_disk = info.get("tables", {})
    if damage := on_disk.get("damaged"):
        found.append(
            f"the derived tables file {on_disk['file']} is damaged ({damage}): "
            + (
                "it was deleted and rebuilt from the logs (nothing is lost); check the disk"
                if on_disk.get("rebuilt")
                else "`contextflow doctor --fix` deletes it and rebuilds it from the logs (nothing is lost)"
            )
        )
    if differ := state.get("derived_tables_differing"):
        found.append(
            f"the derived tables {', '.join(differ)} do not match the logs (forged or damaged): views.sqlite3 was "
            "deleted and is rebuilt from the logs. Check who can write the state folder"
        )
    for log in info.get("unread_logs", []):
        found.append(
            f"{log['file']} is {log['why']}, so its events are not read (contextflow never follows links in "
            "the store: one could point anywhere); if it is yours, replace it with the file itself"
        )
    for blob in info.get("bad_blobs", []):
        found.append(f"blob {blob['file']} is {blob['why']}: it is never read; remove it")
    for log in info.get("logs", []):
        if log.get("held"):
            own = log["writer"] == info.get("writer") and not log.get("conflict_copy")
            found.append(
                f"{log['file']} ends in an unfinished batch of {log['held']} event(s) (a write stopped midway, or "
                "one in progress): none of it is applied; "
                + (
                    "this machine's next write closes it (its lines stay in the log, never applied); run the "
                    "command that wrote it again"
                    if own
                    else "its machine's next write closes it (its lines stay in the log, never applied)"
                )
            )
        if log.get("torn"):
            found.append(
                f"{log['file']}: {log['torn']} line(s) of batches that were never committed (cut short, or a forged "
                "batch line) were left out"
            )
    fragments = info["quarantined_fragments"]
    if batches := sum(name.endswith(".batch.frag") for name in fragments):
        found.append(
            f"{batches} batch(es) cut short by a crash were quarantined (none of their events was applied; "
            "run the command that wrote them again)"
        )
    if lines := len(fragments) - batches:
        found.append(f"{lines} torn line fragment(s) were quarantined after a crash")
    try:
        mode = stat.S_IMODE(os.stat(info["store"]).st_mode)
        if mode & 0o077:
            found.append(f"the store folder is readable by other users (mode {mode:o}); chmod 700 it")
    except FileNotFoundError:
        pass  # the normal state before the first write: `doctor` says so beside the store, not as a problem
    return found
