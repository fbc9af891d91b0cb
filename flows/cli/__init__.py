"""The ``attnlab`` command (Typer): ``app`` builds it; one module per command group (``train``,
``predict``, ``sweep``, ``runs``, ``service``, ``store``, ``plugins``); ``support`` holds what
they share (one-line user errors, quiet logs), ``options`` the flags.

May import: the flows, :mod:`attnlab.flows.tracking`, :mod:`attnlab.flows.services` and the core.
"""
