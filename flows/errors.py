"""Errors a user can fix. The CLI prints them as one line and exits with status 2."""

from __future__ import annotations

from attnlab.errors import UserError

__all__ = ["TrackingUnavailable", "UserError"]


class TrackingUnavailable(UserError):
    """The MLflow tracking store cannot be reached."""
