"""Terminal session picker: new session first, then recent sessions; writes the active session."""

from __future__ import annotations

import questionary
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent, merge_key_bindings

from contextflow.app import App
from contextflow.core.errors import EXIT_CANCELLED
from contextflow.core.text import clip
from contextflow.sessions import core as sessions

NEW = "__new__"


def choices(app: App, project: str | None) -> list[questionary.Choice]:
    """New session first, then recent sessions with agents, last activity and last handoff."""
    query = sessions.SessionQuery(project=project or app.settings.default_project, limit=sessions.PROMPT_SESSIONS)
    found = sessions.list_sessions(app, query)
    suggested = _unused(sessions.suggest_session_id(app), {summary.session_id for summary in found})
    items = [questionary.Choice(f"+ New session ({suggested})", value=(NEW, suggested))]
    for summary in found:
        agents = clip(", ".join(sorted(summary.agents)), 60) or "?"
        when = summary.latest_ts.replace("T", " ")[:16]
        handoff = clip(summary.latest_handoff_summary, 60) if summary.latest_handoff_summary else "no handoff yet"
        label = f"{clip(summary.session_id, 40)}  ·  {agents}  ·  {when}  ·  {handoff}"
        items.append(questionary.Choice(label, value=(summary.session_id, summary.session_id)))
    return items


def _unused(name: str, taken: set[str]) -> str:
    """`name`, or `name-2`, `name-3`, ... when a listed session already has it: "New" is never an old one."""
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name}-{n}"
    return candidate


def cancel_keys() -> KeyBindings:
    """Esc and q cancel the picker (as Ctrl-C does)."""
    bindings = KeyBindings()

    @bindings.add("escape", eager=True)
    @bindings.add("q")
    def cancel(event: KeyPressEvent) -> None:
        event.app.exit(result=None)

    return bindings


def run_picker(app: App, project: str | None) -> int:
    question = questionary.select(
        "Choose a session to make active:",
        choices=choices(app, project),
        instruction="(arrows and Enter; Esc or q cancels)",
    )
    own = question.application.key_bindings or KeyBindings()
    question.application.key_bindings = merge_key_bindings([own, cancel_keys()])
    picked = question.ask()
    if picked is None:  # cancelled: 130, as Ctrl-C (README's exit codes keep 1 for doctor's problems)
        print("No session chosen; the active session is unchanged.")
        return EXIT_CANCELLED
    _, session_id = picked
    path = sessions.set_active_session(app, session_id)
    print(f"Active session: {session_id}\n(saved in {path}; agents use it when they omit session_id)")
    return 0
