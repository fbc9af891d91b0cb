"""Errors a user can fix. The CLI prints them as one line and exits with status 2."""

from __future__ import annotations

from attnlab.errors import UserError

__all__ = ["TrackingLost", "TrackingUnavailable", "UserError"]


class TrackingUnavailable(UserError):
    """The MLflow tracking store cannot be reached."""


class TrackingLost(TrackingUnavailable):
    """The tracking server stopped answering while a run was in progress."""
