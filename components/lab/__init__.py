"""What a user asks of the lab, checked: the experiment config and where its values come from
(``config``, ``config_sources``), the errors a user can fix (``errors``), names that become folder
and model names (``names``), and the checked options and inputs of the commands
(``output_paths``, ``predict_inputs``, ``sweep_options``, ``service_options``, ``serving``), and a
run as the core reads it: its record and the tags attnlab writes on it (``run_records``), the
parts of its summary (``summaries``, ``run_summary``); and the metric catalogue, each metric
declared once with where it is shown (``metric_catalogue``).

May import: :mod:`attnlab.plugins` only; this is the bottom of the core.
"""
