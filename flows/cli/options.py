"""The flags that several ``attnlab`` commands share, declared once as ``Annotated`` types.

``attnlab train``, ``attnlab sweep`` and ``attnlab schedule`` build one experiment config from
the same flags (numbers arrive as text and are validated with the config, so a bad one is
reported with its value and what is allowed): :func:`config_command` gives a command those it
takes, in place of its ``source: ConfigSource`` parameter, and hands their values over as one
:class:`ConfigSource`. Other shared flags are types a command's parameter is declared with, e.g.
``verbose: Verbose = False``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

Command = TypeVar("Command", bound=Callable[..., Any])

# --------------------------------------------------------------------------- one plugin each

Task = Annotated[str | None, typer.Option(metavar="NAME", help="task plugin (default: date); see 'attnlab plugins'")]
Scorer = Annotated[str | None, typer.Option(metavar="NAME", help="attention scorer plugin (default: scaled_dot)")]
Encoder = Annotated[str | None, typer.Option(metavar="NAME", help="encoder plugin (default: gru)")]
Decoder = Annotated[str | None, typer.Option(metavar="NAME", help="decoder plugin (default: rnn)")]

# --------------------------------------------------------------------------- a sweep's grid

Tasks = Annotated[str | None, typer.Option("--task", metavar="NAMES", help="task plugin(s), comma-separated (default: date)")]
Scorers = Annotated[str | None, typer.Option("--scorer", metavar="NAMES", help="scorers, e.g. none,dot,additive,multihead")]
Encoders = Annotated[str | None, typer.Option("--encoder", metavar="NAMES", help="encoders, e.g. gru,transformer")]
Decoders = Annotated[str | None, typer.Option("--decoder", metavar="NAMES", help="decoders, e.g. rnn,transformer")]

# --------------------------------------------------------------------------- config values

Epochs = Annotated[str | None, typer.Option(metavar="N", help="most epochs per run (training stops early at the target exact match)")]
Seed = Annotated[str | None, typer.Option(metavar="N", help="seed of data, initialisation and batch order")]
EmbeddingDim = Annotated[str | None, typer.Option(metavar="N", help="embedding size")]
HiddenSize = Annotated[str | None, typer.Option(metavar="N", help="hidden size")]
TrainSize = Annotated[str | None, typer.Option(metavar="N", help="training examples")]
BatchSize = Annotated[str | None, typer.Option(metavar="N", help="batch size")]
LearningRate = Annotated[str | None, typer.Option(metavar="FLOAT", help="Adam learning rate")]
BeamSize = Annotated[str | None, typer.Option(metavar="N", help="beam size at evaluation (1 = greedy)")]
Device = Annotated[str | None, typer.Option(metavar="DEVICE", help="auto, cpu, cuda or cuda:N")]
ModelName = Annotated[
    str | None,
    typer.Option(
        metavar="NAME",
        help="registered model (and default experiment): default attnlab-<task>, or attnlab-<task>-<file name> for a task reading a file",
    ),
]
ConfigFile = Annotated[
    Path | None, typer.Option("--config", metavar="FILE.yaml", help="YAML file of config keys; command-line flags override it")
]
ConfigOptions = Annotated[
    list[str],
    typer.Option(
        "--option",
        "-o",
        metavar="KEY=VALUE",
        help="set a config key or a plugin option (VALUE read as YAML), e.g. -o validation_size=300 -o scorer.heads=8",
    ),
]

# --------------------------------------------------------------------------- where and how

Experiment = Annotated[str | None, typer.Option(metavar="NAME", help="MLflow experiment (default: the registered model's name)")]
JsonOutput = Annotated[bool, typer.Option("--json", help="print the summary as one JSON object")]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="show Prefect's and MLflow's logs")]

#: The config fields a command line sets, each by its flag (``--embedding-dim`` for ``embedding_dim``).
CONFIG_FLAGS: dict[str, Any] = {
    "task": Task,
    "scorer": Scorer,
    "encoder": Encoder,
    "decoder": Decoder,
    "epochs": Epochs,
    "seed": Seed,
    "embedding_dim": EmbeddingDim,
    "hidden_size": HiddenSize,
    "train_size": TrainSize,
    "batch_size": BatchSize,
    "learning_rate": LearningRate,
    "beam_size": BeamSize,
    "device": Device,
    "model_name": ModelName,
}


@dataclass(frozen=True)
class ConfigSource:
    """Where a command's config comes from: a YAML ``file``, the config ``flags`` given (field ->
    text; None when not given) and the ``-o KEY=VALUE`` ``options``, in increasing precedence."""

    file: Path | None = None
    flags: dict[str, Any] = field(default_factory=dict)
    options: list[str] = field(default_factory=list)


#: No file, no flags, no options: the config's defaults (a command's ``source`` until
#: :func:`config_command` hands it the one given).
DEFAULT_SOURCE = ConfigSource()


def config_command(*fields: str) -> Callable[[Command], Command]:
    """Give a command the flags of config ``fields`` (default: every one of :data:`CONFIG_FLAGS`),
    ``--config`` and ``-o``, shown where its ``source`` parameter stands; the command is called
    with their values as ``source`` (a :class:`ConfigSource`; a flag left out is None, as on the
    command line)."""
    chosen = fields or tuple(CONFIG_FLAGS)
    keyword = inspect.Parameter.KEYWORD_ONLY
    added = [inspect.Parameter(name, keyword, default=None, annotation=CONFIG_FLAGS[name]) for name in chosen]
    added += [
        inspect.Parameter("config_file", keyword, default=None, annotation=ConfigFile),
        inspect.Parameter("option", keyword, default=[], annotation=ConfigOptions),
    ]

    def wrap(command: Command) -> Command:
        own = list(inspect.signature(command, eval_str=True).parameters.values())
        at = next(index for index, parameter in enumerate(own) if parameter.name == "source")
        parameters = [p.replace(kind=keyword) for p in own[:at]] + added + [p.replace(kind=keyword) for p in own[at + 1 :]]

        @functools.wraps(command)
        def run(**given: Any) -> Any:
            flags = {name: given.pop(name, None) for name in chosen}
            return command(source=ConfigSource(given.pop("config_file", None), flags, given.pop("option", [])), **given)

        run.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        return run  # type: ignore[return-value]

    return wrap


# --------------------------------------------------------------------------- runners (sweep, tune)

MaxParallel = Annotated[
    int | None, typer.Option(metavar="N", help="runs at once (default: one per CPU core; all runs on an existing Dask cluster)")
]
Runner = Annotated[str, typer.Option(metavar="process|thread|dask", help="process pool, thread pool, or Dask (prefect-dask)")]
DaskAddress = Annotated[str | None, typer.Option(metavar="tcp://HOST:PORT", help="an existing Dask scheduler (default: a local cluster)")]

# --------------------------------------------------------------------------- tune

SpaceFile = Annotated[Path, typer.Option("--space", metavar="FILE.yaml", help="the search space (YAML; see docs: Tuning)")]
Trials = Annotated[int, typer.Option(metavar="N", help="trials the study holds in the end, counting those of earlier runs of it")]
Timeout = Annotated[
    str | None, typer.Option(metavar="DURATION", help="start no trial after this long (90, 30m, 2h); trials under way finish")
]
StudyName = Annotated[
    str | None,
    typer.Option("--study", metavar="NAME", help="the Optuna study (default: named by the arm and a digest of the config and space)"),
]
Storage = Annotated[
    str | None,
    typer.Option(metavar="URL", help="the study's RDB storage (default: sqlite optuna.db beside the embedded store's mlflow.db)"),
]
SaveBest = Annotated[Path | None, typer.Option(metavar="FILE.yaml", help="also write the best trial's config to this file")]

# --------------------------------------------------------------------------- compare

Paired = Annotated[
    bool, typer.Option("--paired", help="require the paired test: runs on different test splits, or without per-item outcomes, are refused")
]
Resamples = Annotated[int, typer.Option(metavar="N", help="bootstrap resamples of the paired test")]
