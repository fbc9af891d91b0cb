"""attnlab: an attention lab. The core library (data, vocabularies, models, training,
evaluation, plots) lives in this package's modules; plugins in ``attnlab.plugins``; Prefect flows
and MLflow tracking in ``attnlab.flows``."""

__version__ = "0.1.0"
