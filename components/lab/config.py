"""The typed, frozen, validated experiment configuration.

One object says everything a run needs: task, plugins and their options, sizes, data sizes,
optimisation, seed and device. It doubles as the Prefect flow's parameter model (so the Prefect
UI shows a form) and every field is logged to MLflow as a param.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

if TYPE_CHECKING:  # imported where used: a config is validated (and a mistake reported) without torch
    import torch

#: Upper bounds of the sizes: far above what the built-in tasks need, far below what exhausts a
#: machine (``--hidden-size 1000000`` asked for a 12 TB GRU weight). A value above one is refused
#: at validation, naming the field and the bound.
MAX_WIDTH = 2048  # embedding_dim, hidden_size: 16x the default hidden size
MAX_EXAMPLES = 1_000_000  # train_size, validation_size, test_size
MAX_BATCH = 100_000
MAX_EPOCHS = 10_000
MAX_BEAM = 100
MAX_STEPS = 10**9  # warmup_steps
MAX_PATH_POINTS = 1024  # explain_steps
#: Seeds are |seed| < 2**32: the per-epoch batch order seeds torch with seed * 100003 + epoch,
#: which must fit torch's 64-bit seed.
SEED_RANGE = 2**32
#: The largest learning rate: Adam's first step is 10x the learning rate, and above ~3e37 that
#: overflows float32 (a traceback, not a message). Large rates that still compute end as
#: divergence (attnlab.training.loop.TrainingDiverged).
MAX_LEARNING_RATE = 1e30

#: How ``checkpoint: best`` picks its epoch (the docs, the run's tag and the summary say it so).
BEST_RULE = "highest validation exact match, ties broken by lower validation loss"

#: A finite float > 0 (``inf``, ``1e999`` and ``nan`` are refused).
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]


#: Ints in 1..limit, one type per limit.
Width = Annotated[int, Field(gt=0, le=MAX_WIDTH)]
ExampleCount = Annotated[int, Field(gt=0, le=MAX_EXAMPLES)]
EpochCount = Annotated[int, Field(gt=0, le=MAX_EPOCHS)]
BatchSize = Annotated[int, Field(gt=0, le=MAX_BATCH)]
BeamSize = Annotated[int, Field(gt=0, le=MAX_BEAM)]


class ExperimentConfig(BaseModel):
    """A training run of one seq2seq model with attention."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task: str = Field("date", description="task plugin name (attnlab.tasks)")
    task_options: dict[str, Any] = Field(default_factory=dict)
    test_task_options: dict[str, Any] = Field(
        default_factory=dict,
        description="task options overriding task_options for the test split only (e.g. longer sources than training saw)",
    )
    model_name: str | None = Field(
        None,
        description="registered model (and default experiment) of the run: default attnlab-<task>, or "
        "attnlab-<task>-<file name> for a task that reads a file (option path)",
    )
    scorer: str = Field("scaled_dot", description="attention scorer plugin name (attnlab.scorers)")
    scorer_options: dict[str, Any] = Field(default_factory=dict)
    encoder: str = Field("gru", description="encoder plugin name (attnlab.encoders)")
    encoder_options: dict[str, Any] = Field(default_factory=dict)
    decoder: str = Field("rnn", description="decoder plugin name (attnlab.decoders)")
    decoder_options: dict[str, Any] = Field(default_factory=dict)

    embedding_dim: Width = 64
    hidden_size: Width = 128

    train_size: ExampleCount | None = Field(
        None, description="training examples (default: 3000; for a task that reads a file, the sources the other splits leave)"
    )
    validation_size: ExampleCount | None = Field(
        None, description="validation examples for early stopping (default: 500; for a file, 10% of its sources)"
    )
    test_size: ExampleCount | None = Field(None, description="held-out test examples (default: 1000; for a file, 10% of its sources)")

    epochs: EpochCount = 20
    batch_size: BatchSize = 64
    length_bucketing: ExampleCount = Field(
        1,
        description="sort rows by source length within pools of this many batches (1: plain "
        "shuffled batches); saves padded decoder steps when lengths vary, at some cost in "
        "convergence",
    )
    learning_rate: PositiveFloat = Field(5e-3, description=f"AdamW learning rate (at most {MAX_LEARNING_RATE:g})")
    lr_schedule: Literal["constant", "cosine", "inverse_sqrt"] = Field(
        "constant",
        description="after the warmup: 'constant'; 'cosine' decays the learning rate to 0 by the last step; "
        "'inverse_sqrt' divides it by the square root of the steps (the transformer's schedule)",
    )
    warmup_steps: int = Field(
        0, ge=0, le=MAX_STEPS, description="raise the learning rate linearly from 0 over this many optimisation steps first"
    )
    weight_decay: float = Field(
        0.0,
        ge=0.0,
        allow_inf_nan=False,
        description="AdamW's decoupled weight decay: each step multiplies every weight by 1 - lr x weight_decay",
    )
    label_smoothing: float = Field(0.0, description="share of the training loss's target mass spread evenly over the vocabulary, in [0, 1)")
    dropout: float | None = Field(
        None,
        description="dropout of the built-in encoders and decoders, in [0, 1): on the embeddings, between recurrent "
        "layers, before the output layer and inside transformer layers; unset: each plugin's own (0 recurrent, 0.1 "
        "transformer); encoder.dropout / decoder.dropout win over it",
    )
    compile_loops: bool = Field(
        False,
        description="run the GRU encoder's and rnn decoder's loops through torch.compile while "
        "training (needs a C++ compiler): every new batch shape first compiles for tens of "
        "seconds, then each step is faster; pays off on long runs with fixed-length examples",
    )
    clip_norm: PositiveFloat = Field(1.0, description="gradient clipping (max global norm)")
    teacher_forcing: float = Field(1.0, ge=0.0, le=1.0, allow_inf_nan=False, description="probability of feeding the gold previous token")
    target_exact_match: float | None = Field(
        0.999, gt=0.0, le=1.0, allow_inf_nan=False, description="stop early once validation exact match reaches this"
    )
    checkpoint: Literal["last", "best"] = Field(
        "last",
        description=f"which weights the run keeps, evaluates and registers: the last epoch's, or the best epoch's ({BEST_RULE})",
    )
    average_last: EpochCount = Field(1, description="keep the mean of the last N epochs' weights (checkpoint 'last' only; 1: no averaging)")
    beam_size: BeamSize = Field(1, description="1 = greedy decoding at evaluation")
    explain_examples: int = Field(
        30,
        ge=0,
        le=MAX_EXAMPLES,
        description="test examples on which attention and three gradient attributions (saliency, input x gradient, "
        "integrated gradients) are scored as explanations, and the explorer's first examples explained by each "
        "(at most 10); 0: neither",
    )
    explain_steps: int = Field(
        16, ge=2, le=MAX_PATH_POINTS, description="points on integrated gradients' path from the baseline (more: closer to complete)"
    )

    seed: int = Field(0, gt=-SEED_RANGE, lt=SEED_RANGE)
    device: str = Field("auto", description="'auto' (CUDA when present), 'cpu', 'cuda', 'cuda:N'")

    @field_validator("learning_rate")
    @classmethod
    def _bounded_rate(cls, value: float) -> float:
        if value > MAX_LEARNING_RATE:  # pydantic's le= would print 1e30 with all 31 digits
            raise ValueError(f"must be at most {MAX_LEARNING_RATE:g} (Adam's float32 arithmetic overflows above ~3e37)")
        return value

    @field_validator("model_name")
    @classmethod
    def _safe_model_name(cls, value: str | None) -> str | None:
        from attnlab.lab.errors import UserError
        from attnlab.lab.names import check_name

        try:
            return None if value is None else check_name(value, "model_name")
        except UserError as exc:
            raise ValueError(str(exc).removeprefix("model_name").lstrip(": ")) from None

    def registered_model(self) -> str:
        """The registered model (and default experiment) of runs of this config: ``model_name``,
        else ``attnlab-<task>`` (``attnlab-<task>-<file name>`` for a task reading a file)."""
        from attnlab.lab.names import registered_name

        return registered_name(self.task, self.task_options, self.model_name)

    @field_validator("label_smoothing", "dropout")
    @classmethod
    def _probability(cls, value: float | None) -> float | None:
        if value is not None and not 0.0 <= value < 1.0:  # also refuses nan
            raise ValueError("must be a number in [0, 1) (0: none)")
        return value

    @field_validator("weight_decay")
    @classmethod
    def _bounded_decay(cls, value: float, info: ValidationInfo) -> float:
        rate = info.data.get("learning_rate")
        if rate is not None and rate * value >= 1.0:
            raise ValueError(
                f"learning_rate x weight_decay must stay below 1 (AdamW multiplies every weight by 1 - {rate:g} x weight_decay "
                f"each step); use a weight_decay below {1 / rate:g}"
            )
        return value

    @field_validator("average_last")
    @classmethod
    def _averaged_epochs(cls, value: int, info: ValidationInfo) -> int:
        if value > 1 and info.data.get("checkpoint") == "best":
            raise ValueError("averages the last epochs and goes with checkpoint 'last' only; set checkpoint=last or average_last=1")
        epochs = info.data.get("epochs")
        if epochs is not None and value > epochs:
            raise ValueError(f"must be at most epochs ({epochs}): the run has no more epochs to average")
        return value

    @field_validator("device")
    @classmethod
    def _known_device(cls, value: str) -> str:
        if value == "auto":
            return value
        import torch

        try:
            device = torch.device(value)
        except RuntimeError as exc:
            raise ValueError(f"unknown device {value!r}; use 'auto', 'cpu' or 'cuda[:N]'") from exc
        if device.type not in ("cpu", "cuda"):
            raise ValueError(f"unsupported device {value!r}; use 'auto', 'cpu' or 'cuda[:N]'")
        return value

    def torch_device(self) -> torch.device:
        """The device to train on: 'auto' picks CUDA when it is available, else the CPU."""
        import torch

        if self.device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        return torch.device(self.device)


def device_problem(device: str, cuda_devices: int) -> str | None:
    """Why ``device`` (a validated config device) cannot be used on a machine with ``cuda_devices``
    CUDA devices, or None. Checked before a run starts (a saved config may name a device the
    machine that loads it lacks, so validation itself does not check)."""
    import torch

    if device in ("auto", "cpu") or torch.device(device).type != "cuda":
        return None
    index = torch.device(device).index or 0
    if cuda_devices == 0:
        return f"device {device!r} is not available: no CUDA device here; use 'auto' or 'cpu'"
    if index >= cuda_devices:
        return f"device {device!r} is not available: {cuda_devices} CUDA device(s) here (cuda:0..cuda:{cuda_devices - 1}); use one of them, 'auto' or 'cpu'"
    return None
