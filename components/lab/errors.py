"""Errors a user can fix. The CLI prints them as one line and exits with status 2."""

from __future__ import annotations


class UserError(Exception):
    """A mistake in what the user asked for (a value, a file, a missing model); the message says
    what is wrong and what is allowed."""
