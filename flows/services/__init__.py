"""Server processes: Prefect's temporary API server (``prefect_server``) and its watch
(``prefect_watch``), local servers as child processes in their own process group (``servers``,
``server_child``).

May import: the core, Prefect and the standard library; not :mod:`attnlab.flows.tracking` nor the
flows above it.
"""
