"""What a run is checked for before anything starts (before Prefect or MLflow): its plugins load
and take their options, its task can give the data sizes asked, its experiment name is a safe
folder name and its device is on this machine. Each mistake is a
:class:`~attnlab.lab.errors.UserError` of one line; ``attnlab train``, ``sweep`` and ``schedule``
and the Python API (:func:`attnlab.flows.api.train`) ask the same checks.
"""

from __future__ import annotations

from collections.abc import Callable

from attnlab.lab.config import ExperimentConfig, device_problem
from attnlab.lab.errors import UserError
from attnlab.lab.names import check_name


def check_config(config: ExperimentConfig, say: Callable[[str], None], benchmark_size: int | None = None) -> tuple[int, int, int]:
    """Fail fast on unknown plugins, options they refuse and data sizes the task cannot provide
    (with ``benchmark_size``, beside a registered model's benchmark of that many examples too);
    the (train, validation, test) sizes the run will have. A task whose data takes a while to
    read says that it goes on through ``say`` (:func:`attnlab.training.phase_lines.phase_lines`)."""
    from attnlab.data.splits import check_benchmark_room, check_sizes, split_sizes
    from attnlab.model.assembly import build_model  # torch, before the data is read
    from attnlab.model.task_choice import build_tasks
    from attnlab.training.phase_lines import phase_lines

    with phase_lines("check", say):
        task, test_task = build_tasks(config)
    build_model(config, task)
    try:
        sizes = split_sizes(task, (config.train_size, config.validation_size, config.test_size))
        check_sizes(task, sizes, test_task)
        if benchmark_size is not None:
            check_benchmark_room(task, sizes, benchmark_size, test_task)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    return sizes


def check_start(config: ExperimentConfig, experiment: str | None, device: bool = True) -> None:
    """What cannot be told from the config alone: an experiment name that is not a safe folder
    name and (with ``device``) a device this machine lacks."""
    import torch

    if experiment is not None:
        check_name(experiment)
    problem = device_problem(config.device, torch.cuda.device_count()) if device else None
    if problem:
        raise UserError(problem)


def check_benchmark_fits(config: ExperimentConfig, benchmark_size: int) -> None:
    """Refuse in one line (:class:`~attnlab.data.splits.SplitsUnavailable`) a registered run
    whose task cannot give its registered model's benchmark of ``benchmark_size`` distinct
    examples beside its splits (:func:`~attnlab.data.splits.check_benchmark_room`): before it
    trains, not at its promotion after training."""
    from attnlab.data.splits import check_benchmark_room, split_sizes
    from attnlab.model.task_choice import build_tasks

    task, test_task = build_tasks(config)
    check_benchmark_room(task, split_sizes(task, (config.train_size, config.validation_size, config.test_size)), benchmark_size, test_task)
