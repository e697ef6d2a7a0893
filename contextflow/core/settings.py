"""Settings read from the environment, with ContextFlowMCP's variable names where it had one.

`VARIABLES` names every variable contextflow reads (a test checks no other is read, and that only this
module reads them). `Settings` is their typed value, parsed once per environment (`read`: the same
mapping's values give the same object), and completed when a store opens with what needs the store
(the default project, the active-session file: `project.settings_for`). Everything reads the fields:
the store's location, the state folder, hooks, capture, the server's inbound limits, the HTTP
bridge's tokens, the ranking.

Reading never fails: a value that is not understood keeps its default and is kept in `problems`, and
the code that uses it refuses it with `refuse` (the store's settings when it opens, the inbound limits
when the server starts), so a bad value stops only what needs it. Light to import: hooks read it on
every prompt (a NamedTuple, no dataclass, with real annotations: no `from __future__ import annotations`,
which would make the class slower to build).
"""

import os
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from contextflow.core.errors import InputError

# every variable contextflow reads, and what it sets (README's "Settings" documents them for users)
VARIABLES = {
    "CONTEXTFLOW_STORE": "the store folder (the CLI's --store overrides it)",
    "CTX_DB": "seed 003's (ctx's) name for the store, read when CONTEXTFLOW_STORE is not set",
    "CONTEXTFLOW_STORE_FROM_OPTION": "set by the CLI beside CONTEXTFLOW_STORE when --store chose it (for doctor)",
    "CONTEXTFLOW_STATE": "the machine-local state folder",
    "CONTEXTFLOW_WRITER": "this machine's writer id",
    "CONTEXTFLOW_FSYNC": "flush every append to disk (on/off)",
    "CONTEXTFLOW_SECRETS": "what a write holding a secret does: redact, refuse or off",
    "CONTEXTFLOW_RANKING": "search ranking levers turned off or on, and the weight scale",
    "CONTEXTFLOW_TOOLS": "the MCP tool groups offered",
    "CONTEXTFLOW_CAPTURE": "session capture on or off",
    "CONTEXTFLOW_CLIENT": "which client a hook runs for (install writes it)",
    "CONTEXTFLOW_VIA": "set by the hooks of the Claude Code plugin or Gemini CLI extension (install's go first)",
    "CONTEXTFLOW_COMMAND": "the contextflow command the plugin, extension and OpenCode plugin run (else PATH)",
    "CONTEXTFLOW_HOOK_BUDGET": "tokens the session-start hook may inject",
    "CONTEXTFLOW_FORMAT": "the output format of hook-level commands (text or json)",
    "CONTEXTFLOW_HTTP_TOKEN": "the HTTP bridge's one token",
    "CONTEXTFLOW_HTTP_TOKENS": "the HTTP bridge's grants, as JSON",
    "CONTEXTFLOW_HTTP_TOKENS_FILE": "the HTTP bridge's grants, in a file",
    "MCP_SHARED_CONTEXT_FILE": "ContextFlowMCP's context file",
    "MCP_SHARED_CONTEXT_FOLDER": "ContextFlowMCP's context folder",
    "MCP_SHARED_CONTEXT_PROJECT": "the default project",
    "MCP_SHARED_CONTEXT_ACTIVE_SESSION": "the active session, fixed",
    "MCP_SHARED_CONTEXT_ACTIVE_SESSION_FILE": "where the active session is kept",
    "MCP_SHARED_CONTEXT_NEW_SESSION_PREFIX": "the prefix of new session ids",
    "MCP_SHARED_CONTEXT_MAX_NOTE_TEXT_CHARS": "the longest note",
    "MCP_SHARED_CONTEXT_MAX_HANDOFF_SUMMARY_CHARS": "the longest handoff summary",
    "MCP_SHARED_CONTEXT_MAX_ARRAY_ITEMS": "the most items of a list argument",
    "MCP_SHARED_CONTEXT_MAX_ARRAY_ITEM_CHARS": "the longest item of a list argument",
    "MCP_SHARED_CONTEXT_MAX_CONTEXT_FILE_BYTES": "the largest ContextFlowMCP file read",
    "MCP_SHARED_CONTEXT_MAX_INBOUND_LINE_BYTES": "the longest stdin line the server reads",
    "MCP_SHARED_CONTEXT_MAX_INPUT_BUFFER_BYTES": "the most stdin the server buffers",
}
# CONTEXTFLOW_COMMAND and CONTEXTFLOW_FORMAT are read by the client packages' own scripts, not here.
SECRETS_VARIABLE = "CONTEXTFLOW_SECRETS"
SECRETS_MODES = ("redact", "refuse", "off")
RANKING_VARIABLE = "CONTEXTFLOW_RANKING"
STORE_OPTION_MARKER = "CONTEXTFLOW_STORE_FROM_OPTION"
LEGACY_MAX_BYTES = 50 * 1024 * 1024  # ContextFlowMCP's default for MCP_SHARED_CONTEXT_MAX_CONTEXT_FILE_BYTES
MAX_LINE_BYTES = 128 * 1024 * 1024  # ContextFlowMCP's inbound limits: the longest stdin line
MAX_BUFFER_BYTES = 256 * 1024 * 1024  # and the most stdin buffered
INBOUND = ("MCP_SHARED_CONTEXT_MAX_INBOUND_LINE_BYTES", "MCP_SHARED_CONTEXT_MAX_INPUT_BUFFER_BYTES")
HOOK_BUDGET = 2_250  # tokens the session start injects, about 9,000 characters: see session_start.CLIENT_LIMIT_CHARS
MAX_PROJECT_CHARS = 200
MAX_HOOK_BUDGET = 2_000_000  # graph.model.MAX_BUDGET, copied so a hook need not import the graph (a test checks)
LENIENT = ("CONTEXTFLOW_HOOK_BUDGET", "CONTEXTFLOW_CAPTURE")  # hooks never fail: not understood, the default holds
_RULE_DEFAULT, _DEFAULT_PROJECT = "default", "shared"  # core.project's (asserted equal by a test)


class Settings(NamedTuple):
    # where the store is (core/locate.py); a path as written, None when unset or blank
    store: str | None = None  # CONTEXTFLOW_STORE
    store_from_option: str | None = None  # CONTEXTFLOW_STORE_FROM_OPTION: the --store the CLI was given
    ctx_db: str | None = None  # CTX_DB
    legacy_file: str | None = None  # MCP_SHARED_CONTEXT_FILE
    legacy_folder: str | None = None  # MCP_SHARED_CONTEXT_FOLDER
    legacy_max_bytes: int = LEGACY_MAX_BYTES  # MCP_SHARED_CONTEXT_MAX_CONTEXT_FILE_BYTES
    state: str | None = None  # CONTEXTFLOW_STATE
    writer: str | None = None  # CONTEXTFLOW_WRITER (checked when used: core.locate.validate_writer)
    fsync: bool = False  # CONTEXTFLOW_FSYNC
    secrets: str = "redact"  # CONTEXTFLOW_SECRETS
    ranking: str = ""  # CONTEXTFLOW_RANKING, as written (search.ranking parses it)
    tool_groups: str = "default"  # CONTEXTFLOW_TOOLS
    # hooks and capture
    capture: bool | None = None  # CONTEXTFLOW_CAPTURE: False turns capture off; None: unset or not understood
    client: str | None = None  # CONTEXTFLOW_CLIENT
    via: str | None = None  # CONTEXTFLOW_VIA
    hook_budget: int = HOOK_BUDGET  # CONTEXTFLOW_HOOK_BUDGET: from 200 to MAX_HOOK_BUDGET
    # the server
    inbound_line_bytes: int = MAX_LINE_BYTES
    inbound_buffer_bytes: int = MAX_BUFFER_BYTES
    http_token: str | None = None  # CONTEXTFLOW_HTTP_TOKEN, as written
    http_tokens: str | None = None  # CONTEXTFLOW_HTTP_TOKENS
    http_tokens_file: str | None = None  # CONTEXTFLOW_HTTP_TOKENS_FILE
    # sessions (ContextFlowMCP's)
    named_project: str | None = None  # MCP_SHARED_CONTEXT_PROJECT
    new_session_prefix: str = "session"
    active_session: str | None = None
    active_session_path: str | None = None  # MCP_SHARED_CONTEXT_ACTIVE_SESSION_FILE, as written
    active_session_file: Path | None = None  # that file, else (App.open) the state folder's or ContextFlowMCP's
    max_note_chars: int = 20_000
    max_summary_chars: int = 20_000
    max_array_items: int = 200
    max_array_item_chars: int = 1_000
    # resolved by App.open: the project of the working folder (core/project.py) and the rule that chose it
    default_project: str = _DEFAULT_PROJECT
    project_rule: str = _RULE_DEFAULT
    problems: tuple[tuple[str, str], ...] = ()  # (variable, what is wrong with its value) for each not understood

    def refuse(self, *names: str) -> None:
        """An InputError for the first variable among `names` (when none is named, all but the server's
        inbound limits and the LENIENT ones) whose value was not understood."""
        for name, message in self.problems:
            if name in names or (not names and name not in INBOUND + LENIENT):
                raise InputError(message)


_parsed: dict[tuple[str | None, ...], Settings] = {}
_resolved: list[Settings] = []


def read(env: Mapping[str, str] | None = None) -> Settings:
    """The settings of `env` (the process's environment when None), parsed once per set of values."""
    env = os.environ if env is None else env
    key = tuple(env.get(name) for name in VARIABLES)
    found = _parsed.get(key)
    if found is None:
        if len(_parsed) > 64:  # tests open many environments; a process has one or two
            _parsed.clear()
        found = _parsed[key] = _parse(dict(zip(VARIABLES, key, strict=True)))
    return found


def _parse(values: dict[str, str | None]) -> Settings:
    problems: list[tuple[str, str]] = []

    def not_understood(name: str, raw: str, how: str) -> None:
        problems.append((name, f"{name}={raw!r} {how}"))

    def text(name: str) -> str | None:
        """The value as written, None when unset or blank."""
        raw = values[name]
        return raw if raw is not None and raw.strip() else None

    def stripped(name: str) -> str | None:
        raw = text(name)
        return raw.strip() if raw is not None else None

    def positive(name: str, default: int, unit: str = "") -> int:
        raw = stripped(name)
        if raw is None:
            return default
        if unit:  # ContextFlowMCP's byte limits, worded as it words them
            if raw.isdigit() and int(raw) >= 1:
                return int(raw)
            not_understood(name, raw, f"is not a positive whole number of {unit} ({default} if unset)")
            return default
        try:
            value = int(raw)
        except ValueError:
            not_understood(name, raw, "is not a whole number; set it to a positive integer")
            return default
        if value < 1:
            not_understood(name, raw, "must be a positive integer")
            return default
        return value

    def yes_no(name: str, how: str, default: str = "") -> bool | None:
        """A yes/no word (None when unset), else `how` says what to write."""
        raw = (values[name] or default).strip().lower()
        if not raw or raw == "off":  # the common cases, without importing the checks
            return None if not raw else False
        from contextflow.core.checks import flag

        chosen = flag(raw)
        if chosen is None:
            not_understood(name, raw, how)
        return chosen

    def secrets() -> str:
        value = (values[SECRETS_VARIABLE] or "").strip().lower() or "redact"
        if value in ("0", "no", "false", "none"):
            value = "off"
        if value in SECRETS_MODES:
            return value
        not_understood(SECRETS_VARIABLE, value, "is not understood: use redact (default), refuse or off")
        return "redact"

    def project() -> str | None:
        raw = stripped("MCP_SHARED_CONTEXT_PROJECT")
        if raw is None:
            return None
        named = clean_name(raw)
        if named is None:
            problems.append(
                (
                    "MCP_SHARED_CONTEXT_PROJECT",
                    f"MCP_SHARED_CONTEXT_PROJECT holds a control character or is over 200 characters: {raw[:60]!r}; "
                    "set it to a plain name such as owner/repo",
                )
            )
        return named

    def hook_budget() -> int:
        raw = stripped("CONTEXTFLOW_HOOK_BUDGET")
        if raw is None or (raw.isdigit() and 200 <= int(raw) <= MAX_HOOK_BUDGET):
            return int(raw) if raw else HOOK_BUDGET
        how = f"is not a whole number of tokens from 200 to {MAX_HOOK_BUDGET}, so the session-start hook ignores it"
        not_understood("CONTEXTFLOW_HOOK_BUDGET", raw, f"{how} and uses {HOOK_BUDGET}; set it to e.g. 2250")
        return HOOK_BUDGET

    return Settings(
        store=text("CONTEXTFLOW_STORE"),
        store_from_option=values[STORE_OPTION_MARKER],
        ctx_db=text("CTX_DB"),
        legacy_file=text("MCP_SHARED_CONTEXT_FILE"),
        legacy_folder=text("MCP_SHARED_CONTEXT_FOLDER"),
        legacy_max_bytes=positive("MCP_SHARED_CONTEXT_MAX_CONTEXT_FILE_BYTES", LEGACY_MAX_BYTES, "bytes"),
        state=text("CONTEXTFLOW_STATE"),
        writer=stripped("CONTEXTFLOW_WRITER"),
        fsync=bool(yes_no("CONTEXTFLOW_FSYNC", "is not understood: use 'on' or 'off'", "off")),
        secrets=secrets(),
        ranking=values[RANKING_VARIABLE] or "",
        tool_groups=stripped("CONTEXTFLOW_TOOLS") or "default",
        hook_budget=hook_budget(),
        capture=yes_no(
            "CONTEXTFLOW_CAPTURE",
            "is not understood (capture stays on): use off to turn capture off, on (or unset) to keep it",
        ),
        client=stripped("CONTEXTFLOW_CLIENT"),
        via=stripped("CONTEXTFLOW_VIA"),
        inbound_line_bytes=positive(INBOUND[0], MAX_LINE_BYTES, "bytes"),
        inbound_buffer_bytes=positive(INBOUND[1], MAX_BUFFER_BYTES, "bytes"),
        http_token=values["CONTEXTFLOW_HTTP_TOKEN"] or None,
        http_tokens=stripped("CONTEXTFLOW_HTTP_TOKENS"),
        http_tokens_file=stripped("CONTEXTFLOW_HTTP_TOKENS_FILE"),
        named_project=project(),
        new_session_prefix=stripped("MCP_SHARED_CONTEXT_NEW_SESSION_PREFIX") or "session",
        active_session=stripped("MCP_SHARED_CONTEXT_ACTIVE_SESSION"),
        active_session_path=stripped("MCP_SHARED_CONTEXT_ACTIVE_SESSION_FILE"),
        max_note_chars=positive("MCP_SHARED_CONTEXT_MAX_NOTE_TEXT_CHARS", 20_000),
        max_summary_chars=positive("MCP_SHARED_CONTEXT_MAX_HANDOFF_SUMMARY_CHARS", 20_000),
        max_array_items=positive("MCP_SHARED_CONTEXT_MAX_ARRAY_ITEMS", 200),
        max_array_item_chars=positive("MCP_SHARED_CONTEXT_MAX_ARRAY_ITEM_CHARS", 1_000),
        problems=tuple(problems),
    )


def clean_name(value: str) -> str | None:
    """`value` as a project name when it is one (checks.name: no control or format character,
    at most MAX_PROJECT_CHARS), else None."""
    from contextflow.core import checks

    try:
        return checks.name(value, "project", MAX_PROJECT_CHARS)
    except InputError:
        return None


def adopt(settings: Settings) -> None:
    """The settings of this process from now on (`App.open` resolves them from the environment it is given)."""
    _resolved[:] = [settings]


def resolved() -> Settings | None:
    """The settings this process resolved, if it opened an App."""
    return _resolved[0] if _resolved else None


def secrets_mode(env: Mapping[str, str]) -> str:
    """`CONTEXTFLOW_SECRETS`: redact (default), refuse or off."""
    settings = read(env)
    settings.refuse(SECRETS_VARIABLE)
    return settings.secrets
