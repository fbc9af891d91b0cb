"""Models: plugins assembled into one seq2seq model, decoded, saved and loaded.

``assembly`` (task + encoder + decoder + scorer -> model), ``decode`` (greedy and beam search),
``predict`` (raw strings in, predictions and attention out), ``bundle`` (a model on disk),
``uri`` (what ``--model`` may name), ``cpu_settings`` (process-wide CPU settings).

May import: :mod:`attnlab.data`, :mod:`attnlab.lab`, :mod:`attnlab.plugins`. Nothing from MLflow
or Prefect.
"""
