"""Errors that reach users and agents. Their messages say what was wrong and how to do it right."""

from __future__ import annotations


class ContextflowError(Exception):
    """Base class for every error contextflow raises on purpose."""


class InputError(ContextflowError):
    """The caller's input was wrong; the message tells how to call it right."""


class NotFoundError(InputError):
    """Something named by the caller (a session, an id, a key) does not exist."""


class StoreError(ContextflowError):
    """The store could not be read or written (permissions, full disk, ...)."""


# The CLI's exit codes (documented in README): 0 done, 1 a problem `doctor` reports, 2 bad input
# (as argparse's usage errors), 3 not found, 4 the store could not be read or written.
EXIT_PROBLEMS = 1  # a check ran and found problems (`doctor`)
EXIT_BAD_INPUT, EXIT_NOT_FOUND, EXIT_STORE = 2, 3, 4


def exit_code(error: ContextflowError) -> int:
    """The CLI exit code for an error, the one map from error kinds to codes."""
    if isinstance(error, NotFoundError):
        return EXIT_NOT_FOUND
    if isinstance(error, StoreError):
        return EXIT_STORE
    return EXIT_BAD_INPUT
