"""Each check's last outcome: commands keyed by what they check, not by how they were spelled.

`check_key("pytest -q")` and `check_key("python -m pytest tests/")` are the same check (the
whole pytest suite); `pytest tests/test_a.py::test_x` is a narrower one inside it. A later
passing run clears every failure it covers; a later failing run replaces the outcome of its own
check. `error_line` picks the meaningful line of a failure's output (the assertion, the
exception), never progress output. Pure functions: capture and the session start share them.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from typing import Any

from contextflow.core import regexes

MAX_CHECKS = 15
WHOLE = ""  # the target of a run over the whole suite
_RUNNER_NAMES = {
    "pytest": "pytest",
    "unittest": "unittest",
    "tox": "tox",
    "nox": "nox",
    "jest": "jest",
    "vitest": "vitest",
    "npm": "npm test",
    "go": "go test",
    "cargo": "cargo test",
    "make": "make test",
    "script": "scripts/test",
}


@cache
def _runner() -> re.Pattern[str]:
    """One pattern for every test runner (compiled the first time a test command is keyed)."""
    return regexes.compile(
        r"(?P<pytest>(?:^|[\s/])(?:py\.test|pytest)\b)|(?P<unittest>\bunittest\b)|(?P<tox>\btox\b)|(?P<nox>\bnox\b)"
        r"|(?P<jest>\bjest\b)|(?P<vitest>\bvitest\b)|(?P<npm>\b(?:npm|yarn|pnpm)(?: run)? test\b)|(?P<go>\bgo test\b)"
        r"|(?P<cargo>\bcargo test\b)|(?P<make>\bmake test\b)|(?P<script>\bscripts/test\b)"
    )


_TESTS = regexes.compile(
    r"(^|[\s;&|(/])(pytest|py\.test|unittest|tox|nox|npm (run )?test|yarn test|pnpm test|npx (jest|vitest)|jest|"
    r"vitest|go test|cargo test|mvn test|gradle test|\./gradlew test|rspec|phpunit|ctest|make test|"
    r"bash scripts/test|scripts/test)\b"
)


def is_test_command(command: str) -> bool:
    return bool(_TESTS.search(command))


_SUITE_FOLDERS = {"tests", "test", "spec", ".", "./...", "..."}


@cache
def _patterns() -> tuple[re.Pattern[str], tuple[re.Pattern[str], ...]]:
    """Progress lines, and what makes a line meaningful, most telling first (compiled on first failure)."""
    progress = regexes.compile(r"^[\s.FEsxX]*(\[\s*\d+%\])?\s*$|^=+.*=+$|^-+$|^collected \d+|^platform |^rootdir")
    meaning = (
        regexes.compile(r"^E\s+\S"),  # pytest's assertion and exception lines
        regexes.compile(r"^FAILED\s+\S"),  # pytest's short summary
        regexes.compile(r"\b(AssertionError|Error|Exception|panicked at|FAIL:|error\[|error:)", re.I),
        regexes.compile(r"\b(fail(ed|ure)?|not found|no such|denied|refused|timed? ?out)\b", re.I),
    )
    return progress, meaning


def _words(command: str) -> list[str]:
    import shlex

    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


@lru_cache(maxsize=1_024)  # a session runs the same few commands again and again
def check_key(command: str) -> str:
    """What a command checks: `runner` + `|` + target (WHOLE for the suite) for a test command,
    else the command with its spacing collapsed."""
    text = " ".join(command.split())
    if not is_test_command(text):
        return text
    found = _runner().search(text)
    runner = _RUNNER_NAMES.get(found.lastgroup or "", "tests") if found else "tests"
    targets = []
    for word in _words(text.split("&&")[-1].split("|")[0]):
        if word.startswith("-") or "=" in word or not ("/" in word or word.endswith(".py") or "::" in word):
            continue
        word = word.removeprefix("./").rstrip("/")
        if word not in _SUITE_FOLDERS:
            targets.append(word)
    return f"{runner}|{','.join(sorted(targets)) or WHOLE}"


def covers(wider: str, narrower: str) -> bool:
    """Whether a passing run of check `wider` also shows check `narrower` passes."""
    if wider == narrower:
        return True
    runner, _, scope = wider.partition("|")
    other_runner, bar, other_scope = narrower.partition("|")
    if not bar or runner != other_runner:
        return False
    if scope == WHOLE:
        return True
    inside = other_scope.split(",") if other_scope else []
    scopes = scope.split(",")
    return bool(inside) and all(
        any(t == s or t.startswith(s + "/") or t.startswith(s + "::") for s in scopes) for t in inside
    )


def error_line(output: str, limit: int = 200) -> str:
    """The line of a failure's output that says what went wrong: an assertion or exception line
    first, then a failure summary, else the last line that is not progress output."""
    progress, meaning = _patterns()
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    for pattern in meaning:
        found = [line for line in lines if pattern.search(line) and not progress.match(line)]
        if found:
            return _clip(found[0] if pattern is meaning[0] else found[-1], limit)
    rest = [line for line in lines if not progress.match(line)]
    return _clip(rest[-1], limit) if rest else ""


def _clip(line: str, limit: int) -> str:
    line = line.strip()
    return line if len(line) <= limit else line[: limit - 1] + "…"


_MISSING = regexes.compile(r"command not found|: not found\b|is not recognized as|executable file not found", re.I)
_NO_MODULE = regexes.compile(r"No module named ['\"]?([\w.]+)")


def tool_missing(command: str, code: Any, error: str) -> bool:
    """Whether a failed command failed because the tool it runs is not installed (exit 127, "command not
    found", `python -m pyflakes` saying "No module named pyflakes"): that says nothing of the code."""
    if code == 127 or _MISSING.search(error):
        return True
    named = _NO_MODULE.search(error)
    if named is None:
        return False
    words = _words(command)
    module = words[words.index("-m") + 1] if "-m" in words[:-1] else (words[0].rsplit("/", 1)[-1] if words else "")
    return named.group(1).split(".")[0] == module.split(".")[0]


_GIT_COMMIT = regexes.compile(r"^\s*git\s+(?:-c\s+\S+\s+|--?[\w-]+(?:=\S+)?\s+)*commit\b")
_MESSAGE = regexes.compile(r"(?:\s-\w*m\s*|\s--message[= ])\s*(?:\"((?:[^\"\\]|\\.)*)\"|'([^']*)'|(\S+))")


def shown(command: str) -> str:
    """A command as a handoff lists it: a `git [-c ...] commit ... -m "msg"` as `git commit: msg`."""
    if not _GIT_COMMIT.match(command):
        return command
    found = _MESSAGE.search(command)
    if found is None:
        return "git commit"
    message = next(part for part in found.groups() if part is not None)
    return "git commit: " + _clip(message.split("\\n")[0].splitlines()[0] if message.strip() else message, 120)


def fold(checks: dict[str, dict[str, Any]], command: dict[str, Any], turn: int) -> None:
    """Record one command's outcome (`{command, exit, error?}`) in `checks` (key -> outcome), in place:
    it replaces its own check's outcome, and a pass clears the failures it covers. A command whose tool is
    not installed (`tool_missing`) checked nothing: it is not recorded."""
    raw = command.get("command")
    if not isinstance(raw, str) or not raw.strip():
        return
    error = command.get("error")
    if command.get("exit") not in (0, None) and tool_missing(
        raw, command.get("exit"), error if isinstance(error, str) else ""
    ):
        return
    key = check_key(raw)
    code = command.get("exit")
    if code == 0:
        for other in [k for k, v in checks.items() if v.get("exit") not in (0,) and covers(key, k)]:
            del checks[other]
    checks.pop(key, None)
    outcome: dict[str, Any] = {"command": raw, "exit": code, "turn": turn, "test": is_test_command(raw)}
    if code and isinstance(command.get("error"), str) and command["error"]:
        outcome["error"] = command["error"]
    checks[key] = outcome
    while len(checks) > MAX_CHECKS:
        del checks[next(iter(checks))]


def failing(checks: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [outcome for outcome in checks.values() if outcome.get("exit") != 0]


def targets_of(command: str) -> list[str]:
    """The paths a test command names (its targets, without `::node` parts)."""
    key = check_key(command)
    _, bar, scope = key.partition("|")
    if not bar or not scope:
        return []
    return list(dict.fromkeys(target.split("::")[0] for target in scope.split(",")))
