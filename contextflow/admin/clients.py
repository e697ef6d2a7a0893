"""hook and install: what runs inside MCP clients and what sets them up (`plan_install`: each
client's changes, from `install.py`'s config writers and the OpenCode and packaged-plugin planners
beside it). Imports stay light: a hook runs on every prompt a user types, so it pays only for what
its event needs."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from contextflow.admin.install import Change
    from contextflow.app import App
    from contextflow.operations.spec import JSON, Reply


def hook(env: Mapping[str, str] | None, args: JSON) -> Reply:
    """`contextflow hook EVENT` (no store opened: `env` is the environment the CLI runs in)."""
    from contextflow.operations.spec import Reply  # loaded with the table that runs this row

    return Reply.finished(run_hook(env, args["event"]))


def run_hook(env: Mapping[str, str] | None, event: str) -> int:
    """One hook call: the payload on stdin, the answer on stdout; the CLI's fast path calls it without the table."""
    from contextflow.adapters.hooks import run

    try:
        raw = sys.stdin.buffer.read()
    except Exception:
        raw = b""
    output = run(event, raw, env)
    if output:
        with contextlib.suppress(OSError):  # the client stopped listening: still never fail it
            sys.stdout.write(output + "\n")
            sys.stdout.flush()
    return 0


def start_preview(app: App, args: JSON) -> Reply:
    """What the next session start would inject (project and session as given, else the defaults),
    produced by the hook's own code, and its size against each client's limit."""
    import json

    from contextflow.adapters.hooks import hook_budget, hook_dir, session_start_output
    from contextflow.adapters.session_start import CLIENT_LIMITS
    from contextflow.app import App as AppType
    from contextflow.operations.spec import Reply
    from contextflow.sessions.core import active_session

    project = args.get("project") or app.settings.default_project
    settings = app.settings._replace(
        default_project=project, active_session=args.get("session_id") or active_session(app)
    )
    budget = hook_budget(app.env)
    hooks = hook_dir(app.store.folder, app.env)
    output = session_start_output(AppType(app.store, settings), hooks, budget, project)
    context = json.loads(output)["hookSpecificOutput"]["additionalContext"] if output else ""
    limits = [
        {"client": key, "name": name, "limit": limit, "fits": limit is None or len(context) <= limit}
        for key, name, limit in CLIENT_LIMITS
    ]
    from contextflow.capture.recall import latest_handoff
    from contextflow.sessions.stored import partial

    carried = latest_handoff(AppType(app.store, settings), project)
    carried_session = carried.session_id if carried is not None else None
    building = partial(app)  # the handoff read among the logs' newest bytes only
    lines = [
        f"session start for project={project}"
        + (f" (chosen by {app.settings.project_rule})" if project == app.settings.default_project else "")
        + f" session={settings.active_session or '(none)'}: "
        f"{len(context):,} characters (hook budget {budget:,} tokens)",
        # the start carries the repository's newest handoff, whichever session wrote it (MAINTAINERS.md)
        f"  its handoff: the project's latest, from session {carried_session}"
        + (" (not the session previewed: it has none newer)" if carried_session != settings.active_session else "")
        if carried is not None
        else f"  its handoff: none among the newest events read so far ({building.text()})"
        if building is not None
        else "  its handoff: none (no session of this project has one)",
    ]
    for item in limits:
        verdict = "fits" if item["fits"] else "OVER"
        size = f"limit {item['limit']:,} characters, {verdict}" if item["limit"] else "no documented limit"
        lines.append(f"  {item['name']}: {size}")
    # the context as the model reads it (the hook's JSON is in --format json's `output`)
    lines += ["", context or "(nothing: the hook prints nothing)"]
    data = {
        "project": project,
        "project_chosen_by": app.settings.project_rule if project == app.settings.default_project else "argument",
        "session_id": settings.active_session,
        "handoff_session_id": carried_session,
        "output": output,
        "context": context,
        "chars": len(context),
        "budget_tokens": budget,
        "limits": limits,
        **({"partial": building._asdict()} if building is not None else {}),
    }
    return Reply("\n".join(lines), data)


def install(env: Mapping[str, str] | None, args: JSON) -> Reply:
    from contextflow.admin import packaged
    from contextflow.admin.install import AFTER_INSTALL
    from contextflow.operations.spec import Reply

    dry_run = bool(args.get("dry_run"))
    changes = install_client(args["client"], project=bool(args.get("project")), dry_run=dry_run, env=env)
    changed = any(change.changed for change in changes)
    blocks: list[str] = []
    home = (os.environ if env is None else env).get("HOME") or str(Path.home())
    found = packaged.find(args["client"], Path(home), Path.cwd())
    if found is not None:
        from contextflow.admin.install_plugins import note as packaged_note

        blocks.append(packaged_note(found, changed))
    for change in changes:
        action = "create" if change.before is None else "update"
        if change.changed:
            blocks.append(f"{'would ' + action if dry_run else action + 'd'}  {change.path}\n{change.diff()}".rstrip())
        else:
            blocks.append(f"unchanged  {change.path}")
    if changed and not dry_run:
        note = AFTER_INSTALL.get(args["client"], "")
        blocks.append(f"Restart {args['client']} to load contextflow. {note}".rstrip())
    elif not changed and found is None:
        blocks.append("contextflow is already installed; nothing changed.")
    data = [
        {"path": str(c.path), "changed": c.changed, "created": c.before is None and c.changed, "diff": c.diff()}
        for c in changes
    ]
    warnings: list[str] = []
    if not dry_run:
        from contextflow.admin.install_check import install_warnings

        warnings = install_warnings(args["client"])
    info = {"client": args["client"], "dry_run": dry_run, "changes": data, "warnings": warnings}
    info["packaged"] = found._asdict() if found is not None else None
    return Reply("\n\n".join(blocks), info, remark="\n".join(f"warning: {w}" for w in warnings) or None)


def plan_install(
    client: str,
    *,
    project: bool,
    home: Path | None = None,
    cwd: Path | None = None,
    command: list[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> list[Change]:
    """Every change `install` makes for `client` (user scope, or the project with `project`)."""
    from contextflow.admin.fields import CLIENTS
    from contextflow.admin.install import (
        CLIENT_VARIABLE,
        GEMINI_HOOK_TIMEOUT,
        GEMINI_HOOKS,
        HOOK_CLIENTS,
        SERVER_NAME,
        Change,
        _read,
        codex_entry,
        existing_entry_env,
        hooks_mutator,
        merge_json,
        server_command,
        server_mutator,
        skill_text,
        store_settings,
    )
    from contextflow.core.errors import InputError

    if client not in CLIENTS:
        raise InputError(f"unknown client {client!r}; install supports {', '.join(CLIENTS)}")
    home = home or Path(os.environ.get("HOME") or Path.home())
    root = (cwd or Path.cwd()) if project else home
    command = command or server_command()
    env = os.environ if env is None else env
    if client == "opencode":
        from contextflow.admin import install_opencode

        return install_opencode.plan(home, root, project, command, env)
    config = {
        "claude-code": root / ".mcp.json" if project else home / ".claude.json",
        "codex": root / ".codex" / "config.toml",
        "gemini": root / ".gemini" / "settings.json",
        "cursor": root / ".cursor" / "mcp.json",
    }[client]
    from contextflow.admin import packaged

    found = packaged.find(client, home, cwd or Path.cwd())
    settings = store_settings(env, existing_entry_env(config))
    if found is not None:
        from contextflow.admin.install_plugins import plan_beside

        return plan_beside(found, config, root, settings)
    hook_settings = {**settings, CLIENT_VARIABLE: HOOK_CLIENTS.get(client, client)}  # the hook knows its client
    if client == "claude-code":
        skill = root / ".claude" / "skills" / SERVER_NAME / "SKILL.md"
        hooks = root / ".claude" / "settings.json"
        return [
            merge_json(config, server_mutator(config, command, {"type": "stdio"}, settings)),
            merge_json(hooks, hooks_mutator(hooks, command, hook_settings)),
            Change(skill, _read(skill), skill_text()),
        ]
    if client == "codex":
        hooks = root / ".codex" / "hooks.json"
        return [
            codex_entry(config, command, settings),
            merge_json(hooks, hooks_mutator(hooks, command, hook_settings, start_matcher=False)),
        ]
    if client == "gemini":
        return [
            merge_json(
                config,
                server_mutator(config, command, {}, settings),
                hooks_mutator(config, command, hook_settings, events=GEMINI_HOOKS, timeout=GEMINI_HOOK_TIMEOUT),
            )
        ]
    from contextflow.admin.install_cursor import hooks_mutator as cursor_hooks

    hooks = root / ".cursor" / "hooks.json"
    return [
        merge_json(config, server_mutator(config, command, {}, settings)),
        merge_json(hooks, cursor_hooks(hooks, command, hook_settings)),
    ]


def write_change(change: Change) -> None:
    """Write atomically, keeping an existing file's permissions."""
    from contextflow.core.errors import InputError
    from contextflow.core.fsutil import atomic_write

    path = change.path
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600 if path.name == ".claude.json" else 0o644
    try:
        atomic_write(path, change.after.encode(), mode=mode, fsync=False)
        os.chmod(path, mode)  # the umask may have narrowed it
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None


def install_client(
    client: str,
    *,
    project: bool = False,
    dry_run: bool = False,
    home: Path | None = None,
    cwd: Path | None = None,
    command: list[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> list[Change]:
    """Plan every change first (so a bad file stops all of them), then write unless dry_run."""
    changes = plan_install(client, project=project, home=home, cwd=cwd, command=command, env=env)
    if not dry_run:
        for change in changes:
            if change.changed:
                write_change(change)
    return changes
