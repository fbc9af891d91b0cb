"""Data: examples drawn from a task, split by value, encoded into padded tensors.

``vocab`` (character vocabularies, padding), ``splits`` (train/validation/test by value, tensors),
``datasets`` (a generated dataset as a file), ``cache`` (the cache folder), ``sources`` (raw inputs
checked against a task), ``examples`` (which examples are shown).

May import: :mod:`attnlab.lab` and :mod:`attnlab.plugins`. Nothing from MLflow or Prefect.
"""
