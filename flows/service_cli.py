"""Placeholder: commands are added here."""


def register(app) -> None:
    """Add this module's commands to the ``attnlab`` app."""
