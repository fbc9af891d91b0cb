"""Errors a user can fix. The CLI prints them as one line and exits with status 2."""

from __future__ import annotations

from attnlab.lab.errors import UserError

__all__ = ["ArtifactsLost", "ModelUnusable", "RunFault", "TrackingLost", "TrackingUnavailable", "UserError"]


class TrackingUnavailable(UserError):
    """The MLflow tracking store cannot be reached."""


class TrackingLost(TrackingUnavailable):
    """The tracking server stopped answering while a run was in progress."""


class RunFault(UserError):
    """A run stopped on a fault of its surroundings (a full disk, Prefect's server or the store's
    artifacts folder gone); the message is the one line of :func:`attnlab.ops.faults.fault_line`."""


class ModelUnusable(UserError):
    """A stored model that cannot be loaded: its code fails the safety check, or its files are
    gone."""


class ArtifactsLost(Exception):
    """The embedded store's artifacts folder was deleted while a run was writing to it."""
