"""Operating rules, pure and unit-tested, that the flows apply in MLflow and Prefect: promotion,
registry retention, retries, fault diagnosis, stale runs, store locations, sweep reruns, how many
runs train at once and their threads (``sweep_workers``, ``threads``), how often attnlab's own
processes collect garbage (``collector``), the tables of ``attnlab runs`` and what a Dask cluster
needs.

May import: :mod:`attnlab.lab` and the standard library. Nothing from MLflow, Prefect or torch.
"""
