"""Flags of the ``attnlab`` commands, declared once as ``Annotated`` types: every flag that
several commands share (``--json``: :data:`JsonOutput`, ``--verbose``: :data:`Verbose`, the config
flags, the runners), and under one heading each the own flags of ``sweep``, ``tune``, ``compare``
and ``predict``. The other commands declare their few own flags in their signatures, the same way
(``name: Annotated[type, typer.Option(...)] = default``).

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
JsonOutput = Annotated[bool, typer.Option("--json", help="print the result as one JSON object instead of text")]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="show MLflow's and Prefect's logs")]

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

# --------------------------------------------------------------------------- sweep

Seeds = Annotated[str, typer.Option(metavar="N,N,...", help="seeds; each combination trains once per seed")]
LengthBands = Annotated[
    str | None,
    typer.Option(metavar="LOW-HIGH,...", help="also tabulate exact match on these source-length ranges, e.g. 5-20,21-40,41-50"),
]
SavePlots = Annotated[Path | None, typer.Option(metavar="DIR", help="also copy the sweep's figures into this folder (created if missing)")]
Register = Annotated[bool, typer.Option("--register", help="register every finished run (as --model-name) and promote by the one rule")]
LogModels = Annotated[
    bool,
    typer.Option("--log-models", help="log every run's model to MLflow (off by default: a sweep compares; --register logs them anyway)"),
]
ExamplePlots = Annotated[
    bool,
    typer.Option(
        "--example-plots",
        help="draw each run's heatmaps of 4 test examples too (off by default: each run draws the shared probe's; its explorer.html shows every test example)",
    ),
]
ResumeSweep = Annotated[
    bool,
    typer.Option(
        "--resume", help="reuse the runs an earlier sweep in the experiment finished with the same config and data; train only the rest"
    ),
]

# --------------------------------------------------------------------------- predict

Sources = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="[TEXT]...",
        help="source strings, e.g. 25-12-2023; a lone '-' reads them from stdin as --file - does",
        show_default=False,
    ),
]
ModelUri = Annotated[
    str | None,
    typer.Option(metavar="URI", help="MLflow model URI (models:/NAME@ALIAS, models:/NAME/VERSION, runs:/ID/model) or a bundle folder"),
]
ChampionTask = Annotated[str, typer.Option(metavar="NAME", help="task whose champion to use when --model is not given")]
ChampionName = Annotated[
    str | None,
    typer.Option(
        "--model-name",
        metavar="NAME",
        help="registered model whose champion to use when --model is not given (default: attnlab-<task>), e.g. attnlab-pairs-lexicon",
    ),
]
HeatmapFile = Annotated[
    Path | None,
    typer.Option(
        metavar="FILE.png", help="save the attention heatmap here (PNG; FILE-N.png for several inputs; missing folders are created)"
    ),
]
ExplorerFile = Annotated[
    Path | None,
    typer.Option(
        metavar="FILE.html",
        help="write the interactive attention explorer for the inputs here (one self-contained page; missing folders are created)",
    ),
]
SourcesFile = Annotated[
    str | None,
    typer.Option(
        "--file",
        metavar="PATH",
        help="read the sources from PATH, one a line ('-': stdin); blank lines are skipped; decoded 256 lines at a time, each batch printed as it is done",
    ),
]
SkipBad = Annotated[
    bool,
    typer.Option(
        "--skip-bad",
        help="with --file: skip refused lines (each named on stderr with its line number, then a count) instead of refusing the whole input",
    ),
]
Beams = Annotated[
    str | None, typer.Option("--beam-size", metavar="N", help="decode by beam search with N beams (1..100; default 1 = greedy)")
]
