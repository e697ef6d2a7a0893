"""Errors that reach users and agents. Their messages say what was wrong and how to do it right."""

from __future__ import annotations

import re
from collections.abc import Callable

from contextflow.core import regexes

# How a message names an argument or an operation, for each adapter to word: `{arg:since_days}` (MCP
# clients read `since_days`, the CLI `--since-days`), `{tool:context_list}` (`context_list`, or
# `contextflow context list`), `{call:context_list}` ("call context_list", or "run `contextflow context list`").
NAMED = regexes.compile(r"\{(arg|tool|call):([A-Za-z_][\w.]*)\}")
Wording = Callable[[str], str]


def arg(name: str) -> str:
    """An argument named in a message (`kinds[2]`, `topics[0].summary`: the argument is the leading name)."""
    head = re.match(r"[A-Za-z_]\w*", name)
    return f"{{arg:{head.group()}}}{name[head.end() :]}" if head else name


def tool(name: str) -> str:
    """An operation named in a message."""
    return f"{{tool:{name}}}"


def call(name: str) -> str:
    """ "call NAME" in a message: an invitation to run an operation."""
    return f"{{call:{name}}}"


def _same(name: str) -> str:
    return name


def _call(name: str) -> str:
    return f"call {name}"


class ContextflowError(Exception):
    """Base class for every error contextflow raises on purpose."""


class InputError(ContextflowError):
    """The caller's input was wrong; the message tells how to call it right.

    The message names arguments and operations with marks (`NAMED`) that each adapter words in its
    own terms (`worded`); `str()` is the MCP wording. `argument` is the argument it is about: the
    first one the message names, unless given."""

    def __init__(self, message: str, argument: str | None = None) -> None:
        self.template = message
        first = next((name for kind, name in NAMED.findall(message) if kind == "arg"), None)
        self.argument = argument or first
        super().__init__(self.worded())

    def worded(self, argument: Wording = _same, tool: Wording = _same, call: Wording = _call) -> str:
        """The message with each name said as `argument`, `tool` and `call` word it."""
        words = {"arg": argument, "tool": tool, "call": call}
        return NAMED.sub(lambda found: words[found.group(1)](found.group(2)), self.template)


class NotFoundError(InputError):
    """Something named by the caller (a session, an id, a key) does not exist."""


class StoreError(ContextflowError):
    """The store could not be read or written (permissions, full disk, ...)."""


class DamagedTables(StoreError):
    """The derived tables were found damaged midway through a read and deleted (the logs stay the truth): the
    read may run again (`Tables.found_damaged`)."""


# The CLI's exit codes (documented in README): 0 done, 1 a problem `doctor` reports, 2 bad input
# (as argparse's usage errors), 3 not found, 4 the store could not be read or written.
EXIT_PROBLEMS = 1  # a check ran and found problems (`doctor`)
EXIT_BAD_INPUT, EXIT_NOT_FOUND, EXIT_STORE = 2, 3, 4
EXIT_CANCELLED = 130  # the user cancelled (Ctrl-C; Esc or q in the picker), as a shell reports SIGINT


def exit_code(error: ContextflowError) -> int:
    """The CLI exit code for an error, the one map from error kinds to codes."""
    if isinstance(error, NotFoundError):
        return EXIT_NOT_FOUND
    if isinstance(error, StoreError):
        return EXIT_STORE
    return EXIT_BAD_INPUT
