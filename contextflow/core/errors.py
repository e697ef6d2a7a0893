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
