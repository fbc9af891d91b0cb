"""The typed, frozen, validated experiment configuration.

One object says everything a run needs: task, plugins and their options, sizes, data sizes,
optimisation, seed and device. It doubles as the Prefect flow's parameter model (so the Prefect
UI shows a form) and every field is logged to MLflow as a param.
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, field_validator


class ExperimentConfig(BaseModel):
    """A training run of one seq2seq model with attention."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task: str = Field("date", description="task plugin name (attnlab.tasks)")
    task_options: dict[str, Any] = Field(default_factory=dict)
    test_task_options: dict[str, Any] = Field(
        default_factory=dict,
        description="task options overriding task_options for the test split only "
        "(e.g. longer sources than training saw)",
    )
    scorer: str = Field("scaled_dot", description="attention scorer plugin name (attnlab.scorers)")
    scorer_options: dict[str, Any] = Field(default_factory=dict)
    encoder: str = Field("gru", description="encoder plugin name (attnlab.encoders)")
    encoder_options: dict[str, Any] = Field(default_factory=dict)
    decoder: str = Field("rnn", description="decoder plugin name (attnlab.decoders)")
    decoder_options: dict[str, Any] = Field(default_factory=dict)

    embedding_dim: PositiveInt = 64
    hidden_size: PositiveInt = 128

    train_size: PositiveInt = Field(3000, description="training examples")
    validation_size: PositiveInt = Field(500, description="validation examples (early stopping)")
    test_size: PositiveInt = Field(1000, description="held-out test examples")

    epochs: PositiveInt = 20
    batch_size: PositiveInt = 64
    length_bucketing: PositiveInt = Field(
        1,
        description="sort rows by source length within pools of this many batches (1: plain "
        "shuffled batches); saves padded decoder steps when lengths vary, at some cost in "
        "convergence",
    )
    learning_rate: PositiveFloat = 5e-3
    lr_schedule: Literal["constant", "cosine"] = Field(
        "constant", description="'cosine' decays the learning rate to 0 over the epochs, step by step"
    )
    compile_loops: bool = Field(
        False,
        description="run the GRU encoder's and rnn decoder's loops through torch.compile while "
        "training (needs a C++ compiler): every new batch shape first compiles for tens of "
        "seconds, then each step is faster; pays off on long runs with fixed-length examples",
    )
    clip_norm: PositiveFloat = Field(1.0, description="gradient clipping (max global norm)")
    teacher_forcing: float = Field(
        1.0, ge=0.0, le=1.0, description="probability of feeding the gold previous token"
    )
    target_exact_match: float | None = Field(
        0.999, gt=0.0, le=1.0, description="stop early once validation exact match reaches this"
    )
    beam_size: PositiveInt = Field(1, description="1 = greedy decoding at evaluation")

    seed: int = 0
    device: str = Field("auto", description="'auto' (CUDA when present), 'cpu', 'cuda', 'cuda:N'")

    @field_validator("device")
    @classmethod
    def _known_device(cls, value: str) -> str:
        if value == "auto":
            return value
        try:
            device = torch.device(value)
        except RuntimeError as exc:
            raise ValueError(f"unknown device {value!r}; use 'auto', 'cpu' or 'cuda[:N]'") from exc
        if device.type not in ("cpu", "cuda"):
            raise ValueError(f"unsupported device {value!r}; use 'auto', 'cpu' or 'cuda[:N]'")
        return value

    def torch_device(self) -> torch.device:
        """The device to train on: 'auto' picks CUDA when it is available, else the CPU."""
        if self.device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        return torch.device(self.device)
