"""The sweep flow: one train pipeline per combination of plugins and seed, run concurrently on a
task runner, all linked to one MLflow parent run that ends up holding the comparison.

Each combination is a Prefect task (``train-combination``) that runs the train flow as a subflow
in whichever process or Dask worker the runner picks; its MLflow run is linked to the parent
explicitly (``mlflow.parentRunId``: runs started elsewhere do not inherit an active run). A
failed combination is reported, the others go on; at the end the parent run gets the comparison
tables and figures and ends FINISHED, or FAILED when some combination failed.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.futures import PrefectFuture

from attnlab.evaluation.compare import Grid, grid_configs
from attnlab.flows.run import model_steps
from attnlab.flows.run.flow_runs import ending_status, interrupt_alone, is_interrupt
from attnlab.flows.run.run_closing import no_sigint
from attnlab.flows.services import prefect_watch
from attnlab.flows.sweep import sweep_parent
from attnlab.flows.sweep.sweep_inputs import SharedInputs, shared_inputs
from attnlab.flows.sweep.sweep_jobs import Submit, run_all
from attnlab.flows.sweep.sweep_significance import log_marks
from attnlab.flows.sweep.worker_pool import stop_workers
from attnlab.flows.tracking import runs as tracking
from attnlab.flows.tracking import store
from attnlab.flows.tracking.errors import RunFault
from attnlab.flows.tracking.sweep_reruns import child_runs, end_child, settle_children
from attnlab.flows.tracking.sweep_resume import job_keys, record_finished, reused_outcomes
from attnlab.lab.config import ExperimentConfig
from attnlab.lab.names import experiment_name
from attnlab.ops.promotion import BENCHMARK_SIZE
from attnlab.ops.sweep_attempts import stopped_sweep_line
from mlflow import MlflowClient


@task(name="train-combination", cache_policy=NO_CACHE)
def train_combination(
    config: ExperimentConfig,
    experiment: str,
    parent_run_id: str,
    probe: list[str] | None,
    threads: int | None,
    name: str,
    register_models: bool = False,
    log_models: bool = False,
    compare: list[str] | None = None,
    probe_gold: list[list[int]] | None = None,
    example_plots: bool = False,
    key: str | None = None,
) -> dict[str, Any]:
    """Train one combination (the train flow, as a subflow; logged, its model logged when
    ``log_models``, registered and promoted by the one rule when ``register_models``); its summary,
    also kept with the run under its ``key`` for a resumed sweep (:mod:`attnlab.ops.sweep_resume`).

    ``threads`` caps torch's threads in this worker (None: torch's default); ``compare`` are the
    sources of the sweep's explorer page, whose views the summary returns (``compared``);
    ``probe_gold`` the gold alignment of ``probe`` (drawn from one seed's data, it is not in
    every run's test split); ``example_plots``: also draw the heatmaps of the run's picked test
    examples (else the probe's only)."""
    # Imported here: a task shipped to a worker process is pickled by value, and the flow it
    # refers to would arrive without the module globals its parameter annotations name.
    from attnlab.flows.run.train_flow import train_flow

    if threads:
        import torch

        torch.set_num_threads(threads)
    child = train_flow.with_options(flow_run_name=name)
    with prefect_watch.watching():  # a worker process notices a lost server itself, at its next step
        summary = interrupt_alone(
            lambda: child(
                config=config,
                experiment=experiment,
                register_model=register_models,
                parent_run_id=parent_run_id,
                probe=probe,
                probe_gold=probe_gold,
                command="sweep",
                compare=compare,
                log_model=log_models,
                example_plots=example_plots,
            )
        )
    if key is not None:
        record_finished(MlflowClient(), summary["run_id"], key, summary)
    return summary


def _submitter(
    experiment: str, parent_run_id: str, shown: SharedInputs, threads: int | None, register_models: bool, log_models: bool,
    example_plots: bool,
) -> Submit:  # fmt: skip
    """Submits one run of the sweep (label, config, resume key) as a ``train-combination`` task;
    its future. ``shown``: the sweep's shared inputs (:func:`attnlab.flows.sweep.sweep_inputs.shared_inputs`)."""

    def submit(label: str, config: ExperimentConfig, key: str | None) -> PrefectFuture[dict[str, Any]]:
        name = f"{label.replace('/', '-')}-seed{config.seed}"
        probe, probe_gold = shown.probes.get(config.task, (None, None))
        return train_combination.with_options(task_run_name=f"train-{name}").submit(
            config, experiment, parent_run_id, probe, threads, name, register_models, log_models,
            compare=shown.compares.get(config.task), probe_gold=probe_gold, example_plots=example_plots, key=key,
        )  # fmt: skip

    return submit


def _draw_benchmarks(configs: list[ExperimentConfig], experiment: str) -> dict[str, tuple[str, list[str]]]:
    """Each registered model's benchmark, drawn now if it has none (from its first config, as its
    first promotion would): registered model name -> its digest and keys. A run registered there
    leaves those examples out of its data, so every run of the sweep must see the same benchmark:
    drawn by the first promotion instead, the runs that started before it would test on other
    splits than the runs after it, and their arms could not be paired."""
    firsts = {config.registered_model(): config for config in configs}
    with tempfile.TemporaryDirectory(prefix="attnlab-benchmark-") as folder:
        return {
            name: model_steps.excluded_keys(model_steps.prepare_benchmark(config, experiment, BENCHMARK_SIZE, Path(folder)), config)
            for name, config in firsts.items()
        }


@flow(name="attnlab-sweep", description="Train every combination of plugins and seeds; compare them in one MLflow parent run.")
def sweep_flow(
    base: ExperimentConfig,
    grid: dict[str, list[str]],
    seeds: list[int],
    experiment: str | None = None,
    max_parallel: int = 2,
    threads: int | None = None,
    bands: list[tuple[int, int]] | None = None,
    register_models: bool = False,
    log_models: bool = False,
    example_plots: bool = False,
    resume: bool = False,
) -> dict[str, Any]:
    """Run the sweep; its summary (JSON-ready): parent run, comparison table, runs, plots and,
    when ``register_models``, each registered run's promotion decision (``promotions``).

    ``grid`` maps dimensions (task, scorer, encoder, decoder) to plugin names; ``bands`` are
    inclusive source-length ranges whose exact match is tabulated (e.g. ``[(21, 40)]``). Runs log
    their model only when ``log_models`` or ``register_models`` (a model is 0.9 MB at the default
    size and 2-3 s of logging per run), and draw the heatmaps of their picked test examples only
    when ``example_plots`` (each draws its probe's; 0.2-0.3 s a figure). With ``resume``, a run
    whose config and data a finished run of an earlier sweep in the experiment had is not trained
    again: that run's outcome is compared (``reused`` counts them).
    """
    grid_ = Grid({dim: tuple(values) for dim, values in grid.items()}, tuple(seeds))
    bands = [(low, high) for low, high in bands or []]
    experiment = experiment or experiment_name(base.task if len(grid_.values.get("task", ())) <= 1 else "sweeps")
    configs = grid_configs(base, grid_)
    jobs = [(grid_.label(config), config, key) for config, key in zip(configs, job_keys(configs))]
    labels = list(dict.fromkeys(label for label, _, _ in jobs))
    store.check_store(store.use_store())
    client = MlflowClient()
    parent_run_id = sweep_parent.start_parent(client, experiment, base, grid_, bands)
    workdir = Path(tempfile.mkdtemp(prefix="attnlab-sweep-"))
    todo = list(range(len(jobs)))
    try:
        shown = shared_inputs(configs, _draw_benchmarks(configs, experiment) if register_models else None)
        reused = reused_outcomes(client, experiment, jobs) if resume else {}
        sweep_parent.note_reused(client, parent_run_id, len(reused), len(jobs))
        todo = [index for index in range(len(jobs)) if index not in reused]
        submit = _submitter(experiment, parent_run_id, shown, threads, register_models, log_models, example_plots)
        trained = run_all(submit, [jobs[i] for i in todo], max(1, max_parallel), parent_run_id)
        results = [{**reused, **dict(zip(todo, trained))}[index] for index in range(len(jobs))]
        settle_children(client, parent_run_id)  # a lost worker's run ends FAILED, its rerun linked
        comparison = sweep_parent.log_comparison(client, parent_run_id, results, labels, bands, shown.train_max, workdir)
        log_marks(client, parent_run_id, results, labels, comparison)  # each arm against the best, seeds pooled
        # After log_comparison, which uploads all of workdir as plots/.
        comparison["explorer"] = sweep_parent.log_explorer(
            client, parent_run_id, results, shown.shared, shown.data_seeds, len(grid_.seeds), workdir / "attention", shown.references
        )
    except BaseException as exc:
        told = _abandon(client, parent_run_id, exc, len(todo))
        if told is None:
            raise
        raise told from exc
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    failed = sum(result["status"] != "FINISHED" for result in results)
    if failed:
        tracking.end_run(client, parent_run_id, "FAILED", error=f"{failed} of {len(results)} combinations failed")
    else:
        tracking.end_run(client, parent_run_id, "FINISHED")
    return {
        "parent_run_id": parent_run_id,
        "experiment": experiment,
        "tracking_uri": store.resolve_store().tracking_uri,
        "combinations": len(labels),
        "run_count": len(results),
        "failed": failed,
        "reused": sum(bool(result.get("reused")) for result in results),
        **comparison,
        "promotions": [_promotion(result) for result in results if result["status"] == "FINISHED" and register_models],
    }


def _abandon(client: MlflowClient, parent_run_id: str, exc: BaseException, total: int) -> Exception | None:
    """End a sweep of ``total`` runs to train that ``exc`` stopped: its workers stopped (for an
    interrupt or a lost Prefect server), its running child runs KILLED (FAILED, saying so, when
    Prefect's server was lost), the parent run FAILED or KILLED. The one-line error to raise in
    place of ``exc`` (RunFault, after a lost Prefect server), or None to raise ``exc``. A second
    Ctrl-C meanwhile is ignored: it would leave runs RUNNING and workers behind."""
    with no_sigint():
        lost = prefect_watch.lost()
        if is_interrupt(exc) or lost is not None:
            stop_workers()
        if lost is None or is_interrupt(exc):
            for run in child_runs(client, parent_run_id, "RUNNING"):
                client.set_terminated(run.info.run_id, "KILLED")
            tracking.end_run(client, parent_run_id, ending_status(exc), error=f"{type(exc).__name__}: {exc}")
            return None
        why = str(exc) if isinstance(exc, prefect_watch.PrefectLost) else f"lost Prefect's API server ({lost})"
        for run in child_runs(client, parent_run_id, "RUNNING"):
            end_child(client, parent_run_id, run, "FAILED", why, prefect=False)
        tracking.end_run(client, parent_run_id, "FAILED", error=why)
        statuses = [run.info.status for run in child_runs(client, parent_run_id)]
        return RunFault(stopped_sweep_line(why, parent_run_id, statuses, total))


def _promotion(result: dict[str, Any]) -> dict[str, Any]:
    """What the sweep reports of one registered run's promotion."""
    model = result["summary"]["model"]
    decision = model["decision"]
    return {
        "label": result["label"],
        "seed": result["seed"],
        "model": model["name"],
        "version": model["version"],
        **{k: decision[k] for k in ("promoted", "reason")},
    }
