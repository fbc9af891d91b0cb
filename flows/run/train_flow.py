"""The train flow: generate data -> train -> evaluate -> plot attention -> log and register.

One MLflow run per flow run. The run ends FINISHED, FAILED (an error) or KILLED (Ctrl-C or a
termination signal) and keeps what it logged; when interrupted it also gets the last checkpoint
as an artifact. When the tracking server is lost the run cannot be ended: the flow stops with
:class:`~attnlab.flows.tracking.errors.TrackingLost` (one line naming the server and where the last
checkpoint is kept on local disk), and the next train flow against that store ends the run
FAILED, as it ends every run left RUNNING by a process that is gone (SIGKILL, a crash). The
champion alias moves only after a successful run, and only by the one promotion rule
(:mod:`attnlab.ops.promotion`): challenger and champion scored on the registered model's benchmark
set. The steps: :mod:`attnlab.flows.run.run_steps`; how the run ends: :mod:`attnlab.flows.run.run_closing`.
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from attnlab.flows.run import steps as tasks
from attnlab.flows.run.flow_runs import flow_run_tags
from attnlab.flows.run.resume_run import reopen_run
from attnlab.flows.run.run_closing import tracked_run
from attnlab.flows.run.run_steps import Plan, Promotion, run_steps
from attnlab.flows.tracking import store
from attnlab.lab.config import ExperimentConfig
from attnlab.ops.promotion import BENCHMARK_SIZE, DEFAULT_MARGIN
from attnlab.training.timing import Stopwatch
from mlflow import MlflowClient


@flow(
    name="attnlab-train",
    description="Train, evaluate and plot one attention model; log it to MLflow and register it.",
)
def train_flow(
    config: ExperimentConfig = ExperimentConfig(),
    experiment: str | None = None,
    register_model: bool = True,
    promote: bool = True,
    parent_run_id: str | None = None,
    probe: list[str] | None = None,
    probe_gold: list[list[int]] | None = None,
    margin: float = DEFAULT_MARGIN,
    benchmark_size: int = BENCHMARK_SIZE,
    command: str = "train",
    compare: list[str] | None = None,
    log_model: bool = True,
    example_plots: bool = True,
    resume_run_id: str | None = None,
    run_tags: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run one experiment end to end and return its summary (JSON-ready).

    ``experiment`` defaults to the registered model's name (``config.registered_model()``:
    ``attnlab-<task>``, or ``attnlab-<task>-<file name>`` for a task reading a file). The model is
    logged to the run and, when ``register_model``, registered under that name; ``promote`` then scores it and the
    champion on the registered model's benchmark (``benchmark_size`` examples drawn by the first
    promotion) and gives it the alias when it wins by more than ``margin``. ``parent_run_id``
    makes the run a child of that MLflow run, which then holds its data splits (once per distinct
    data set, see :func:`attnlab.flows.tracking.run_data.log_dataset`). ``probe`` is a ``[source, target]``
    pair plotted first, its attention returned as ``probe``; ``probe_gold`` its gold alignment, for
    a probe that is not in this run's test split (a sweep draws one probe from one seed's data).
    ``compare`` are sources whose explorer examples (:func:`attnlab.viz.explorer_data.model_views`) the
    summary returns as ``compared`` (a sweep's parent page shows every run on the same inputs).
    ``command`` names the promoting command in the decision's records. ``log_model=False`` (a sweep run by default) logs no model unless it is
    registered: the run keeps its metrics, tables and figures; ``model.uri`` is then None.
    ``example_plots=False`` (a sweep run by default) draws the probe's heatmap only, not those of
    the test examples picked by :func:`attnlab.data.examples.pick_examples` (``explorer.html`` shows
    every test example's attention either way). ``resume_run_id`` continues that stopped run
    (``config`` must be its own) from its checkpoint after its last finished epoch
    (:mod:`attnlab.flows.run.resume_run`) instead of starting a new run. ``run_tags`` are added to the
    run's tags (a tuned trial's study and number).
    """
    experiment = experiment or config.registered_model()
    tags = {**flow_run_tags(), **(run_tags or {}), **({"mlflow.parentRunId": parent_run_id} if parent_run_id else {})}
    watch = Stopwatch()
    with watch("start_run"):
        if resume_run_id is None:
            run_id = tasks.start_run(config, experiment, tags)
        else:
            store.use_store()
            run_id = reopen_run(MlflowClient(), resume_run_id, tags)
    how = Promotion(margin, benchmark_size, experiment, command) if register_model and promote else None
    plan = Plan(register_model, how, probe, probe_gold, compare, log_model, parent_run_id, example_plots)
    summary = tracked_run(run_id, lambda workdir, artifacts: run_steps(config, run_id, workdir, watch, plan, artifacts))
    return {
        "run_id": run_id,
        "experiment": experiment,
        "tracking_uri": store.resolve_store().tracking_uri,
        "status": "FINISHED",
        **summary,
        "prefect_flow_run_id": tags["prefect.flow_run_id"],
        "step_seconds": watch.rounded(),
    }
