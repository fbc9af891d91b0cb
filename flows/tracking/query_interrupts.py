"""SQLAlchemy's reports of a store query that an interrupt cut into, kept off the terminal.

A Ctrl-C or SIGTERM that lands while MLflow reads the store unwinds through SQLAlchemy, which
closes the cursor on the way out. When that fails too, SQLAlchemy's pool logs it at ERROR with a
traceback ("Error closing cursor"), and the root handler that Prefect sets up prints it under
the command's own one line about the interrupt. A pool logs errors only for such cleanup (closing
a cursor, resetting or closing a connection); the failure that caused it is raised, not logged.
"""

from __future__ import annotations

import logging


def note_interrupt() -> None:
    """This process is being interrupted (attnlab's Ctrl-C and SIGTERM handlers call this before
    they raise): from now on SQLAlchemy's pools print nothing. Their loggers, one per pool class
    and made when a pool is, take their level from this parent."""
    logging.getLogger("sqlalchemy.pool").setLevel(logging.CRITICAL)
