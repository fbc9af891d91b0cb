"""The flags that several ``attnlab`` commands share, declared once as ``Annotated`` types.

``attnlab train``, ``attnlab sweep`` and ``attnlab schedule`` build one experiment config from
the same flags (numbers arrive as text and are validated with the config, so a bad one is
reported with its value and what is allowed); a command declares a parameter with one of these
types and its default, e.g. ``epochs: Epochs = None``. :data:`attnlab.flows.cli.support.CLI_FIELDS`
maps the config fields among them to their flags.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

# --------------------------------------------------------------------------- one plugin each

Task = Annotated[Optional[str], typer.Option(metavar="NAME", help="task plugin (default: date); see 'attnlab plugins'")]
Scorer = Annotated[Optional[str], typer.Option(metavar="NAME", help="attention scorer plugin (default: scaled_dot)")]
Encoder = Annotated[Optional[str], typer.Option(metavar="NAME", help="encoder plugin (default: gru)")]
Decoder = Annotated[Optional[str], typer.Option(metavar="NAME", help="decoder plugin (default: rnn)")]

# --------------------------------------------------------------------------- a sweep's grid

Tasks = Annotated[Optional[str], typer.Option("--task", metavar="NAMES", help="task plugin(s), comma-separated (default: date)")]
Scorers = Annotated[Optional[str], typer.Option("--scorer", metavar="NAMES", help="scorers, e.g. none,dot,additive,multihead")]
Encoders = Annotated[Optional[str], typer.Option("--encoder", metavar="NAMES", help="encoders, e.g. gru,transformer")]
Decoders = Annotated[Optional[str], typer.Option("--decoder", metavar="NAMES", help="decoders, e.g. rnn,transformer")]

# --------------------------------------------------------------------------- config values

Epochs = Annotated[Optional[str], typer.Option(metavar="N", help="most epochs per run (training stops early at the target exact match)")]
Seed = Annotated[Optional[str], typer.Option(metavar="N", help="seed of data, initialisation and batch order")]
EmbeddingDim = Annotated[Optional[str], typer.Option(metavar="N", help="embedding size")]
HiddenSize = Annotated[Optional[str], typer.Option(metavar="N", help="hidden size")]
TrainSize = Annotated[Optional[str], typer.Option(metavar="N", help="training examples")]
BatchSize = Annotated[Optional[str], typer.Option(metavar="N", help="batch size")]
LearningRate = Annotated[Optional[str], typer.Option(metavar="FLOAT", help="Adam learning rate")]
BeamSize = Annotated[Optional[str], typer.Option(metavar="N", help="beam size at evaluation (1 = greedy)")]
Device = Annotated[Optional[str], typer.Option(metavar="DEVICE", help="auto, cpu, cuda or cuda:N")]
ConfigFile = Annotated[
    Optional[Path], typer.Option("--config", metavar="FILE.yaml", help="YAML file of config keys; command-line flags override it")
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

Experiment = Annotated[Optional[str], typer.Option(metavar="NAME", help="MLflow experiment (default: attnlab-<task>)")]
JsonOutput = Annotated[bool, typer.Option("--json", help="print the summary as one JSON object")]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="show Prefect's and MLflow's logs")]
