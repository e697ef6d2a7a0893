"""A session's digest: its turn records folded in order, and the automatic handoff derived from it.

The digest holds the files touched (and their state when last captured), each check's last
outcome (`outcomes.py`), the latest todo list, the session's substance (`substance.py`), the
last final reply of a turn that did or decided something (a closing "thanks" is not one), and
the latest handoff the agent wrote in the session (`handoff`, with whether work followed it).
The same fold runs over the turn records a session start reads and over a capture's new turns.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from contextflow.capture import outcomes, substance
from contextflow.core import regexes

MAX_FILES = 40
MAX_FINALS = 2
MAX_ERRORS = 5
_NEXT = regexes.compile(r"\bnext steps?\s*[:\-]\s*(.+)", re.I)
_DONE = ("completed", "complete", "done", "cancelled", "canceled")


def _merge_unique(old: list[str], new: list[str], limit: int) -> list[str]:
    merged = [item for item in old if item not in new] + new
    return merged[-limit:]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def turn_has_work(turn: dict[str, Any]) -> bool:
    files: dict[str, Any] = turn["files"] if isinstance(turn.get("files"), dict) else {}
    return bool(files.get("created") or files.get("edited") or turn.get("commands") or "todos" in turn)


_READ_ONLY_WORDS = (
    "cd ls ll la cat head tail less more pwd echo printf find fd grep rg ag wc which whereis type tree stat file du "
    "df env printenv date whoami id uname hostname history man help true test sort uniq cut jq diff cmp realpath "
    "basename dirname readlink sed awk"
)
_READ_ONLY = frozenset(_READ_ONLY_WORDS.split())
_GIT_READ_WORDS = "status log diff show branch remote rev-parse blame grep ls-files describe shortlog reflog"
_GIT_READ = frozenset(_GIT_READ_WORDS.split())
_CONTEXTFLOW_READ_WORDS = "status list resume search activity show where-am-i compose query"
_CONTEXTFLOW_READ = frozenset(_CONTEXTFLOW_READ_WORDS.split())


def _reads_only(command: str) -> bool:
    """Whether a shell command only looks (`git status`, `ls`, `cat x | grep y`): every part of it runs a
    known read-only tool (`sed -i` and a `find -delete` or `-exec` change things; a redirect writes)."""
    import re

    if ">" in command.replace("2>&1", "").replace(">&2", "") or re.search(r"\bsed\s+-i|-delete\b|-exec\b", command):
        return False
    for part in re.split(r"&&|\|\||[|;\n]", command):
        words = [w for w in part.split() if "=" not in w or w.startswith("-")]
        if not words:
            continue
        tool = words[0].rsplit("/", 1)[-1]
        rest = [w for w in words[1:] if not w.startswith("-")]
        if tool == "git":
            given = [w for n, w in enumerate(words[1:], 1) if words[n - 1] not in ("-C", "-c")]
            sub = next((w for w in given if not w.startswith("-") and "=" not in w), "")
            if sub not in _GIT_READ or (sub in ("branch", "remote") and len(rest) > 1):
                return False
        elif tool in ("contextflow", "ctx"):
            if not rest or rest[0] not in _CONTEXTFLOW_READ:
                return False
        elif tool not in _READ_ONLY:
            return False
    return True


def turn_changes_something(turn: dict[str, Any]) -> bool:
    """Whether a turn did work that counts toward the age of what earlier sessions decided: wrote a file or
    ran a command that is not read-only (a session that only talked, or ran `git status` and `ls`, does not)."""
    files: dict[str, Any] = turn["files"] if isinstance(turn.get("files"), dict) else {}
    if files.get("created") or files.get("edited"):
        return True
    commands = [c.get("command") for c in _list(turn.get("commands")) if isinstance(c, dict)]
    return any(isinstance(command, str) and command.strip() and not _reads_only(command) for command in commands)


def fold(digest: dict[str, Any], turn: dict[str, Any]) -> dict[str, Any]:
    """The digest with one more turn (a new dict; the old one is not changed)."""
    import copy  # the session start folds in place and never needs it

    out: dict[str, Any] = copy.deepcopy(digest)
    fold_in(out, turn)
    return out


def fold_all(turns: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The digest of a session's turns, oldest first (one dict, folded in place)."""
    out: dict[str, Any] = {}
    for turn in turns:
        fold_in(out, turn)
    return out


def fold_in(out: dict[str, Any], turn: dict[str, Any]) -> None:
    """Fold one more turn into `out`, in place (`turn` is not changed)."""
    number = out.get("turns", 0) + 1
    out["turns"] = number
    files_of: dict[str, Any] = turn["files"] if isinstance(turn.get("files"), dict) else {}
    files = out.get("files", [])
    for kind in ("created", "edited"):
        files = _merge_unique(files, [p for p in _list(files_of.get(kind)) if isinstance(p, str)], MAX_FILES)
    out["files"] = files
    read = [p for p in _list(files_of.get("read")) if isinstance(p, str)]
    out["read"] = _merge_unique(out.get("read", []), read, MAX_FILES)
    checks: dict[str, Any] = out.setdefault("checks", {})
    for command in _list(turn.get("commands")):
        if isinstance(command, dict):
            outcomes.fold(checks, command, number)
    if isinstance(turn.get("todos"), list):
        out["todos"] = [t for t in turn["todos"] if isinstance(t, dict) and isinstance(t.get("text"), str)]
    work = turn_has_work(turn)
    said = substance.of_turn(turn)
    if isinstance(turn.get("final"), str) and turn["final"] and (work or said or not out.get("finals")):
        out["finals"] = ([*out.get("finals", []), turn["final"]])[-MAX_FINALS:]
    if isinstance(turn.get("request"), str) and turn["request"] and (work or said or not out.get("request")):
        out["request"] = turn["request"]
    out["substance"] = substance.accumulate(out.get("substance", {}), said)
    if work:
        tool_errors = [e for e in _list(turn.get("errors")) if isinstance(e, str) and "` exited " not in e]
        out["errors"] = tool_errors[-MAX_ERRORS:]
    state = turn.get("state")
    if isinstance(state, dict) and isinstance(state.get("files"), dict):
        known = out.setdefault("state", {"commit": "", "files": {}})
        known["files"].update({p: b for p, b in state["files"].items() if isinstance(b, str)})
        commit = state.get("commit")
        known["commit"] = commit if isinstance(commit, str) and commit else known.get("commit", "")
        for name in ("branch", "machine", "root"):  # where the latest turn was made (filestate.states)
            if isinstance(state.get(name), str) and state[name]:
                known[name] = state[name]
    handoff = turn.get("handoff")
    if isinstance(handoff, dict) and isinstance(handoff.get("summary", ""), str):
        out["handoff"] = {**handoff, "turn": number}
    elif work and "handoff" in out:
        out["handoff"]["work_after"] = True


def _outcome(code: Any) -> str:
    return "exit ?" if code is None else ("ok" if code == 0 else f"exit {code}")


def has_work(digest: dict[str, Any]) -> bool:
    """Whether the session did anything to hand over: touched a file, ran a command or keeps a todo list.
    A session that only talked hands nothing over (it would push real work out of the latest handoff)."""
    return bool(digest.get("files") or digest.get("checks") or digest.get("commands") or digest.get("todos"))


def auto_handoff(digest: dict[str, Any]) -> dict[str, Any]:
    """The automatic handoff's fields: summary, files, next steps, tests and commands with their last
    outcomes, failing checks with their error line, decisions and open questions."""
    finals = digest.get("finals") or []
    summary = finals[-1] if finals else f"Worked on: {digest.get('request') or 'an unnamed request'}"
    checks = digest.get("checks", {})
    tests = [f"{c['command']} -> {_outcome(c['exit'])}" for c in checks.values() if c.get("test")]
    others = [f"{outcomes.shown(c['command'])} -> {_outcome(c['exit'])}" for c in checks.values() if not c.get("test")]
    todos = [t["text"] for t in digest.get("todos") or [] if t.get("status", "").lower() not in _DONE]
    said = digest.get("substance", {})
    next_steps = []
    for final in reversed(finals):
        found = _NEXT.search(final)
        if found:
            next_steps.append(found.group(1).strip()[:300])
            break
    for item in [*said.get("todos_said", []), *todos]:
        if all(not substance.same(item, step) for step in next_steps):
            next_steps.append(f"todo: {item}" if item in todos else item)
    errors = [
        f"`{c['command'][:80]}` exited {c['exit']}: {c['error']}" for c in outcomes.failing(checks) if c.get("error")
    ]
    fields: dict[str, Any] = {
        "summary": summary,
        "files": digest.get("files", []),
        "next_steps": next_steps[:20],
        "commands": others[-10:],
        "tests": tests[-5:],
        "open_todos": todos[:20],
        "errors": (errors + digest.get("errors", []))[-MAX_ERRORS:],
        "failing": outcomes.failing(checks),
        "decisions": said.get("decisions", []),
        "open_questions": said.get("questions", []),
        "request": digest.get("request", ""),
        "turns": digest.get("turns", 0),
    }
    return {name: value for name, value in fields.items() if value not in ("", [], None)}


def decision_text(item: dict[str, Any]) -> str:
    text = str(item.get("decision", ""))
    if item.get("status") == "rejected":
        text = f"rejected: {text}"
    return text + (f" (because {item['reasoning']})" if item.get("reasoning") else "")
